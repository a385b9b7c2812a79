/* `gpucache replay --svg`: the reserved and allocated curves of every
 * configuration over the trace, drawn as one SVG image. */
#ifndef GPUCACHE_REPLAY_SVG_H
#define GPUCACHE_REPLAY_SVG_H

#include <stdbool.h>
#include <stdio.h>

#include "replay_report.h"

/* Writes the image: a colour per configuration, reserved bytes solid,
 * allocated bytes dashed, each slice of events drawn at its largest value
 * so no peak is lost; a cross marks where a configuration ran out of
 * memory. Every column must carry a timeline. False when host memory ran
 * out or a write failed. */
bool replay_write_svg(FILE *out, const struct replay_report *report);

#endif
