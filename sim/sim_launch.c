/* Kernel launches: cuLaunchKernel, cuLaunchKernelEx and
 * cuLaunchCooperativeKernel (and their _ptsz forms) check the configuration
 * the way the driver does, copy the parameters, and queue the grid as one
 * work item on the stream, so a kernel is ordered with copies, events, host
 * functions and other streams by the same stream model as everything else.
 * The stream's worker then runs the grid with the PTX interpreter
 * (sim/ptx/), whose CTAs spread over a process-wide pool of host threads.
 *
 * A kernel that faults (illegal address, misaligned access, trap) leaves a
 * sticky error in its context, as on a GPU: the synchronizing call that
 * waits for it and every later call return it. */
#include "sim_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx/ptx.h"

/* Device limits (sim_device.c reports the same numbers). */
#define MAX_THREADS_PER_BLOCK 1024
#define MAX_BLOCK_X 1024
#define MAX_BLOCK_Y 1024
#define MAX_BLOCK_Z 64
#define MAX_GRID_X 2147483647u
#define MAX_GRID_YZ 65535u
#define MAX_STATIC_SHARED (48 * 1024)
#define MAX_PARAMETER_BYTES 32764
#define SM_COUNT 132
#define MAX_THREADS_PER_SM 2048
#define MAX_BLOCKS_PER_SM 32

struct sim_kernel_launch {
    struct sim_function *function;
    struct sim_context *context;
    struct ptx_launch grid;
    unsigned char *params;
    struct sim_race_operation *race; /* NULL: the race detector is not watching */
};

atomic_bool sim_any_sticky_error;

SIM_EXPORT unsigned long long gpusim_thread_instructions(void)
{
    return ptx_thread_instructions();
}

CUresult sim_sticky_error_or(struct sim_context *context, CUresult result)
{
    if (context == NULL || !atomic_load_explicit(&sim_any_sticky_error, memory_order_acquire))
        return result;
    int sticky = atomic_load(&context->sticky_error);
    return sticky != 0 ? (CUresult)sticky : result;
}

/* Kernels may touch device memory of any kind, pinned host memory (mapped
 * into the device's address space on every 64-bit platform) and mapped VMM
 * ranges with access granted. */
static bool kernel_may_access(uintptr_t address, size_t size, uintptr_t *extent_start, uintptr_t *extent_end)
{
    sim_lock();
    struct sim_range *range = sim_range_find(address);
    bool accessible = false;
    if (range != NULL && range->kind == SIM_RANGE_RESERVATION) {
        uintptr_t base;
        size_t mapped;
        accessible = sim_vmm_is_accessible(address, size, NULL) &&
                     sim_vmm_mapping_range(range, address, &base, &mapped) == CUDA_SUCCESS;
        if (accessible) {
            /* Access is granted per mapping, but only this access was
             * checked: remember just its extent. */
            *extent_start = address;
            *extent_end = address + size;
        }
    } else if (range != NULL &&
               (range->kind != SIM_RANGE_CAPTURED || sim_captured_range_usable(range))) {
        accessible = size <= range->size - (address - range->base);
        *extent_start = range->base;
        *extent_end = range->base + range->size;
    }
    sim_unlock();
    return accessible;
}

static CUresult status_error(enum ptx_status status)
{
    switch (status) {
    case PTX_OK: return CUDA_SUCCESS;
    case PTX_ILLEGAL_ADDRESS: return CUDA_ERROR_ILLEGAL_ADDRESS;
    case PTX_MISALIGNED: return CUDA_ERROR_MISALIGNED_ADDRESS;
    case PTX_TRAP: return CUDA_ERROR_LAUNCH_FAILED;
    case PTX_ASSERT: return CUDA_ERROR_ASSERT;
    case PTX_OUT_OF_MEMORY: return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
    case PTX_UNSUPPORTED: case PTX_DEADLOCK: break;
    }
    return CUDA_ERROR_LAUNCH_FAILED;
}

void sim_kernel_discard(struct sim_kernel_launch *launch)
{
    if (launch->race != NULL)
        sim_racecheck_kernel_finished(launch->race);
    free(launch->params);
    free(launch);
}

struct sim_kernel_launch *sim_kernel_clone(const struct sim_kernel_launch *launch)
{
    size_t bytes = ptx_function_param_bytes(launch->grid.function);
    struct sim_kernel_launch *clone = malloc(sizeof *clone);
    unsigned char *params = malloc(bytes ? bytes : 1);
    if (clone == NULL || params == NULL) {
        free(clone);
        free(params);
        return NULL;
    }
    memcpy(params, launch->params, bytes);
    *clone = *launch;
    clone->params = params;
    clone->grid.params = params;
    /* Each queued copy gets its own observer when it is queued. */
    clone->race = NULL;
    clone->grid.observe_access = NULL;
    clone->grid.observer_context = NULL;
    clone->grid.status = PTX_OK;
    clone->grid.message[0] = '\0';
    return clone;
}

