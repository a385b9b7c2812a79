/* What the library knows about each device apart from its allocator: the
 * context the device is served in, the live streams created in it, a pool
 * of recycled fence events, the devices that were granted peer access to
 * its memory, whether its current stream-ordered pool is still the default
 * one, and the context current on a thread inside an allocation. The lowest
 * bookkeeping of the interposer: it calls only the real driver. */
#ifndef GPUCACHE_INTERPOSE_DEVICE_REGISTRY_H
#define GPUCACHE_INTERPOSE_DEVICE_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>

#include "cuda_headers.h"
#include "real_driver.h"

#define GPUCACHE_MAX_DEVICES 64

/* The device count the registry has room for. */
int device_count_limit(void);

/* The current context and its device. False when no context is current.
 * The answer is kept per thread and the driver asked again only after a
 * change the library sees (below). */
bool device_of_current_context(const struct real_driver *driver, CUcontext *context,
                               int *device);
/* The current context, or NULL; kept as device_of_current_context keeps it. */
CUcontext device_current_context(const struct real_driver *driver);

/* The device of a stream created in any context the library serves; -1
 * when it cannot be told. Kept per thread until a stream is created or
 * destroyed or a context changes. */
int device_of_stream(const struct real_driver *driver, CUstream stream);

/* A stamp of everything that decides where this thread's allocation goes
 * (current context, devices bound, streams, pools): a route found under a
 * stamp stays right while the stamp is current. `shared` is never 0. */
struct device_route_stamp {
    unsigned shared;
    unsigned thread;
};
extern unsigned device_route_generation; /* atomic */
extern __thread unsigned device_thread_route_generation
    __attribute__((tls_model("initial-exec")));

/* The stamp now. */
static inline struct device_route_stamp device_route_stamp_now(void)
{
    return (struct device_route_stamp){
        __atomic_load_n(&device_route_generation, __ATOMIC_ACQUIRE),
        device_thread_route_generation};
}

static inline bool device_route_stamp_equal(struct device_route_stamp a,
                                            struct device_route_stamp b)
{
    return a.shared == b.shared && a.thread == b.thread;
}

/* The calling thread changed its current context (set, push, pop, create):
 * its kept answer is dropped. */
void device_current_context_changed(void);
/* A context died or a device was bound or forgotten: every thread's kept
 * answers, about contexts and streams, are dropped. */
void device_contexts_changed(void);
/* A stream was created or destroyed: every thread's stream answers are
 * dropped (a handle value may come back naming another stream). */
void device_streams_changed(void);

/* The context the device is served in, or NULL. */
CUcontext device_context(int device);

/* Binds the device to `context` (device_allocators.c does, once its
 * allocator exists, before publishing the allocator). */
void device_set_context(int device, CUcontext context);

/* The device's context is gone: its context, events, streams, peers and
 * pool check are forgotten without a driver call (the driver freed them with
 * the context). Returns the context the device was served in, or NULL. */
CUcontext device_registry_forget(int device);

/* The context current on this thread while it allocates (set by
 * device_allocate), so that driver calls made meanwhile need not ask the
 * driver; NULL outside an allocation. */
extern __thread CUcontext device_allocating_thread_context
    __attribute__((tls_model("initial-exec")));
static inline void device_set_thread_context(CUcontext context)
{
    device_allocating_thread_context = context;
}
static inline CUcontext device_thread_context(void)
{
    return device_allocating_thread_context;
}

/* Records a stream the program created on `device`. */
void device_stream_created(int device, CUstream stream, bool non_blocking);
/* The device of a registered stream, or -1 (then `non_blocking` is left as
 * it was); the stream stays registered. */
int device_stream_find(CUstream stream, bool *non_blocking);
/* Removes the stream; returns its device, or -1 if it was not registered
 * (then `non_blocking`, when not NULL, is left as it was). Waits for every
 * holder of the registry (device_streams_hold) to be done. */
int device_stream_destroyed(CUstream stream, bool *non_blocking);
/* A malloc'ed copy of the live non-blocking streams of `device`. A caller
 * that uses the handles outside the allocator's lock holds the registry
 * meanwhile, so that no stream in the copy is destroyed under it. */
CUstream *device_non_blocking_streams(int device, size_t *count);
/* Holds (and releases) the stream registry against destroys, shared. */
void device_streams_hold(void);
void device_streams_release(void);
/* True while `device` has a live non-blocking stream. */
bool device_has_non_blocking_streams(int device);

/* Recycled events (CU_EVENT_DISABLE_TIMING) of the device's context. The
 * generation changes whenever the device's context is forgotten, so events
 * of a dead context are never reused or destroyed. */
CUevent device_take_event(const struct real_driver *driver, int device, unsigned *generation);
void device_return_event(const struct real_driver *driver, int device, CUevent event,
                         unsigned generation);

/* Peer access: `accessor` may now read and write `owner`'s memory. */
void device_grant_peer(int owner, int accessor);
/* The devices granted access to `owner`'s memory; returns their count. */
size_t device_peers(int owner, int *peers, size_t capacity);

/* True while the device's current stream-ordered pool is its default pool. */
bool device_uses_default_pool(const struct real_driver *driver, int device);
/* A program changed some device's current pool. */
void device_pools_changed(void);

#endif
