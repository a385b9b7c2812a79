/* Modules, libraries, kernels and module variables: cuModuleLoad*,
 * cuLibraryLoad*, cuModuleGetFunction, cuLibraryGetKernel, cuKernelGetFunction,
 * cuModuleGetGlobal and the function attributes.
 *
 * An image is PTX text, a fat binary (container or the wrapper nvcc embeds),
 * a cubin, or the image cuLinkComplete returns (sim_link.c), whose PTX
 * texts are linked into one module here. The simulator runs PTX only: from
 * a fat binary it takes the PTX of the highest virtual architecture at or
 * below the device's compute capability, as the driver's JIT would; an
 * image with only SASS cannot run and fails with CUDA_ERROR_NO_BINARY_FOR_GPU,
 * with one line on stderr saying how to add PTX. Every .global and .const
 * variable becomes a device allocation of the module's context, so copies
 * to and from symbols are ordinary device copies.
 *
 * One file because every loading entry point ends in the same image
 * registry; they differ only in where the image comes from. */
#include "sim_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx/fatbin.h"
#include "ptx/ptx.h"

/* Compute capability the device reports (sim_device.c), as nvcc spells it. */
#define SIM_COMPUTE_ARCH 90

static LIST_HEAD(, sim_module) loaded_modules = LIST_HEAD_INITIALIZER(loaded_modules);

struct allocation_context {
    struct sim_context *context;
    struct sim_module *module;
    bool failed;
};

static uint64_t allocate_variable(void *argument, const char *name, size_t size, size_t alignment,
                                  const void *initial_bytes, bool constant)
{
    (void)name, (void)constant, (void)alignment; /* device allocations are 512-byte aligned */
    struct allocation_context *allocation = argument;
    struct sim_module *module = allocation->module;
    struct sim_range **grown = realloc(module->variables, (module->variable_count + 1) * sizeof *grown);
    if (grown == NULL)
        return 0;
    module->variables = grown;
    sim_lock();
    struct sim_range *range;
    CUresult result = sim_device_allocate(allocation->context, size ? size : 1, SIM_RANGE_DEVICE, &range);
    sim_unlock();
    if (result != CUDA_SUCCESS)
        return 0;
    module->variables[module->variable_count++] = range;
    /* Fresh device memory holds a fill pattern; a variable without an
     * initializer starts at zero, as in an ELF .bss. */
    if (initial_bytes != NULL)
        memcpy((void *)range->base, initial_bytes, size);
    else
        memset((void *)range->base, 0, size ? size : 1);
    return range->base;
}

static void release_variables(struct sim_module *module)
{
    sim_lock();
    for (size_t i = 0; i < module->variable_count; i++) {
        struct sim_range *range = module->variables[i];
        /* Context teardown may already have freed it. */
        if (sim_range_find(range->base) == range)
            sim_range_destroy(range);
    }
    sim_unlock();
    free(module->variables);
    module->variables = NULL;
    module->variable_count = 0;
}

static void module_free(struct sim_module *module)
{
    release_variables(module);
    ptx_module_free(module->ptx);
    free(module->functions);
    free(module);
}

/* Writes `message` to the JIT error log the caller passed, if any. */
static void write_error_log(unsigned int option_count, CUjit_option *options, void **values,
                            const char *message)
{
    if (options == NULL || values == NULL)
        return;
    char *buffer = NULL;
    size_t size = 0;
    for (unsigned int i = 0; i < option_count; i++) {
        if (options[i] == CU_JIT_ERROR_LOG_BUFFER)
            buffer = values[i];
        else if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
            size = (size_t)(uintptr_t)values[i];
    }
    if (buffer != NULL && size > 0)
        snprintf(buffer, size, "%s", message);
}

void sim_write_jit_error_log(unsigned int option_count, CUjit_option *options, void **values,
                             const char *message)
{
    write_error_log(option_count, options, values, message);
}

