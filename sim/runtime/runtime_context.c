/* The thread's current device and its primary context. Like NVIDIA's runtime,
 * this one only uses primary contexts: the first call that needs a context
 * retains the device's primary context and makes it current on the calling
 * thread; every new thread starts on device 0. */
#include <pthread.h>
#include <stdbool.h>

#include "runtime_driver.h"

/* Devices beyond this many are reported by cudaGetDeviceCount but cannot be
 * selected; the simulated device count is far smaller. */
#define MAX_DEVICES 64

struct primary_context {
    CUcontext context;
    bool retained;
    /* Bumped by cudaDeviceReset so every thread re-binds on its next call. */
    unsigned generation;
};

static pthread_mutex_t primary_contexts_lock = PTHREAD_MUTEX_INITIALIZER;
static struct primary_context primary_contexts[MAX_DEVICES];

struct thread_binding {
    int device;
    bool bound;
    CUcontext context;
    unsigned generation;
};

static _Thread_local struct thread_binding thread_binding;

int sim_runtime_thread_device(void)
{
    return thread_binding.device;
}

/* Retains the primary context of the device on first use; returns it and its
 * generation. */
static cudaError_t primary_context_of(int device, CUcontext *context, unsigned *generation)
{
    const struct sim_runtime_driver *driver = &sim_runtime_driver;
    CUresult result = CUDA_SUCCESS;
    pthread_mutex_lock(&primary_contexts_lock);
    struct primary_context *primary = &primary_contexts[device];
    if (!primary->retained) {
        CUdevice handle;
        result = driver->cuDeviceGet(&handle, device);
        if (result == CUDA_SUCCESS)
            result = driver->cuDevicePrimaryCtxRetain(&primary->context, handle);
        primary->retained = result == CUDA_SUCCESS;
    }
    *context = primary->context;
    *generation = primary->generation;
    pthread_mutex_unlock(&primary_contexts_lock);
    return sim_runtime_error_from_driver(result);
}

cudaError_t sim_runtime_bind_context(void)
{
    cudaError_t status = sim_runtime_load_driver();
    if (status != cudaSuccess)
        return status;
    CUcontext context;
    unsigned generation;
    status = primary_context_of(thread_binding.device, &context, &generation);
    if (status != cudaSuccess)
        return status;
    if (thread_binding.bound && thread_binding.context == context &&
        thread_binding.generation == generation)
        return cudaSuccess;
    status = sim_runtime_error_from_driver(sim_runtime_driver.cuCtxSetCurrent(context));
    if (status != cudaSuccess)
        return status;
    thread_binding.bound = true;
    thread_binding.context = context;
    thread_binding.generation = generation;
    return cudaSuccess;
}

static cudaError_t device_count(int *count)
{
    *count = 0;
    cudaError_t status = sim_runtime_load_driver();
    if (status != cudaSuccess)
        return status;
    return sim_runtime_error_from_driver(sim_runtime_driver.cuDeviceGetCount(count));
}

cudaError_t CUDARTAPI cudaGetDeviceCount(int *count)
{
    if (count == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    return sim_runtime_record(device_count(count));
}

cudaError_t CUDARTAPI cudaGetDevice(int *device)
{
    if (device == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    cudaError_t status = sim_runtime_load_driver();
    if (status != cudaSuccess)
        return sim_runtime_record(status);
    *device = thread_binding.device;
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaSetDevice(int device)
{
    int count;
    cudaError_t status = device_count(&count);
    if (status != cudaSuccess)
        return sim_runtime_record(status);
    if (device < 0 || device >= count || device >= MAX_DEVICES)
        return sim_runtime_record(cudaErrorInvalidDevice);
    thread_binding.device = device;
    /* Since CUDA 12 selecting a device also initialises its primary context. */
    return sim_runtime_record(sim_runtime_bind_context());
}

cudaError_t CUDARTAPI cudaDeviceSynchronize(void)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuCtxSynchronize);
}

cudaError_t CUDARTAPI cudaDeviceReset(void)
{
    cudaError_t status = sim_runtime_load_driver();
    if (status != cudaSuccess)
        return sim_runtime_record(status);
    const struct sim_runtime_driver *driver = &sim_runtime_driver;
    int device = thread_binding.device;
    CUdevice handle;
    CUresult result = driver->cuDeviceGet(&handle, device);
    if (result != CUDA_SUCCESS)
        return sim_runtime_record_driver(result);

    pthread_mutex_lock(&primary_contexts_lock);
    struct primary_context *primary = &primary_contexts[device];
    result = driver->cuDevicePrimaryCtxReset(handle);
    /* Resetting does not drop the runtime's reference; releasing it here lets
     * the next call retain a fresh primary context with a count of one. */
    if (result == CUDA_SUCCESS && primary->retained)
        result = driver->cuDevicePrimaryCtxRelease(handle);
    primary->retained = false;
    primary->context = NULL;
    primary->generation++;
    pthread_mutex_unlock(&primary_contexts_lock);
    thread_binding.bound = false;
    return sim_runtime_record_driver(result);
}

/* Device flags are the flags of the current device's primary context. The
 * runtime always maps pinned host memory, so cudaDeviceMapHost is accepted,
 * not passed to the driver, and always reported. */
#define RUNTIME_DEVICE_FLAGS                                                                       \
    (cudaDeviceScheduleMask | cudaDeviceMapHost | cudaDeviceLmemResizeToMax | cudaDeviceSyncMemops)

/* The driver's handle of the thread's current device (the driver loaded
 * first); the error is recorded. */
static cudaError_t bound_device(CUdevice *handle)
{
    cudaError_t status = sim_runtime_load_driver();
    if (status != cudaSuccess)
        return sim_runtime_record(status);
    CUresult result = sim_runtime_driver.cuDeviceGet(handle, thread_binding.device);
    return result != CUDA_SUCCESS ? sim_runtime_record_driver(result) : cudaSuccess;
}

cudaError_t CUDARTAPI cudaSetDeviceFlags(unsigned int flags)
{
    if ((flags & ~(unsigned)RUNTIME_DEVICE_FLAGS) != 0)
        return sim_runtime_record(cudaErrorInvalidValue);
    /* One scheduling policy at most: spin, yield and blocking sync exclude each other. */
    unsigned schedule = flags & cudaDeviceScheduleMask;
    if (schedule != cudaDeviceScheduleAuto && schedule != cudaDeviceScheduleSpin &&
        schedule != cudaDeviceScheduleYield && schedule != cudaDeviceScheduleBlockingSync)
        return sim_runtime_record(cudaErrorInvalidValue);
    CUdevice handle;
    cudaError_t status = bound_device(&handle);
    if (status != cudaSuccess)
        return status;
    status = SIM_RUNTIME_CALL(sim_runtime_driver.cuDevicePrimaryCtxSetFlags, handle,
                              flags & ~(unsigned)cudaDeviceMapHost);
    if (status != cudaSuccess)
        return status;
    /* As since CUDA 12: the device is initialised with the flags. */
    return sim_runtime_record(sim_runtime_bind_context());
}

cudaError_t CUDARTAPI cudaGetDeviceFlags(unsigned int *flags)
{
    if (flags == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    CUdevice handle;
    cudaError_t status = bound_device(&handle);
    if (status != cudaSuccess)
        return status;
    unsigned int context_flags = 0;
    int active = 0;
    status = SIM_RUNTIME_CALL(sim_runtime_driver.cuDevicePrimaryCtxGetState, handle, &context_flags, &active);
    if (status == cudaSuccess)
        *flags = context_flags | cudaDeviceMapHost;
    return status;
}
