/* The compact trace format's short action names (report/README.md), shared
 * by its writer and its reader. */
#ifndef GPUCACHE_TRACE_FORMAT_H
#define GPUCACHE_TRACE_FORMAT_H

#include "gpucache_events.h"

extern const char *const trace_compact_names[GPUCACHE_EVENT_ACTION_COUNT];

#endif