CUresult sim_image_ptx(const void *image, size_t image_size, unsigned int option_count, CUjit_option *options,
                       void **values, char **owned_text, const char **text_out, size_t *length_out)
{
    char error[320] = "";
    const char *text;
    size_t length;
    *owned_text = NULL;
    if (fatbin_is_fatbin(image)) {
        char sass[128], too_new[128];
        unsigned arch = 0;
        enum fatbin_result found = fatbin_select_ptx(image, image_size, SIM_COMPUTE_ARCH, owned_text, &length,
                                                     &arch, sass, sizeof sass, too_new, sizeof too_new, error,
                                                     sizeof error);
        if (found == FATBIN_NO_PTX) {
            fprintf(stderr,
                    "gpusim: this binary was built without PTX for compute capability 9.0 or lower "
                    "(it holds %s%s%s): the simulator runs PTX only; rebuild with "
                    "-gencode arch=compute_%s,code=compute_%s\n",
                    sass[0] ? sass : "no code", too_new[0] ? ", PTX for " : "", too_new,
                    "90", "90");
            return CUDA_ERROR_NO_BINARY_FOR_GPU;
        }
        if (found != FATBIN_FOUND) {
            fprintf(stderr, "gpusim: %s\n", error);
            write_error_log(option_count, options, values, error);
            return CUDA_ERROR_INVALID_IMAGE;
        }
        text = *owned_text;
    } else if (fatbin_starts_with(image, "\177ELF", 4)) {
        fprintf(stderr, "gpusim: a cubin (SASS) cannot run on the simulator, which runs PTX only; load the "
                        "PTX or a fat binary built with -gencode arch=compute_90,code=compute_90\n");
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    } else {
        text = image;
        length = image_size ? strnlen(text, image_size) : strlen(text);
    }
    *text_out = text;
    *length_out = length;
    return CUDA_SUCCESS;
}

CUresult sim_link_failure_result(int failure, const char *error)
{
    switch ((enum ptx_link_failure)failure) {
    case PTX_LINK_UNRESOLVED: return CUDA_ERROR_NOT_FOUND;
    case PTX_LINK_DUPLICATE: return CUDA_ERROR_INVALID_PTX;
    case PTX_LINK_INVALID: break;
    }
    return strstr(error, "no device memory") != NULL || strstr(error, "out of memory") != NULL
               ? CUDA_ERROR_OUT_OF_MEMORY
               : CUDA_ERROR_INVALID_PTX;
}