const char *sim_kernel_name(const struct sim_kernel_launch *launch)
{
    return ptx_function_name(launch->grid.function);
}

void sim_kernel_observe(struct sim_kernel_launch *launch, struct sim_race_operation *operation)
{
    launch->race = operation;
    launch->grid.observe_access = sim_racecheck_kernel_access;
    launch->grid.observer_context = operation;
}

void sim_kernel_run(struct sim_kernel_launch *launch)
{
    /* After a fault the device runs nothing more in that context. */
    if (atomic_load(&launch->context->sticky_error) == 0) {
        /* A cooperative grid gets the barrier word cooperative groups'
         * grid.sync() counts on ({size, barrier}, as the driver lays it
         * out), for this run only. */
        struct sim_range *workspace = NULL;
        if (launch->grid.cooperative) {
            sim_lock();
            if (sim_device_allocate(launch->context, 8, SIM_RANGE_DEVICE, &workspace) == CUDA_SUCCESS) {
                const uint32_t header[2] = {8, 0};
                memcpy((void *)workspace->base, header, sizeof header);
                launch->grid.grid_workspace = workspace->base;
            }
            sim_unlock();
        }
        enum ptx_status status = ptx_launch_run(&launch->grid);
        if (workspace != NULL) {
            sim_lock();
            sim_range_destroy(workspace);
            sim_unlock();
            launch->grid.grid_workspace = 0;
        }
        if (status != PTX_OK) {
            fprintf(stderr, "gpusim: %s\n", launch->grid.message);
            int expected = 0;
            atomic_compare_exchange_strong(&launch->context->sticky_error, &expected, (int)status_error(status));
            atomic_store_explicit(&sim_any_sticky_error, true, memory_order_release);
        }
    }
    sim_kernel_discard(launch);
}

/* The parameter buffer from kernelParams (one pointer per parameter) or
 * extra (CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE), as the driver accepts. */
static CUresult copy_parameters(const struct ptx_function *function, void **kernel_params, void **extra,
                                unsigned char **out)
{
    size_t bytes = ptx_function_param_bytes(function);
    if (bytes > MAX_PARAMETER_BYTES)
        return CUDA_ERROR_INVALID_VALUE;
    if (kernel_params != NULL && extra != NULL)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned char *buffer = calloc(1, bytes ? bytes : 1);
    if (buffer == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    unsigned count = ptx_function_param_count(function);
    if (kernel_params != NULL) {
        for (unsigned i = 0; i < count; i++) {
            size_t offset, size;
            ptx_function_param(function, i, &offset, &size);
            if (kernel_params[i] == NULL) {
                free(buffer);
                return CUDA_ERROR_INVALID_VALUE;
            }
            memcpy(buffer + offset, kernel_params[i], size);
        }
    } else if (extra != NULL) {
        const void *source = NULL;
        size_t size = 0;
        bool have_size = false;
        for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
            if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
                source = extra[i + 1];
            } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
                memcpy(&size, extra[i + 1], sizeof size);
                have_size = true;
            } else {
                free(buffer);
                return CUDA_ERROR_INVALID_VALUE;
            }
        }
        if ((count > 0 && (source == NULL || !have_size || size < bytes))) {
            free(buffer);
            return CUDA_ERROR_INVALID_VALUE;
        }
        if (bytes > 0)
            memcpy(buffer, source, bytes);
    } else if (count > 0) {
        free(buffer);
        return CUDA_ERROR_INVALID_VALUE;
    }
    *out = buffer;
    return CUDA_SUCCESS;
}

