/* A gate a stream can be held at: a host function that blocks the stream's
 * worker until the test opens it, so a test can observe what runs (or must
 * not run) while a stream is busy. */
#ifndef STREAM_GATE_H
#define STREAM_GATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include <cuda_runtime_api.h>

struct stream_gate {
    pthread_mutex_t lock;
    pthread_cond_t opened;
    int is_open;
};

#define STREAM_GATE_INITIALIZER { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0 }

/* Host function: blocks until stream_gate_open. */
static inline void CUDART_CB stream_gate_wait(void *gate_pointer)
{
    struct stream_gate *gate = gate_pointer;
    pthread_mutex_lock(&gate->lock);
    while (!gate->is_open)
        pthread_cond_wait(&gate->opened, &gate->lock);
    pthread_mutex_unlock(&gate->lock);
}

static inline void stream_gate_open(struct stream_gate *gate)
{
    pthread_mutex_lock(&gate->lock);
    gate->is_open = 1;
    pthread_cond_broadcast(&gate->opened);
    pthread_mutex_unlock(&gate->lock);
}

/* Host function: sets an atomic flag to 1. */
static inline void CUDART_CB raise_flag(void *flag)
{
    atomic_store((atomic_int *)flag, 1);
}

static inline void sleep_milliseconds(long milliseconds)
{
    struct timespec pause = { milliseconds / 1000, (milliseconds % 1000) * 1000000L };
    nanosleep(&pause, NULL);
}

#endif