/* Loads an image into `context`. */
static CUresult module_load(struct sim_context *context, const void *image, size_t image_size, bool library,
                            unsigned int option_count, CUjit_option *options, void **values,
                            struct sim_module **out)
{
    if (image == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    char error[320] = "";
    char *owned_text = NULL;
    const char *text = NULL;
    size_t length = 0;
    /* cuLinkComplete's image holds several texts, linked here again (its
     * variables need this context's memory). */
    struct ptx_source *sources = NULL;
    size_t source_count = 0;
    CUresult result;
    if (sim_link_image_is(image))
        result = sim_link_image_sources(image, image_size, &sources, &source_count);
    else
        result = sim_image_ptx(image, image_size, option_count, options, values, &owned_text, &text, &length);
    if (result != CUDA_SUCCESS)
        return result;

    struct sim_module *module = calloc(1, sizeof *module);
    if (module == NULL) {
        free(owned_text);
        free(sources);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    module->context = context;
    module->library = library;
    struct allocation_context allocation = {.context = context, .module = module};
    enum ptx_link_failure failure = PTX_LINK_INVALID;
    if (sources != NULL)
        module->ptx = ptx_module_link(sources, source_count, allocate_variable, &allocation, error, sizeof error,
                                      &failure);
    else
        module->ptx = ptx_module_parse(text, length, allocate_variable, &allocation, error, sizeof error);
    free(owned_text);
    free(sources);
    if (module->ptx == NULL) {
        result = sim_link_failure_result((int)failure, error);
        if (sources != NULL)
            fprintf(stderr, "gpusim: cannot link PTX: %s (%s)\n", error, sim_error_name(result));
        else
            fprintf(stderr, "gpusim: cannot load PTX: %s\n", error);
        write_error_log(option_count, options, values, error);
        module_free(module);
        return result;
    }
    module->function_count = ptx_module_function_count(module->ptx);
    module->functions = calloc(module->function_count ? module->function_count : 1, sizeof *module->functions);
    if (module->functions == NULL) {
        module_free(module);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    sim_lock();
    for (size_t i = 0; i < module->function_count; i++) {
        struct sim_function *function = &module->functions[i];
        function->module = module;
        function->ptx = ptx_module_function_at(module->ptx, i);
        function->max_dynamic_shared_bytes = 48 * 1024 - (int)ptx_function_static_shared_bytes(function->ptx);
        sim_handle_register(&function->handle, SIM_HANDLE_FUNCTION);
    }
    sim_handle_register(&module->handle, SIM_HANDLE_MODULE);
    LIST_INSERT_HEAD(&loaded_modules, module, link);
    sim_unlock();
    *out = module;
    return CUDA_SUCCESS;
}

static CUresult load_in_current_context(const void *image, size_t image_size, bool library,
                                        unsigned int option_count, CUjit_option *options, void **values,
                                        struct sim_module **out)
{
    if (out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_context *context;
    CUresult result = sim_require_context(&context);
    if (result != CUDA_SUCCESS)
        return result;
    return module_load(context, image, image_size, library, option_count, options, values, out);
}

SIM_EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    SIM_ENTER("cuModuleLoadData");
    return load_in_current_context(image, 0, false, 0, NULL, NULL, (struct sim_module **)module);
}

SIM_EXPORT CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                                       CUjit_option *options, void **optionValues)
{
    SIM_ENTER("cuModuleLoadDataEx");
    return load_in_current_context(image, 0, false, numOptions, options, optionValues,
                                   (struct sim_module **)module);
}

SIM_EXPORT CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
    SIM_ENTER("cuModuleLoadFatBinary");
    if (fatCubin == NULL || !fatbin_is_fatbin(fatCubin))
        return CUDA_ERROR_INVALID_IMAGE;
    return load_in_current_context(fatCubin, 0, false, 0, NULL, NULL, (struct sim_module **)module);
}

CUresult sim_read_file(const char *path, char **contents, size_t *size)
{
    if (path == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    FILE *file = fopen(path, "rb");
    if (file == NULL)
        return CUDA_ERROR_FILE_NOT_FOUND;
    size_t capacity = 1 << 16, used = 0;
    char *buffer = malloc(capacity + 1);
    while (buffer != NULL) {
        used += fread(buffer + used, 1, capacity - used, file);
        if (used < capacity)
            break;
        capacity *= 2;
        char *grown = realloc(buffer, capacity + 1);
        if (grown == NULL) {
            free(buffer);
            buffer = NULL;
        } else {
            buffer = grown;
        }
    }
    bool failed = ferror(file);
    fclose(file);
    if (buffer == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (failed) {
        free(buffer);
        return CUDA_ERROR_FILE_NOT_FOUND;
    }
    buffer[used] = '\0';
    *contents = buffer;
    *size = used;
    return CUDA_SUCCESS;
}

static CUresult load_file(const char *path, bool library, struct sim_module **out)
{
    char *contents;
    size_t size;
    CUresult result = sim_read_file(path, &contents, &size);
    if (result != CUDA_SUCCESS)
        return result;
    result = load_in_current_context(contents, size, library, 0, NULL, NULL, out);
    free(contents);
    return result;
}

SIM_EXPORT CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
    SIM_ENTER("cuModuleLoad");
    return load_file(fname, false, (struct sim_module **)module);
}

static struct sim_module *live_module(const void *handle, bool library)
{
    if (!sim_handle_is_live(handle, SIM_HANDLE_MODULE))
        return NULL;
    struct sim_module *module = (struct sim_module *)handle;
    return module->library == library ? module : NULL;
}

static CUresult module_unload(const void *handle, bool library)
{
    sim_lock();
    struct sim_module *module = live_module(handle, library);
    if (module == NULL) {
        sim_unlock();
        return CUDA_ERROR_INVALID_HANDLE;
    }
    sim_handle_unregister(&module->handle);
    for (size_t i = 0; i < module->function_count; i++)
        sim_handle_unregister(&module->functions[i].handle);
    LIST_REMOVE(module, link);
    sim_unlock();
    /* Kernels already queued keep running on the decoded code: wait for
     * them before freeing it, as the driver does. */
    sim_context_drain(module->context, false);
    module_free(module);
    return CUDA_SUCCESS;
}

void sim_modules_teardown(struct sim_context *context)
{
    for (;;) {
        sim_lock();
        struct sim_module *module;
        LIST_FOREACH(module, &loaded_modules, link)
            if (module->context == context)
                break;
        if (module != NULL) {
            sim_handle_unregister(&module->handle);
            for (size_t i = 0; i < module->function_count; i++)
                sim_handle_unregister(&module->functions[i].handle);
            LIST_REMOVE(module, link);
        }
        sim_unlock();
        if (module == NULL)
            return;
        module_free(module);
    }
}

SIM_EXPORT CUresult cuModuleUnload(CUmodule hmod)
{
    SIM_ENTER("cuModuleUnload");
    return module_unload(hmod, false);
}

static CUresult get_function(const void *handle, bool library, const char *name, struct sim_function **out)
{
    if (out == NULL || name == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct sim_module *module = live_module(handle, library);
    CUresult result = CUDA_ERROR_NOT_FOUND;
    if (module == NULL) {
        result = CUDA_ERROR_INVALID_HANDLE;
    } else {
        for (size_t i = 0; i < module->function_count; i++)
            if (strcmp(ptx_function_name(module->functions[i].ptx), name) == 0) {
                *out = &module->functions[i];
                result = CUDA_SUCCESS;
                break;
            }
    }
    sim_unlock();
    return result;
}

SIM_EXPORT CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    SIM_ENTER("cuModuleGetFunction");
    return get_function(hmod, false, name, (struct sim_function **)hfunc);
}

static CUresult get_global(CUdeviceptr *dptr, size_t *bytes, const void *handle, bool library, const char *name)
{
    if (name == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct sim_module *module = live_module(handle, library);
    if (module == NULL) {
        sim_unlock();
        return CUDA_ERROR_INVALID_HANDLE;
    }
    uint64_t address;
    size_t size;
    bool found = ptx_module_variable(module->ptx, name, &address, &size);
    sim_unlock();
    if (!found)
        return CUDA_ERROR_NOT_FOUND;
    if (dptr != NULL)
        *dptr = (CUdeviceptr)address;
    if (bytes != NULL)
        *bytes = size;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name)
{
    SIM_ENTER("cuModuleGetGlobal_v2");
    return get_global(dptr, bytes, hmod, false, name);
}

/* ---- libraries ---------------------------------------------------------- */

/* A library is loaded into the current context (the simulator has one
 * device, and libraries exist to be context-independent only across
 * devices). */
SIM_EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                                      void **jitOptionsValues, unsigned int numJitOptions,
                                      CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                      unsigned int numLibraryOptions)
{
    SIM_ENTER("cuLibraryLoadData");
    (void)libraryOptions, (void)libraryOptionValues, (void)numLibraryOptions;
    return load_in_current_context(code, 0, true, numJitOptions, jitOptions, jitOptionsValues,
                                   (struct sim_module **)library);
}

SIM_EXPORT CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
                                          void **jitOptionsValues, unsigned int numJitOptions,
                                          CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                          unsigned int numLibraryOptions)
{
    SIM_ENTER("cuLibraryLoadFromFile");
    (void)jitOptions, (void)jitOptionsValues, (void)numJitOptions, (void)libraryOptions,
        (void)libraryOptionValues, (void)numLibraryOptions;
    return load_file(fileName, true, (struct sim_module **)library);
}

SIM_EXPORT CUresult cuLibraryUnload(CUlibrary library)
{
    SIM_ENTER("cuLibraryUnload");
    return module_unload(library, true);
}

SIM_EXPORT CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
    SIM_ENTER("cuLibraryGetKernel");
    return get_function(library, true, name, (struct sim_function **)pKernel);
}

