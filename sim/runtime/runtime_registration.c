/* Module registration for nvcc-built binaries. nvcc's host code registers
 * each translation unit's fat binary, its kernels (host stub -> device name)
 * and its device variables (host shadow -> device name) before main. The
 * runtime keeps those records and loads a fat binary through the driver
 * (cuModuleLoadData) only when one of its kernels or variables is first
 * used, once per context, as NVIDIA's runtime does with lazy loading.
 *
 * With separate compilation (-rdc) the program registers one device-linked
 * image for all its translation units, whose kernels and variables are all
 * registered against it; nvlink's image holds SASS only, but its wrapper
 * also lists every unit's own (prelinked) fat binary, with that unit's PTX.
 * The runtime links those PTX texts through the driver's JIT linker
 * (cuLinkCreate ... cuLinkComplete) and loads the result, as the driver
 * would to JIT the program for a GPU its SASS does not cover. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/queue.h>

#include "cudart_registration.h"
#include "runtime_driver.h"

/* Contexts a fat binary can be loaded in at once (one per device used). */
#define MAX_LOADED_CONTEXTS 16

struct fat_binary {
    /* First member, so a pointer to the record is the void ** handle. */
    void *fat_cubin;
    /* A device-linked image: the NULL-terminated list of the translation
     * units' fat binaries, whose PTX is linked at load. NULL otherwise. */
    void *const *prelinked;
    struct {
        CUcontext context;
        CUmodule module;
        cudaError_t status; /* the load's outcome, kept so a failure is not retried */
    } loads[MAX_LOADED_CONTEXTS];
    unsigned load_count;
};

struct registered_function {
    LIST_ENTRY(registered_function) link;
    struct fat_binary *module;
    const void *host_function;
    const char *device_name;
};

