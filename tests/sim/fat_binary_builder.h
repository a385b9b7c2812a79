/* Fat binary containers for tests that feed the simulated driver or runtime
 * what nvcc embeds, without nvcc: a 16-byte container header, then entries
 * of a 64-byte header and a payload (kind 1 PTX, 2 ELF). */
#ifndef FAT_BINARY_BUILDER_H
#define FAT_BINARY_BUILDER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* One entry: its kind (1 PTX, 2 ELF), architecture (90 for sm_90 or
 * compute_90) and payload text. */
struct fat_entry {
    uint16_t kind;
    uint32_t arch;
    const char *payload;
};

/* Builds a fat binary container in `out` with uncompressed entries, each
 * NUL-terminated payload padded to 8 bytes; returns its size (0 when it
 * does not fit). */
static inline size_t build_fat_binary(unsigned char *out, size_t capacity, const struct fat_entry *entries,
                                       unsigned count)
{
    size_t used = 16;
    for (unsigned i = 0; i < count; i++) {
        size_t length = strlen(entries[i].payload) + 1, padded = (length + 7) / 8 * 8;
        if (used + 64 + padded > capacity)
            return 0;
        unsigned char *header = out + used;
        memset(header, 0, 64 + padded);
        uint16_t version = 0x101;
        uint32_t header_size = 64;
        uint64_t payload_size = padded, flags = 0x11;
        memcpy(header, &entries[i].kind, 2);
        memcpy(header + 2, &version, 2);
        memcpy(header + 4, &header_size, 4);
        memcpy(header + 8, &payload_size, 8);
        memcpy(header + 28, &entries[i].arch, 4);
        memcpy(header + 40, &flags, 8);
        memcpy(header + 64, entries[i].payload, length);
        used += 64 + padded;
    }
    uint32_t magic = 0xba55ed50u;
    uint16_t version = 1, header_size = 16;
    uint64_t entries_size = used - 16;
    memcpy(out, &magic, 4);
    memcpy(out + 4, &version, 2);
    memcpy(out + 6, &header_size, 2);
    memcpy(out + 8, &entries_size, 8);
    return used;
}

#endif
