/* Fat binary reader (fatbin.h). The layout is the one nvcc and cuobjdump
 * use: a 16-byte container header (magic 0xBA55ED50, version 1, header
 * size, size of the entries), then entries, each a header followed by its
 * payload. The entry header says the kind (1 PTX, 2 ELF/SASS), the target
 * architecture, and whether the payload is compressed. Decompression is
 * done by liblz4 and libzstd. */
#include "fatbin.h"

#include <lz4.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define WRAPPER_MAGIC 0x466243b1u
#define CONTAINER_MAGIC 0xba55ed50u

#define ENTRY_KIND_PTX 1
#define ENTRY_KIND_ELF 2

#define FLAG_COMPRESSED_LZ4 0x2000ull
#define FLAG_COMPRESSED_ZSTD 0x8000ull

struct wrapper {
    uint32_t magic;
    uint32_t version;
    const void *data;
    const void *filename_or_fatbins;
};

struct container_header {
    uint32_t magic;
    uint16_t version;
    uint16_t header_size;
    uint64_t entries_size;
};

struct entry_header {
    uint16_t kind;
    uint16_t version;
    uint32_t header_size;
    uint64_t payload_size;
    uint32_t compressed_size;
    uint32_t options_offset;
    uint16_t minor;
    uint16_t major;
    uint32_t arch;
    uint32_t name_offset;
    uint32_t name_length;
    uint64_t flags;
    uint64_t reserved;
    uint64_t decompressed_size;
};

/* Compares byte by byte, so a PTX string shorter than a magic number is
 * never read past its end. */
bool fatbin_starts_with(const void *image, const void *prefix, size_t length)
{
    const unsigned char *bytes = image, *expected = prefix;
    for (size_t i = 0; i < length; i++)
        if (bytes[i] != expected[i])
            return false;
    return true;
}

static bool has_magic(const void *image, uint32_t magic)
{
    unsigned char bytes[4];
    memcpy(bytes, &magic, 4); /* both magics are stored little-endian */
    return fatbin_starts_with(image, bytes, 4);
}

static const struct container_header *container_of(const void *image)
{
    if (has_magic(image, WRAPPER_MAGIC)) {
        const struct wrapper *wrapper = image;
        if (wrapper->data == NULL)
            return NULL;
        return has_magic(wrapper->data, CONTAINER_MAGIC) ? wrapper->data : NULL;
    }
    return has_magic(image, CONTAINER_MAGIC) ? image : NULL;
}

bool fatbin_is_fatbin(const void *image)
{
    return image != NULL && container_of(image) != NULL;
}

static void append_arch(char *list, size_t size, const char *prefix, unsigned arch)
{
    size_t used = strlen(list);
    if (used + 16 < size)
        snprintf(list + used, size - used, "%s%s_%u", used ? " " : "", prefix, arch);
}

/* The entry's payload as text; NULL with `error` filled on failure. */
static char *entry_text(const struct entry_header *entry, const unsigned char *payload, size_t *length,
                        char *error, size_t error_size)
{
    size_t compressed = entry->compressed_size ? entry->compressed_size : entry->payload_size;
    if (compressed > entry->payload_size)
        compressed = entry->payload_size;
    if ((entry->flags & (FLAG_COMPRESSED_LZ4 | FLAG_COMPRESSED_ZSTD)) == 0) {
        char *text = malloc(entry->payload_size + 1);
        if (text == NULL)
            return NULL;
        memcpy(text, payload, entry->payload_size);
        text[entry->payload_size] = '\0';
        *length = strnlen(text, entry->payload_size);
        return text;
    }
    size_t expected = entry->decompressed_size;
    if (expected == 0 || expected > ((size_t)1 << 31)) {
        snprintf(error, error_size, "fat binary PTX entry has a bad decompressed size %zu", expected);
        return NULL;
    }
    char *text = malloc(expected + 1);
    if (text == NULL)
        return NULL;
    size_t produced;
    if (entry->flags & FLAG_COMPRESSED_ZSTD) {
        produced = ZSTD_decompress(text, expected, payload, compressed);
        if (ZSTD_isError(produced)) {
            snprintf(error, error_size, "fat binary PTX entry: zstd: %s", ZSTD_getErrorName(produced));
            free(text);
            return NULL;
        }
    } else {
        int result = LZ4_decompress_safe((const char *)payload, text, (int)compressed, (int)expected);
        if (result < 0) {
            snprintf(error, error_size, "fat binary PTX entry: LZ4 data is corrupt");
            free(text);
            return NULL;
        }
        produced = (size_t)result;
    }
    text[produced] = '\0';
    *length = strnlen(text, produced);
    return text;
}

enum fatbin_result fatbin_select_ptx(const void *image, size_t size, unsigned max_arch, char **ptx,
                                     size_t *ptx_length, unsigned *chosen_arch, char *sass_arches,
                                     size_t sass_arches_size, char *ptx_arches, size_t ptx_arches_size,
                                     char *error, size_t error_size)
{
    if (sass_arches_size)
        sass_arches[0] = '\0';
    if (ptx_arches_size)
        ptx_arches[0] = '\0';
    const struct container_header *container = image != NULL ? container_of(image) : NULL;
    if (container == NULL)
        return FATBIN_NOT_FATBIN;
    if (container->header_size < sizeof *container ||
        (size != 0 && (const void *)container == image &&
         container->header_size + container->entries_size > size)) {
        snprintf(error, error_size, "fat binary header is corrupt");
        return FATBIN_CORRUPT;
    }
    const unsigned char *cursor = (const unsigned char *)container + container->header_size;
    const unsigned char *end = cursor + container->entries_size;
    const struct entry_header *best = NULL;
    while (cursor + sizeof(struct entry_header) <= end) {
        const struct entry_header *entry = (const struct entry_header *)cursor;
        if (entry->header_size < sizeof *entry || cursor + entry->header_size + entry->payload_size > end) {
            snprintf(error, error_size, "fat binary entry header is corrupt");
            return FATBIN_CORRUPT;
        }
        if (entry->kind == ENTRY_KIND_PTX) {
            if (entry->arch <= max_arch) {
                if (best == NULL || entry->arch > best->arch)
                    best = entry;
            } else {
                append_arch(ptx_arches, ptx_arches_size, "compute", entry->arch);
            }
        } else if (entry->kind == ENTRY_KIND_ELF) {
            append_arch(sass_arches, sass_arches_size, "sm", entry->arch);
        }
        cursor += entry->header_size + entry->payload_size;
    }
    if (best == NULL)
        return FATBIN_NO_PTX;
    *ptx = entry_text(best, (const unsigned char *)best + best->header_size, ptx_length, error, error_size);
    if (*ptx == NULL) {
        if (error[0] == '\0')
            snprintf(error, error_size, "out of memory");
        return FATBIN_CORRUPT;
    }
    *chosen_arch = best->arch;
    return FATBIN_FOUND;
}
