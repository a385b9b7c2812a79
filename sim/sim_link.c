/* The driver's JIT linker: cuLinkCreate, cuLinkAddData, cuLinkAddFile,
 * cuLinkComplete and cuLinkDestroy.
 *
 * The simulator runs PTX, so it links PTX: each input is a PTX text, or a
 * fat binary that contributes the PTX module loading would pick from it.
 * cuLinkComplete links the texts once (with placeholder addresses) to
 * report unresolved or duplicate symbols where the driver does, and returns
 * an image of the simulator's own format that cuModuleLoadData accepts: a
 * header, the texts' lengths, then the texts. Loading links them again,
 * because only then do the variables get device memory of a context. JIT
 * options are accepted and ignored, except the error log buffer, which gets
 * the line stderr gets. */
#include "sim_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx/fatbin.h"
#include "ptx/ptx.h"

/* Not text, not a fat binary, not ELF: the first byte tells them apart. */
static const char link_image_magic[16] = "\177gpusim-linked1";

struct link_image_header {
    char magic[16];
    uint64_t count;
    /* then count uint64_t lengths, then the texts, each NUL-terminated */
};

struct sim_link {
    struct sim_handle handle;
    struct ptx_source *texts; /* owned copies */
    size_t count;
    /* cuLinkCreate's options, for the error log of cuLinkComplete. */
    unsigned int option_count;
    CUjit_option *options;
    void **values;
    void *image; /* cuLinkComplete's, freed by cuLinkDestroy */
};

bool sim_link_image_is(const void *image)
{
    return image != NULL && fatbin_starts_with(image, link_image_magic, sizeof link_image_magic);
}

CUresult sim_link_image_sources(const void *image, size_t image_size, struct ptx_source **sources,
                                size_t *count)
{
    const struct link_image_header *header = image;
    if (header->count == 0 || header->count > (1u << 20) ||
        (image_size != 0 && image_size < sizeof *header + header->count * sizeof(uint64_t)))
        return CUDA_ERROR_INVALID_IMAGE;
    const uint64_t *lengths = (const uint64_t *)(header + 1);
    const char *text = (const char *)(lengths + header->count);
    struct ptx_source *list = calloc(header->count, sizeof *list);
    if (list == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; i < header->count; i++) {
        list[i] = (struct ptx_source){text, lengths[i]};
        text += lengths[i] + 1;
        if (image_size != 0 && (size_t)(text - (const char *)image) > image_size) {
            free(list);
            return CUDA_ERROR_INVALID_IMAGE;
        }
    }
    *sources = list;
    *count = header->count;
    return CUDA_SUCCESS;
}

static struct sim_link *live_link(CUlinkState state)
{
    sim_lock();
    bool live = sim_handle_is_live(state, SIM_HANDLE_LINK);
    sim_unlock();
    return live ? (struct sim_link *)state : NULL;
}

