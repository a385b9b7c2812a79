/* Shared state of the simulated CUDA runtime: error bookkeeping, lazy
 * initialisation, and the implementations that the legacy entry points and
 * their per-thread-default-stream twins (_ptsz/_ptds) both call.
 *
 * This header deliberately does not include cuda.h:
 * runtime_default_stream_entry_points.c compiles once with
 * CUDA_API_PER_THREAD_DEFAULT_STREAM, which renames driver symbols too, and
 * must not see the driver entry-point table. */
#ifndef SIM_RUNTIME_INTERNAL_H
#define SIM_RUNTIME_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include <cuda_runtime_api.h>

/* Which default stream a stream handle of 0 means: the legacy entry points
 * use the driver's legacy table, the _ptsz/_ptds ones the per-thread table. */
enum sim_runtime_default_stream {
    SIM_RUNTIME_LEGACY_STREAM,
    SIM_RUNTIME_PER_THREAD_STREAM,
};

/* Records a failed call as the calling thread's last error (cudaErrorNotReady
 * is a status, not an error, and is not recorded) and returns it. */
cudaError_t sim_runtime_record(cudaError_t error);

/* Loads the driver and runs cuInit once per process; returns the cached
 * outcome without recording it. Creates no context. */
cudaError_t sim_runtime_load_driver(void);

/* Loads the driver and makes the primary context of the thread's current
 * device current on this thread, retaining it on first use. */
cudaError_t sim_runtime_bind_context(void);

/* The device the calling thread works on (0 until cudaSetDevice). */
int sim_runtime_thread_device(void);

/* Implementations shared by the legacy and per-thread entry points. */
cudaError_t sim_runtime_malloc_async(void **pointer, size_t size, cudaStream_t stream,
                                     enum sim_runtime_default_stream default_stream);
cudaError_t sim_runtime_malloc_from_pool_async(void **pointer, size_t size, cudaMemPool_t pool,
                                               cudaStream_t stream,
                                               enum sim_runtime_default_stream default_stream);
cudaError_t sim_runtime_free_async(void *pointer, cudaStream_t stream,
                                   enum sim_runtime_default_stream default_stream);

cudaError_t sim_runtime_memcpy(void *destination, const void *source, size_t count,
                               enum cudaMemcpyKind kind, enum sim_runtime_default_stream default_stream);
cudaError_t sim_runtime_memcpy_async(void *destination, const void *source, size_t count,
                                     enum cudaMemcpyKind kind, cudaStream_t stream,
                                     enum sim_runtime_default_stream default_stream);
cudaError_t sim_runtime_memcpy_2d(void *destination, size_t destination_pitch, const void *source,
                                  size_t source_pitch, size_t width, size_t height,
                                  enum cudaMemcpyKind kind, enum sim_runtime_default_stream default_stream);
cudaError_t sim_runtime_memcpy_2d_async(void *destination, size_t destination_pitch,
                                        const void *source, size_t source_pitch, size_t width,
                                        size_t height, enum cudaMemcpyKind kind, cudaStream_t stream,
                                        enum sim_runtime_default_stream default_stream);
cudaError_t sim_runtime_memset(void *destination, int value, size_t count,
                               enum sim_runtime_default_stream default_stream);
cudaError_t sim_runtime_memset_async(void *destination, int value, size_t count, cudaStream_t stream,
                                     enum sim_runtime_default_stream default_stream);

cudaError_t sim_runtime_stream_synchronize(cudaStream_t stream, enum sim_runtime_default_stream default_stream);
cudaError_t sim_runtime_stream_query(cudaStream_t stream, enum sim_runtime_default_stream default_stream);
cudaError_t sim_runtime_stream_wait_event(cudaStream_t stream, cudaEvent_t event, unsigned int flags,
                                          enum sim_runtime_default_stream default_stream);
cudaError_t sim_runtime_stream_get_flags(cudaStream_t stream, unsigned int *flags,
                                         enum sim_runtime_default_stream default_stream);
cudaError_t sim_runtime_stream_get_priority(cudaStream_t stream, int *priority,
                                            enum sim_runtime_default_stream default_stream);
cudaError_t sim_runtime_stream_get_id(cudaStream_t stream, unsigned long long *stream_id,
                                      enum sim_runtime_default_stream default_stream);
cudaError_t sim_runtime_stream_get_device(cudaStream_t stream, int *device,
                                          enum sim_runtime_default_stream default_stream);
cudaError_t sim_runtime_stream_begin_capture(cudaStream_t stream, enum cudaStreamCaptureMode mode,
                                             enum sim_runtime_default_stream default_stream);
cudaError_t sim_runtime_stream_end_capture(cudaStream_t stream, cudaGraph_t *graph,
                                           enum sim_runtime_default_stream default_stream);
cudaError_t sim_runtime_stream_is_capturing(cudaStream_t stream, enum cudaStreamCaptureStatus *status,
                                            enum sim_runtime_default_stream default_stream);
/* The graph calls whose stream argument may be the default stream
 * (runtime_graph.c). */
cudaError_t sim_runtime_graph_instantiate_with_params(cudaGraphExec_t *exec, cudaGraph_t graph,
                                                      cudaGraphInstantiateParams *params,
                                                      enum sim_runtime_default_stream default_stream);
cudaError_t sim_runtime_graph_upload(cudaGraphExec_t exec, cudaStream_t stream,
                                     enum sim_runtime_default_stream default_stream);
cudaError_t sim_runtime_graph_launch(cudaGraphExec_t exec, cudaStream_t stream,
                                     enum sim_runtime_default_stream default_stream);
cudaError_t sim_runtime_stream_add_callback(cudaStream_t stream, cudaStreamCallback_t callback,
                                            void *user_data, unsigned int flags,
                                            enum sim_runtime_default_stream default_stream);
cudaError_t sim_runtime_launch_host_func(cudaStream_t stream, cudaHostFn_t function, void *user_data,
                                         enum sim_runtime_default_stream default_stream);

cudaError_t sim_runtime_event_record(cudaEvent_t event, cudaStream_t stream, unsigned int flags,
                                     enum sim_runtime_default_stream default_stream);

/* Launches a registered kernel, named by its host stub or (by_handle) by
 * the handle __cudaGetKernel returned. */
cudaError_t sim_runtime_launch(const void *stub_or_handle, bool by_handle, dim3 grid, dim3 block, void **args,
                               size_t shared_memory, cudaStream_t stream, bool cooperative,
                               enum sim_runtime_default_stream default_stream);

/* Copies between host or device memory and a registered device variable
 * (to_symbol: into it), synchronously or on `stream`. */
cudaError_t sim_runtime_memcpy_symbol(const void *symbol, void *buffer, size_t count, size_t offset,
                                      enum cudaMemcpyKind kind, bool to_symbol, bool asynchronous,
                                      cudaStream_t stream, enum sim_runtime_default_stream default_stream);

cudaError_t sim_runtime_get_driver_entry_point(const char *symbol, void **function, int cuda_version,
                                               unsigned long long flags,
                                               enum cudaDriverEntryPointQueryResult *driver_status,
                                               enum sim_runtime_default_stream default_stream);

#endif
