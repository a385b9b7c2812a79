/* `gpucache replay --svg`: each configuration's timeline (the largest
 * allocated and reserved bytes of each slice of the events) as a memory
 * series, drawn by the report library's chart writer. */
#include "replay_svg.h"

#include <stdlib.h>

#include "gpucache_report.h"

/* One sample per slice reached, at the slice's first event, plus one at the
 * end of the last slice so the final step has its width. */
static struct gpucache_memory_sample *timeline_samples(const struct replay_timeline *timeline,
                                                       double events, size_t *count)
{
    size_t reached = timeline->buckets_reached;
    struct gpucache_memory_sample *samples = malloc((reached + 1) * sizeof *samples);
    *count = 0;
    if (!samples)
        return NULL;
    double slice = events / (double)(timeline->bucket_count ? timeline->bucket_count : 1);
    for (size_t bucket = 0; bucket < reached; bucket++)
        samples[(*count)++] = (struct gpucache_memory_sample){
            (double)bucket * slice, timeline->allocated[bucket], timeline->reserved[bucket]};
    if (reached)
        samples[(*count)++] = (struct gpucache_memory_sample){
            (double)reached * slice, timeline->allocated[reached - 1],
            timeline->reserved[reached - 1]};
    return samples;
}

bool replay_write_svg(FILE *out, const struct replay_report *report)
{
    double events = report->trace->event_count > 0 ? (double)report->trace->event_count : 1;
    struct gpucache_memory_series *series = calloc(report->column_count + 1, sizeof *series);
    char (*notes)[64] = calloc(report->column_count + 1, sizeof *notes);
    bool ok = series && notes;
    for (size_t index = 0; ok && index < report->column_count; index++) {
        const struct replay_column *column = &report->columns[index];
        series[index].label = column->label;
        series[index].samples = timeline_samples(&column->timeline, events, &series[index].count);
        ok = series[index].samples != NULL;
        if (!column->outcome.completed) {
            snprintf(notes[index], sizeof notes[index], "stopped at event %zu",
                     column->outcome.failed_event);
            series[index].stop_note = notes[index];
            series[index].stop_time = (double)column->outcome.failed_event;
        }
    }
    char title[4200];
    snprintf(title, sizeof title, "gpucache replay: %s", report->trace_path);
    ok = ok && fflush(out) == 0 &&
         gpucache_svg_write(fileno(out), title, "events", series, report->column_count);
    for (size_t index = 0; series && index < report->column_count; index++)
        free((void *)series[index].samples);
    free(series);
    free(notes);
    return ok;
}