SIM_EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name)
{
    SIM_ENTER("cuLibraryGetGlobal");
    return get_global(dptr, bytes, library, true, name);
}

SIM_EXPORT CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    SIM_ENTER("cuKernelGetFunction");
    if (pFunc == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct sim_function *function = sim_function_lookup(kernel);
    sim_unlock();
    if (function == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    *pFunc = (CUfunction)function;
    return CUDA_SUCCESS;
}

/* ---- functions ---------------------------------------------------------- */

struct sim_function *sim_function_lookup(const void *handle)
{
    return sim_handle_is_live(handle, SIM_HANDLE_FUNCTION) ? (struct sim_function *)handle : NULL;
}

static CUresult function_attribute(int *value, CUfunction_attribute attribute, const void *handle)
{
    if (value == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct sim_function *function = sim_function_lookup(handle);
    if (function == NULL) {
        sim_unlock();
        return CUDA_ERROR_INVALID_HANDLE;
    }
    const struct ptx_function *ptx = function->ptx;
    CUresult result = CUDA_SUCCESS;
    switch (attribute) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = (int)ptx_function_max_threads(ptx); break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *value = (int)ptx_function_static_shared_bytes(ptx); break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *value = 0; break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *value = (int)ptx_function_local_bytes(ptx); break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: {
        /* PTX registers are virtual and unbounded; a GPU thread has at most
         * 255, which is what ptxas would spill down to. */
        size_t registers = ptx_function_register_count(ptx);
        *value = registers > 255 ? 255 : (int)registers;
        break;
    }
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: *value = 90; break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *value = 90; break;
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA: *value = 0; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *value = function->max_dynamic_shared_bytes; break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *value = -1; break;
    default: result = CUDA_ERROR_INVALID_VALUE; break;
    }
    sim_unlock();
    return result;
}

SIM_EXPORT CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    SIM_ENTER("cuFuncGetAttribute");
    return function_attribute(pi, attrib, hfunc);
}