static CUresult link_create(unsigned int option_count, CUjit_option *options, void **values, CUlinkState *out)
{
    if (out == NULL || (option_count > 0 && (options == NULL || values == NULL)))
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_link *link = calloc(1, sizeof *link);
    if (link == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    /* The log buffers are the caller's until cuLinkDestroy; the option
     * arrays need not outlive this call. */
    if (option_count > 0) {
        link->options = malloc(option_count * sizeof *link->options);
        link->values = malloc(option_count * sizeof *link->values);
        if (link->options == NULL || link->values == NULL) {
            free(link->options);
            free(link->values);
            free(link);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        memcpy(link->options, options, option_count * sizeof *options);
        memcpy(link->values, values, option_count * sizeof *values);
        link->option_count = option_count;
    }
    sim_lock();
    sim_handle_register(&link->handle, SIM_HANDLE_LINK);
    sim_unlock();
    *out = (CUlinkState)link;
    return CUDA_SUCCESS;
}

SIM_EXPORT_SAME_VARIANTS(cuLinkCreate, cuLinkCreate_v2,
                         (unsigned int numOptions, CUjit_option *options, void **optionValues,
                          CUlinkState *stateOut),
                         link_create(numOptions, options, optionValues, stateOut))

/* Says why an input cannot be linked, on stderr and in the error log of
 * the input's options (or else the link's). */
static void input_error(const struct sim_link *link, unsigned int option_count, CUjit_option *options,
                        void **values, const char *message)
{
    fprintf(stderr, "gpusim: %s\n", message);
    if (option_count > 0)
        sim_write_jit_error_log(option_count, options, values, message);
    else
        sim_write_jit_error_log(link->option_count, link->options, link->values, message);
}

static CUresult add_text(struct sim_link *link, const char *text, size_t length)
{
    char *copy = malloc(length + 1);
    struct ptx_source *grown = realloc(link->texts, (link->count + 1) * sizeof *grown);
    if (grown != NULL)
        link->texts = grown;
    if (copy == NULL || grown == NULL) {
        free(copy);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memcpy(copy, text, length);
    copy[length] = '\0';
    link->texts[link->count++] = (struct ptx_source){copy, length};
    return CUDA_SUCCESS;
}

static CUresult link_add_data(CUlinkState state, CUjitInputType type, const void *data, size_t size,
                              unsigned int option_count, CUjit_option *options, void **values)
{
    struct sim_link *link = live_link(state);
    if (link == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (data == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    switch (type) {
    case CU_JIT_INPUT_PTX: {
        /* The size may count the terminating NUL, or be 0 for a C string. */
        size_t length = size != 0 ? strnlen(data, size) : strlen(data);
        return add_text(link, data, length);
    }
    case CU_JIT_INPUT_FATBINARY: {
        if (!fatbin_is_fatbin(data)) {
            input_error(link, option_count, options, values, "cuLinkAddData: the input is not a fat binary");
            return CUDA_ERROR_INVALID_IMAGE;
        }
        char *owned = NULL;
        const char *text;
        size_t length;
        CUresult result = sim_image_ptx(data, size, option_count, options, values, &owned, &text, &length);
        if (result == CUDA_SUCCESS)
            result = add_text(link, text, length);
        free(owned);
        return result;
    }
    case CU_JIT_INPUT_CUBIN:
    case CU_JIT_INPUT_OBJECT:
    case CU_JIT_INPUT_LIBRARY:
    case CU_JIT_INPUT_NVVM:
        input_error(link, option_count, options, values,
                    "cuLink: the simulator links PTX only (CU_JIT_INPUT_PTX, or CU_JIT_INPUT_FATBINARY with "
                    "PTX inside); cubins, objects, libraries and NVVM IR hold code it cannot run");
        return CUDA_ERROR_NOT_SUPPORTED;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

SIM_EXPORT_SAME_VARIANTS(cuLinkAddData, cuLinkAddData_v2,
                         (CUlinkState state, CUjitInputType type, void *data, size_t size, const char *name,
                          unsigned int numOptions, CUjit_option *options, void **optionValues),
                         ((void)name, link_add_data(state, type, data, size, numOptions, options, optionValues)))

static CUresult link_add_file(CUlinkState state, CUjitInputType type, const char *path, unsigned int option_count,
                              CUjit_option *options, void **values)
{
    if (live_link(state) == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    char *contents;
    size_t size;
    CUresult result = sim_read_file(path, &contents, &size);
    if (result != CUDA_SUCCESS)
        return result;
    result = link_add_data(state, type, contents, size, option_count, options,
                           values);
    free(contents);
    return result;
}

SIM_EXPORT_SAME_VARIANTS(cuLinkAddFile, cuLinkAddFile_v2,
                         (CUlinkState state, CUjitInputType type, const char *path, unsigned int numOptions,
                          CUjit_option *options, void **optionValues),
                         link_add_file(state, type, path, numOptions, options, optionValues))

/* Addresses for the trial link, which touches no memory: distinct and
 * aligned, never dereferenced. */
static uint64_t placeholder_address(void *context, const char *name, size_t size, size_t alignment,
                                    const void *initial_bytes, bool constant)
{
    (void)name, (void)alignment, (void)initial_bytes, (void)constant;
    uint64_t *next = context;
    uint64_t address = *next;
    *next += (size + 511) / 512 * 512 + 512;
    return address;
}

/* Tells the caller's info log, if any, what was linked: there is no
 * compilation to report, but a caller may print the log. */
static void write_info_log(const struct sim_link *link)
{
    char *buffer = NULL;
    size_t size = 0;
    for (unsigned int i = 0; i < link->option_count; i++) {
        if (link->options[i] == CU_JIT_INFO_LOG_BUFFER)
            buffer = link->values[i];
        else if (link->options[i] == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)
            size = (size_t)(uintptr_t)link->values[i];
    }
    if (buffer != NULL && size > 0)
        snprintf(buffer, size, "gpusim: linked %zu PTX text%s", link->count, link->count == 1 ? "" : "s");
}

static CUresult link_complete(CUlinkState state, void **image_out, size_t *size_out)
{
    struct sim_link *link = live_link(state);
    if (link == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (image_out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (link->count == 0) {
        input_error(link, 0, NULL, NULL, "cuLinkComplete: nothing was added to link");
        return CUDA_ERROR_INVALID_VALUE;
    }
    char error[320] = "";
    enum ptx_link_failure failure = PTX_LINK_INVALID;
    uint64_t next_address = 1ull << 40;
    struct ptx_module *trial = ptx_module_link(link->texts, link->count, placeholder_address, &next_address,
                                               error, sizeof error, &failure);
    if (trial == NULL) {
        CUresult result = sim_link_failure_result((int)failure, error);
        fprintf(stderr, "gpusim: cannot link PTX: %s (%s)\n", error, sim_error_name(result));
        sim_write_jit_error_log(link->option_count, link->options, link->values, error);
        return result;
    }
    ptx_module_free(trial);
    write_info_log(link);
    size_t size = sizeof(struct link_image_header) + link->count * sizeof(uint64_t);
    for (size_t i = 0; i < link->count; i++)
        size += link->texts[i].length + 1;
    unsigned char *image = malloc(size);
    if (image == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct link_image_header *header = (struct link_image_header *)image;
    memcpy(header->magic, link_image_magic, sizeof header->magic);
    header->count = link->count;
    uint64_t *lengths = (uint64_t *)(header + 1);
    char *text = (char *)(lengths + link->count);
    for (size_t i = 0; i < link->count; i++) {
        lengths[i] = link->texts[i].length;
        memcpy(text, link->texts[i].text, link->texts[i].length + 1);
        text += link->texts[i].length + 1;
    }
    free(link->image);
    link->image = image;
    *image_out = image;
    if (size_out != NULL)
        *size_out = size;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut)
{
    SIM_ENTER("cuLinkComplete");
    return link_complete(state, cubinOut, sizeOut);
}

SIM_EXPORT CUresult cuLinkDestroy(CUlinkState state)
{
    SIM_ENTER("cuLinkDestroy");
    sim_lock();
    bool live = sim_handle_is_live(state, SIM_HANDLE_LINK);
    struct sim_link *link = (struct sim_link *)state;
    if (live)
        sim_handle_unregister(&link->handle);
    sim_unlock();
    if (!live)
        return CUDA_ERROR_INVALID_HANDLE;
    for (size_t i = 0; i < link->count; i++)
        free((char *)link->texts[i].text);
    free(link->texts);
    free(link->options);
    free(link->values);
    free(link->image);
    free(link);
    return CUDA_SUCCESS;
}