static CUresult launch_kernel(CUfunction handle, const unsigned grid[3], const unsigned block[3],
                              unsigned shared_bytes, CUstream stream, void **kernel_params, void **extra,
                              bool per_thread_default, bool cooperative)
{
    struct sim_context *context;
    CUresult result = sim_require_context(&context);
    if (result != CUDA_SUCCESS)
        return result;
    result = sim_sticky_error_or(context, CUDA_SUCCESS);
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    struct sim_function *function = sim_function_lookup(handle);
    int max_dynamic_shared = function != NULL ? function->max_dynamic_shared_bytes : 0;
    struct sim_context *owner = function != NULL ? function->module->context : NULL;
    sim_unlock();
    if (function == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (owner != context)
        return CUDA_ERROR_INVALID_HANDLE;
    const struct ptx_function *ptx = function->ptx;
    const char *decode_error = ptx_function_decode_error(ptx);
    if (decode_error != NULL) {
        fprintf(stderr, "gpusim: kernel %s cannot run: %s\n", ptx_function_name(ptx), decode_error);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    unsigned long long threads = (unsigned long long)block[0] * block[1] * block[2];
    if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0 || block[0] == 0 || block[1] == 0 || block[2] == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (block[0] > MAX_BLOCK_X || block[1] > MAX_BLOCK_Y || block[2] > MAX_BLOCK_Z ||
        threads > MAX_THREADS_PER_BLOCK || threads > ptx_function_max_threads(ptx))
        return CUDA_ERROR_INVALID_VALUE;
    if (grid[0] > MAX_GRID_X || grid[1] > MAX_GRID_YZ || grid[2] > MAX_GRID_YZ)
        return CUDA_ERROR_INVALID_VALUE;
    size_t static_shared = ptx_function_static_shared_bytes(ptx);
    if (static_shared > MAX_STATIC_SHARED || (int)shared_bytes > max_dynamic_shared)
        return CUDA_ERROR_INVALID_VALUE;
    if (cooperative) {
        /* Every CTA of a cooperative grid must be resident at once. */
        unsigned long long per_sm = MAX_THREADS_PER_SM / threads;
        if (per_sm > MAX_BLOCKS_PER_SM)
            per_sm = MAX_BLOCKS_PER_SM;
        if ((unsigned long long)grid[0] * grid[1] * grid[2] > per_sm * SM_COUNT)
            return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    }
    struct sim_kernel_launch *launch = calloc(1, sizeof *launch);
    if (launch == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    result = copy_parameters(ptx, kernel_params, extra, &launch->params);
    if (result != CUDA_SUCCESS) {
        free(launch);
        return result;
    }
    launch->function = function;
    launch->context = context;
    launch->grid = (struct ptx_launch){
        .function = ptx,
        .grid = {grid[0], grid[1], grid[2]},
        .block = {block[0], block[1], block[2]},
        .dynamic_shared_bytes = shared_bytes,
        .params = launch->params,
        .is_accessible = kernel_may_access,
        .sm_count = SM_COUNT,
        /* The race detector attaches when the launch is queued. */
        .observe_access = NULL,
        .cooperative = cooperative,
    };
    struct sim_work work = {.kind = SIM_WORK_KERNEL};
    work.u.kernel.launch = launch;
    result = sim_stream_run(stream, per_thread_default, &work, false);
    if (result != CUDA_SUCCESS)
        sim_kernel_discard(launch);
    return result;
}

static CUresult launch_classic(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                               unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                               unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra,
                               bool per_thread_default, bool cooperative)
{
    const unsigned grid[3] = {gridDimX, gridDimY, gridDimZ};
    const unsigned block[3] = {blockDimX, blockDimY, blockDimZ};
    return launch_kernel(f, grid, block, sharedMemBytes, hStream, kernelParams, extra, per_thread_default,
                         cooperative);
}

SIM_EXPORT_VARIANT(cuLaunchKernel,
                   (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                    unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                    unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra),
                   launch_classic(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                                  sharedMemBytes, hStream, kernelParams, extra, false, false))

SIM_EXPORT_VARIANT(cuLaunchKernel_ptsz,
                   (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                    unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                    unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra),
                   launch_classic(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                                  sharedMemBytes, hStream, kernelParams, extra, true, false))

SIM_EXPORT_VARIANT(cuLaunchCooperativeKernel,
                   (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                    unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                    unsigned int sharedMemBytes, CUstream hStream, void **kernelParams),
                   launch_classic(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                                  sharedMemBytes, hStream, kernelParams, NULL, false, true))

SIM_EXPORT_VARIANT(cuLaunchCooperativeKernel_ptsz,
                   (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                    unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                    unsigned int sharedMemBytes, CUstream hStream, void **kernelParams),
                   launch_classic(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                                  sharedMemBytes, hStream, kernelParams, NULL, true, true))

/* cuLaunchKernelEx: the configuration struct, whose attributes may ask for
 * a cooperative launch; clusters, priorities and the rest are scheduling
 * hints with no effect on results here. */
static CUresult launch_extended(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra,
                                bool per_thread_default)
{
    if (config == NULL || (config->numAttrs > 0 && config->attrs == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    bool cooperative = false;
    for (unsigned i = 0; i < config->numAttrs; i++)
        if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && config->attrs[i].value.cooperative)
            cooperative = true;
    const unsigned grid[3] = {config->gridDimX, config->gridDimY, config->gridDimZ};
    const unsigned block[3] = {config->blockDimX, config->blockDimY, config->blockDimZ};
    return launch_kernel(f, grid, block, config->sharedMemBytes, config->hStream, kernelParams, extra,
                         per_thread_default, cooperative);
}

SIM_EXPORT_VARIANT(cuLaunchKernelEx,
                   (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra),
                   launch_extended(config, f, kernelParams, extra, false))

SIM_EXPORT_VARIANT(cuLaunchKernelEx_ptsz,
                   (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra),
                   launch_extended(config, f, kernelParams, extra, true))