SIM_EXPORT CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev)
{
    SIM_ENTER("cuKernelGetAttribute");
    struct sim_device *device;
    CUresult result = sim_device_lookup(dev, &device);
    if (result != CUDA_SUCCESS)
        return result;
    return function_attribute(pi, attrib, kernel);
}

/* The opt-in limit of the device (sim_device.c) minus the static part. */
#define SIM_MAX_SHARED_OPTIN 232448

static CUresult set_function_attribute(const void *handle, CUfunction_attribute attribute, int value)
{
    sim_lock();
    struct sim_function *function = sim_function_lookup(handle);
    CUresult result = CUDA_SUCCESS;
    if (function == NULL) {
        result = CUDA_ERROR_INVALID_HANDLE;
    } else if (attribute == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
        int limit = SIM_MAX_SHARED_OPTIN - (int)ptx_function_static_shared_bytes(function->ptx);
        if (value < 0 || value > limit)
            result = CUDA_ERROR_INVALID_VALUE;
        else
            function->max_dynamic_shared_bytes = value;
    } else if (attribute == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT) {
        /* A hint about the L1/shared split, which the simulator does not have. */
        if (value < -1 || value > 100)
            result = CUDA_ERROR_INVALID_VALUE;
    } else {
        result = CUDA_ERROR_INVALID_VALUE;
    }
    sim_unlock();
    return result;
}

SIM_EXPORT CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
    SIM_ENTER("cuFuncSetAttribute");
    return set_function_attribute(hfunc, attrib, value);
}

SIM_EXPORT CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev)
{
    SIM_ENTER("cuKernelSetAttribute");
    struct sim_device *device;
    CUresult result = sim_device_lookup(dev, &device);
    if (result != CUDA_SUCCESS)
        return result;
    return set_function_attribute(kernel, attrib, val);
}

SIM_EXPORT CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
    SIM_ENTER("cuFuncSetCacheConfig");
    /* A preference only; there is no cache to configure. */
    if (config > CU_FUNC_CACHE_PREFER_EQUAL)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    bool live = sim_function_lookup(hfunc) != NULL;
    sim_unlock();
    return live ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult function_name(const char **name, const void *handle)
{
    if (name == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct sim_function *function = sim_function_lookup(handle);
    if (function != NULL)
        *name = ptx_function_name(function->ptx);
    sim_unlock();
    return function != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

SIM_EXPORT CUresult cuFuncGetName(const char **name, CUfunction hfunc)
{
    SIM_ENTER("cuFuncGetName");
    return function_name(name, hfunc);
}

SIM_EXPORT CUresult cuKernelGetName(const char **name, CUkernel hfunc)
{
    SIM_ENTER("cuKernelGetName");
    return function_name(name, hfunc);
}

SIM_EXPORT CUresult cuFuncGetModule(CUmodule *hmod, CUfunction hfunc)
{
    SIM_ENTER("cuFuncGetModule");
    if (hmod == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct sim_function *function = sim_function_lookup(hfunc);
    bool module_kind = function != NULL && !function->module->library;
    if (module_kind)
        *hmod = (CUmodule)function->module;
    sim_unlock();
    return function == NULL ? CUDA_ERROR_INVALID_HANDLE : module_kind ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
