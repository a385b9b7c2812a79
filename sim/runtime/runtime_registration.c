/* Module registration and kernel launches for nvcc-built binaries. The sim
 * has no device to run code on, so it remembers which host stubs belong to
 * registered kernels only to tell "no kernel image for this device" (a
 * registered kernel) from "invalid device function" (anything else); it never
 * pretends a launch succeeded. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/queue.h>

#include "cudart_registration.h"
#include "runtime_internal.h"

struct fat_binary {
    /* First member, so a pointer to the record is the void ** handle. */
    void *fat_cubin;
};

struct registered_function {
    LIST_ENTRY(registered_function) link;
    struct fat_binary *module;
    const void *host_function;
    const char *device_name;
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static LIST_HEAD(, registered_function) registered_functions = LIST_HEAD_INITIALIZER(registered_functions);

void **CUDARTAPI __cudaRegisterFatBinary(void *fatCubin)
{
    struct fat_binary *module = calloc(1, sizeof *module);
    if (module == NULL)
        return NULL;
    module->fat_cubin = fatCubin;
    return &module->fat_cubin;
}

void CUDARTAPI __cudaRegisterFatBinaryEnd(void **fatCubinHandle)
{
    /* Nothing is loaded lazily, so there is nothing to finish. */
    (void)fatCubinHandle;
}

void CUDARTAPI __cudaUnregisterFatBinary(void **fatCubinHandle)
{
    if (fatCubinHandle == NULL)
        return;
    struct fat_binary *module = (struct fat_binary *)fatCubinHandle;
    pthread_mutex_lock(&registry_lock);
    struct registered_function *entry = LIST_FIRST(&registered_functions);
    while (entry != NULL) {
        struct registered_function *next = LIST_NEXT(entry, link);
        if (entry->module == module) {
            LIST_REMOVE(entry, link);
            free(entry);
        }
        entry = next;
    }
    pthread_mutex_unlock(&registry_lock);
    free(module);
}

void CUDARTAPI __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                                      const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
                                      dim3 *bDim, dim3 *gDim, int *wSize)
{
    (void)deviceFun, (void)thread_limit, (void)tid, (void)bid, (void)bDim, (void)gDim, (void)wSize;
    struct registered_function *entry = calloc(1, sizeof *entry);
    if (entry == NULL)
        return;
    entry->module = (struct fat_binary *)fatCubinHandle;
    entry->host_function = hostFun;
    entry->device_name = deviceName;
    pthread_mutex_lock(&registry_lock);
    LIST_INSERT_HEAD(&registered_functions, entry, link);
    pthread_mutex_unlock(&registry_lock);
}

void CUDARTAPI __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
                                 const char *deviceName, int ext, size_t size, int constant, int global)
{
    /* Device variables only matter to symbol copies, which the sim runtime
     * does not offer; accepting the registration lets the module load. */
    (void)fatCubinHandle, (void)hostVar, (void)deviceAddress, (void)deviceName, (void)ext, (void)size,
        (void)constant, (void)global;
}

char CUDARTAPI __cudaInitModule(void **fatCubinHandle)
{
    return fatCubinHandle != NULL;
}

static struct registered_function *find_by_host_function(const void *host_function)
{
    struct registered_function *entry;
    LIST_FOREACH(entry, &registered_functions, link)
        if (entry->host_function == host_function)
            return entry;
    return NULL;
}

static struct registered_function *find_by_handle(cudaKernel_t kernel)
{
    struct registered_function *entry;
    LIST_FOREACH(entry, &registered_functions, link)
        if ((cudaKernel_t)(void *)entry == kernel)
            return entry;
    return NULL;
}

cudaError_t CUDARTAPI __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun)
{
    if (kernel == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    pthread_mutex_lock(&registry_lock);
    struct registered_function *entry = find_by_host_function(hostFun);
    pthread_mutex_unlock(&registry_lock);
    if (entry == NULL)
        return sim_runtime_record(cudaErrorInvalidDeviceFunction);
    *kernel = (cudaKernel_t)(void *)entry;
    return cudaSuccess;
}

/* Launch configurations nest when evaluating a launch's arguments launches
 * another kernel; deeper nesting than this is refused. */
#define MAX_PENDING_LAUNCHES 16

struct launch_configuration {
    dim3 grid;
    dim3 block;
    size_t shared_memory;
    cudaStream_t stream;
};

static _Thread_local struct launch_configuration pending_launches[MAX_PENDING_LAUNCHES];
static _Thread_local unsigned pending_launch_count;

unsigned CUDARTAPI __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                               struct CUstream_st *stream)
{
    if (pending_launch_count == MAX_PENDING_LAUNCHES)
        return 1;
    pending_launches[pending_launch_count++] = (struct launch_configuration){
        .grid = gridDim, .block = blockDim, .shared_memory = sharedMem, .stream = stream
    };
    return 0;
}

cudaError_t CUDARTAPI __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
                                                 void *stream)
{
    if (pending_launch_count == 0)
        return sim_runtime_record(cudaErrorMissingConfiguration);
    const struct launch_configuration *launch = &pending_launches[--pending_launch_count];
    *gridDim = launch->grid;
    *blockDim = launch->block;
    *sharedMem = launch->shared_memory;
    *(cudaStream_t *)stream = launch->stream;
    return cudaSuccess;
}

cudaError_t sim_runtime_launch_registered_kernel(const void *host_function)
{
    cudaError_t status = sim_runtime_bind_context();
    if (status != cudaSuccess)
        return sim_runtime_record(status);
    pthread_mutex_lock(&registry_lock);
    int registered = find_by_host_function(host_function) != NULL;
    pthread_mutex_unlock(&registry_lock);
    return sim_runtime_record(registered ? cudaErrorNoKernelImageForDevice : cudaErrorInvalidDeviceFunction);
}

cudaError_t sim_runtime_launch_kernel_handle(cudaKernel_t kernel)
{
    cudaError_t status = sim_runtime_bind_context();
    if (status != cudaSuccess)
        return sim_runtime_record(status);
    pthread_mutex_lock(&registry_lock);
    int registered = find_by_handle(kernel) != NULL;
    pthread_mutex_unlock(&registry_lock);
    return sim_runtime_record(registered ? cudaErrorNoKernelImageForDevice : cudaErrorInvalidDeviceFunction);
}

cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                                         size_t sharedMem, cudaStream_t stream)
{
    (void)gridDim, (void)blockDim, (void)args, (void)sharedMem, (void)stream;
    return sim_runtime_launch_kernel_handle(kernel);
}

cudaError_t CUDARTAPI __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                                              size_t sharedMem, cudaStream_t stream)
{
    (void)gridDim, (void)blockDim, (void)args, (void)sharedMem, (void)stream;
    return sim_runtime_launch_kernel_handle(kernel);
}