struct registered_variable {
    LIST_ENTRY(registered_variable) link;
    struct fat_binary *module;
    const void *host_variable;
    const char *device_name;
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static LIST_HEAD(, registered_function) registered_functions = LIST_HEAD_INITIALIZER(registered_functions);
static LIST_HEAD(, registered_variable) registered_variables = LIST_HEAD_INITIALIZER(registered_variables);

/* The layout of the wrapper nvcc's host code passes to
 * __cudaRegisterFatBinary; version 2 is a device-linked image's. */
struct fat_binary_wrapper {
    int magic;
    int version;
    const void *data;
    void *filename_or_fatbins;
};

#define FAT_BINARY_WRAPPER_MAGIC 0x466243b1
#define FAT_BINARY_WRAPPER_LINKED 2

static void *const *prelinked_fat_binaries(const void *fat_cubin)
{
    const struct fat_binary_wrapper *wrapper = fat_cubin;
    if (wrapper == NULL || wrapper->magic != FAT_BINARY_WRAPPER_MAGIC ||
        wrapper->version != FAT_BINARY_WRAPPER_LINKED || wrapper->filename_or_fatbins == NULL)
        return NULL;
    void *const *list = wrapper->filename_or_fatbins;
    return list[0] != NULL ? list : NULL;
}

void **CUDARTAPI __cudaRegisterFatBinary(void *fatCubin)
{
    struct fat_binary *module = calloc(1, sizeof *module);
    if (module == NULL)
        return NULL;
    module->fat_cubin = fatCubin;
    module->prelinked = prelinked_fat_binaries(fatCubin);
    return &module->fat_cubin;
}

void CUDARTAPI __cudaRegisterFatBinaryEnd(void **fatCubinHandle)
{
    /* Loading waits for first use, so there is nothing to finish. */
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
    struct registered_variable *variable = LIST_FIRST(&registered_variables);
    while (variable != NULL) {
        struct registered_variable *next = LIST_NEXT(variable, link);
        if (variable->module == module) {
            LIST_REMOVE(variable, link);
            free(variable);
        }
        variable = next;
    }
    pthread_mutex_unlock(&registry_lock);
    /* The modules themselves go with their contexts: at process exit the
     * driver may already be torn down, so they are not unloaded here. */
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
    (void)deviceAddress, (void)ext, (void)size, (void)constant, (void)global;
    struct registered_variable *variable = calloc(1, sizeof *variable);
    if (variable == NULL)
        return;
    variable->module = (struct fat_binary *)fatCubinHandle;
    variable->host_variable = hostVar;
    variable->device_name = deviceName;
    pthread_mutex_lock(&registry_lock);
    LIST_INSERT_HEAD(&registered_variables, variable, link);
    pthread_mutex_unlock(&registry_lock);
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

static struct registered_function *find_by_handle(const void *kernel)
{
    struct registered_function *entry;
    LIST_FOREACH(entry, &registered_functions, link)
        if ((const void *)entry == kernel)
            return entry;
    return NULL;
}

static cudaError_t load_in_context(struct fat_binary *binary, CUcontext context, CUmodule *module);

/* The fat binary's module in the current context, loading it on first use.
 * Under registry_lock. */
static cudaError_t module_in_current_context(struct fat_binary *binary, CUmodule *module)
{
    CUcontext context = NULL;
    if (sim_runtime_driver.cuCtxGetCurrent == NULL || sim_runtime_driver.cuModuleLoadData == NULL)
        return cudaErrorNotSupported;
    if (sim_runtime_driver.cuCtxGetCurrent(&context) != CUDA_SUCCESS || context == NULL)
        return cudaErrorDeviceUninitialized;
    for (unsigned i = 0; i < binary->load_count; i++)
        if (binary->loads[i].context == context) {
            *module = binary->loads[i].module;
            return binary->loads[i].status;
        }
    if (binary->load_count == MAX_LOADED_CONTEXTS)
        return cudaErrorNotSupported;
    return load_in_context(binary, context, module);
}

/* Forgets the fat binary's module in the current context: a device reset
 * unloaded it, and the next use loads it again. Under registry_lock. */
static void forget_module(struct fat_binary *binary)
{
    CUcontext context = NULL;
    if (sim_runtime_driver.cuCtxGetCurrent(&context) != CUDA_SUCCESS)
        return;
    for (unsigned i = 0; i < binary->load_count; i++)
        if (binary->loads[i].context == context) {
            binary->loads[i] = binary->loads[--binary->load_count];
            return;
        }
}

/* Links the PTX of a device-linked image's translation units and loads the
 * result. */
static CUresult load_linked(const struct fat_binary *binary, CUmodule *loaded)
{
    if (sim_runtime_driver.cuLinkCreate == NULL || sim_runtime_driver.cuLinkAddData == NULL ||
        sim_runtime_driver.cuLinkComplete == NULL || sim_runtime_driver.cuLinkDestroy == NULL)
        return CUDA_ERROR_NOT_SUPPORTED;
    CUlinkState link;
    CUresult result = sim_runtime_driver.cuLinkCreate(0, NULL, NULL, &link);
    if (result != CUDA_SUCCESS)
        return result;
    /* The containers carry their own sizes. */
    for (size_t i = 0; binary->prelinked[i] != NULL && result == CUDA_SUCCESS; i++)
        result = sim_runtime_driver.cuLinkAddData(link, CU_JIT_INPUT_FATBINARY, binary->prelinked[i], 0, NULL,
                                                  0, NULL, NULL);
    void *image = NULL;
    if (result == CUDA_SUCCESS)
        result = sim_runtime_driver.cuLinkComplete(link, &image, NULL);
    if (result == CUDA_SUCCESS)
        result = sim_runtime_driver.cuModuleLoadData(loaded, image);
    sim_runtime_driver.cuLinkDestroy(link);
    return result;
}

/* Loads the fat binary into `context` and remembers the outcome, a failure
 * included (it would fail the same way again). */
static cudaError_t load_in_context(struct fat_binary *binary, CUcontext context, CUmodule *module)
{
    CUmodule loaded = NULL;
    CUresult result = binary->prelinked != NULL ? load_linked(binary, &loaded)
                                                : sim_runtime_driver.cuModuleLoadData(&loaded, binary->fat_cubin);
    cudaError_t status;
    switch (result) {
    case CUDA_SUCCESS: status = cudaSuccess; break;
    case CUDA_ERROR_OUT_OF_MEMORY: status = cudaErrorMemoryAllocation; break;
    case CUDA_ERROR_INVALID_PTX: status = cudaErrorInvalidPtx; break;
    /* A symbol the device link left unresolved. */
    case CUDA_ERROR_NOT_FOUND: status = cudaErrorSymbolNotFound; break;
    /* No usable code in the image (only SASS, or not a fat binary at all):
     * the driver has said why on stderr. */
    default: status = cudaErrorNoKernelImageForDevice; break;
    }
    binary->loads[binary->load_count].context = context;
    binary->loads[binary->load_count].module = loaded;
    binary->loads[binary->load_count].status = status;
    binary->load_count++;
    *module = loaded;
    return status;
}

cudaError_t sim_runtime_registered_function(const void *stub_or_handle, bool by_handle, CUfunction *function)
{
    pthread_mutex_lock(&registry_lock);
    struct registered_function *entry = by_handle ? find_by_handle(stub_or_handle)
                                                  : find_by_host_function(stub_or_handle);
    cudaError_t status = cudaErrorInvalidDeviceFunction;
    if (entry != NULL) {
        CUmodule module;
        status = module_in_current_context(entry->module, &module);
        CUresult result = status == cudaSuccess
                              ? sim_runtime_driver.cuModuleGetFunction(function, module, entry->device_name)
                              : CUDA_SUCCESS;
        if (result == CUDA_ERROR_INVALID_HANDLE) {
            /* The context was reset since the module was loaded. */
            forget_module(entry->module);
            status = module_in_current_context(entry->module, &module);
            result = status == cudaSuccess
                         ? sim_runtime_driver.cuModuleGetFunction(function, module, entry->device_name)
                         : CUDA_SUCCESS;
        }
        if (result != CUDA_SUCCESS)
            status = cudaErrorNoKernelImageForDevice;
    }
    pthread_mutex_unlock(&registry_lock);
    return status;
}

cudaError_t sim_runtime_registered_variable(const void *symbol, CUdeviceptr *address, size_t *size)
{
    pthread_mutex_lock(&registry_lock);
    struct registered_variable *variable;
    LIST_FOREACH(variable, &registered_variables, link)
        if (variable->host_variable == symbol)
            break;
    cudaError_t status = cudaErrorInvalidSymbol;
    if (variable != NULL) {
        CUmodule module;
        status = module_in_current_context(variable->module, &module);
        CUresult result = status == cudaSuccess
                              ? sim_runtime_driver.cuModuleGetGlobal(address, size, module, variable->device_name)
                              : CUDA_SUCCESS;
        if (result == CUDA_ERROR_INVALID_HANDLE) {
            forget_module(variable->module);
            status = module_in_current_context(variable->module, &module);
            result = status == cudaSuccess
                         ? sim_runtime_driver.cuModuleGetGlobal(address, size, module, variable->device_name)
                         : CUDA_SUCCESS;
        }
        if (result != CUDA_SUCCESS)
            status = cudaErrorInvalidSymbol;
    }
    pthread_mutex_unlock(&registry_lock);
    return status;
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

cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                                         size_t sharedMem, cudaStream_t stream)
{
    return sim_runtime_launch(kernel, true, gridDim, blockDim, args, sharedMem, stream, false,
                              SIM_RUNTIME_LEGACY_STREAM);
}

cudaError_t CUDARTAPI __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                                              size_t sharedMem, cudaStream_t stream)
{
    return sim_runtime_launch(kernel, true, gridDim, blockDim, args, sharedMem, stream, false,
                              SIM_RUNTIME_PER_THREAD_STREAM);
}
