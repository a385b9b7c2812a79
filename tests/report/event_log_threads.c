/* Several threads append to one log at once: nothing is lost or torn, and
 * each thread's events keep their order (runs under TSan in the 'threads'
 * suite). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpucache_event_log.h"

#define THREADS 8
#define EVENTS_PER_THREAD 20000

static struct gpucache_event_log *log_under_test;

static void *append_many(void *argument)
{
    uint64_t thread = (uint64_t)(uintptr_t)argument;
    for (uint64_t number = 0; number < EVENTS_PER_THREAD; number++) {
        struct gpucache_event event = {.address = number, .size = thread, .stream = ~number,
                                       .device = 0, .action = GPUCACHE_EVENT_ALLOC};
        gpucache_event_log_append(log_under_test, &event);
    }
    return NULL;
}

int main(void)
{
    log_under_test = gpucache_event_log_create(0);
    pthread_t threads[THREADS];
    for (uintptr_t index = 0; index < THREADS; index++)
        pthread_create(&threads[index], NULL, append_many, (void *)index);
    for (int index = 0; index < THREADS; index++)
        pthread_join(threads[index], NULL);
    size_t count;
    struct gpucache_event *events = gpucache_event_log_copy(log_under_test, -1, &count);
    uint64_t next[THREADS] = {0};
    int failures = 0;
    for (size_t index = 0; index < count; index++) {
        const struct gpucache_event *event = &events[index];
        if (event->size >= THREADS || event->address != next[event->size] ||
            event->stream != ~event->address) {
            fprintf(stderr, "event %zu is torn or out of order\n", index);
            failures++;
            break;
        }
        next[event->size]++;
    }
    if (count != THREADS * EVENTS_PER_THREAD) {
        fprintf(stderr, "%zu events kept, expected %d\n", count, THREADS * EVENTS_PER_THREAD);
        failures++;
    }
    free(events);
    gpucache_event_log_destroy(log_under_test);
    return failures ? 1 : 0;
}
