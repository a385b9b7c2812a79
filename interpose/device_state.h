/* What the library knows about each device: its caching allocator (created
 * on first use and bound to the context that was current then), the live
 * streams created in it, a pool of recycled fence events, the devices that
 * were granted peer access to its memory, and whether its current
 * stream-ordered pool is still the default one. */
#ifndef GPUCACHE_INTERPOSE_DEVICE_STATE_H
#define GPUCACHE_INTERPOSE_DEVICE_STATE_H

#include <stdbool.h>
#include <stddef.h>

#include "cuda_headers.h"
#include "gpucache_allocator.h"
#include "real_driver.h"

#define GPUCACHE_MAX_DEVICES 64

/* The current context and its device. False when no context is current. */
bool device_of_current_context(const struct real_driver *driver, CUcontext *context,
                               int *device);

/* The device of a stream created in any context the library serves; -1
 * when it cannot be told. */
int device_of_stream(const struct real_driver *driver, CUstream stream);

/* The allocator of `device` if it serves `context`, creating it when the
 * device has none yet. NULL when the device is served in another context
 * (the caller then passes the call through). */
struct gpucache_allocator *device_allocator_for(int device, CUcontext context);

/* The device's allocator if it has one, whatever its context. */
struct gpucache_allocator *device_allocator(int device);

/* The context the device's allocator serves, or NULL. */
CUcontext device_context(int device);

/* Frees `address` in whichever allocator handed it out. Returns the
 * allocator's result, or GPUCACHE_ALLOCATOR_NOT_OURS. */
gpucache_result device_free_anywhere(uint64_t address, enum gpucache_free_kind kind,
                                     gpucache_stream stream);

/* The allocator that owns `address`, or NULL. */
struct gpucache_allocator *device_allocator_owning(uint64_t address, int *device);

/* The context of `device` (or the context `context`) is gone: the cache of
 * that device is forgotten without a driver call. */
void device_forget(int device);
void device_forget_context(CUcontext context);

/* The statistics the device's allocator had when its context was last
 * forgotten; false if it never was. */
bool device_retired_stats(int device, struct gpucache_stats *stats);

/* Live-stream registry. */
void device_stream_created(int device, CUstream stream, bool non_blocking);
/* Removes the stream; returns its device, or -1 if it was not registered
 * (then `non_blocking`, when not NULL, is left as it was). Waits for every
 * holder of the registry (device_streams_hold) to be done. */
int device_stream_destroyed(CUstream stream, bool *non_blocking);
/* A malloc'ed copy of the live non-blocking streams of `device`. A caller
 * that uses the handles outside the allocator's lock holds the registry
 * meanwhile, so that no stream in the copy is destroyed under it. */
CUstream *device_non_blocking_streams(int device, size_t *count);
void device_streams_hold(void);
void device_streams_release(void);
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

/* The device count the registry has room for. */
int device_count_limit(void);

/* Allocates from `allocator` (which serves `context`, current on this
 * thread). Driver calls the allocator makes meanwhile know the current
 * context from device_thread_context() without asking the driver. */
gpucache_result device_allocate(struct gpucache_allocator *allocator, CUcontext context,
                                size_t size, gpucache_stream stream, uint64_t *address);

/* The current context while this thread is inside device_allocate, or NULL. */
CUcontext device_thread_context(void);

#endif
