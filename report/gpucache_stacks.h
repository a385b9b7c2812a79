/* Call stacks of the program's allocations and frees: captured on the
 * allocation paths while recording is on, interned so that an event keeps
 * one 32-bit id, and turned into PyTorch's frames ({filename, line, name})
 * only when a snapshot or trace is written. */
#ifndef GPUCACHE_STACKS_H
#define GPUCACHE_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The deepest stack kept; a configuration asks for at most this many. */
#define GPUCACHE_STACK_MAX_FRAMES 64

struct gpucache_stack_table;

/* An empty table; NULL when host memory is exhausted. */
struct gpucache_stack_table *gpucache_stack_table_create(void);

/* Frees the table and every stack in it. */
void gpucache_stack_table_destroy(struct gpucache_stack_table *table);

/* The id of the stack `frames[0..depth)` (innermost first), adding it when
 * new: 0 for an empty stack or when host memory ran out. A stack seen before
 * costs a hash and a compare, no allocation. Thread-safe. */
uint32_t gpucache_stack_table_intern(struct gpucache_stack_table *table, const uintptr_t *frames,
                                     size_t depth);

/* The frames of stack `id` (innermost first) and their count; 0 for an
 * unknown id. The frames stay valid as long as the table. */
size_t gpucache_stack_table_get(struct gpucache_stack_table *table, uint32_t id,
                                const uintptr_t **frames);

/* Stacks interned so far. */
size_t gpucache_stack_table_count(struct gpucache_stack_table *table);

/* Prepares capture once, before the first capture and outside any lock:
 * the innermost frames inside the module holding `self` (the library's own
 * code) will be left out; NULL leaves out none. */
void gpucache_stack_capture_prepare(const void *self);

/* Captures the caller's return addresses, innermost first, without the
 * library's own innermost frames; at most `depth` kept. Returns the count. */
size_t gpucache_stack_capture(uintptr_t *frames, size_t depth);

/* One frame written out: PyTorch's fields. */
struct gpucache_frame {
    const char *name;     /* the function, demangled; "module+0x1234" without symbols */
    const char *filename; /* the source file, or the module's path without line data */
    unsigned line;        /* 0 when unknown */
};

struct gpucache_symbolizer;

/* A symbolizer of this process's code (its modules as mapped now); NULL
 * when it cannot be set up. Slow: for write time only. */
struct gpucache_symbolizer *gpucache_symbolizer_create(void);

/* Frees the symbolizer and every frame it returned. */
void gpucache_symbolizer_destroy(struct gpucache_symbolizer *symbolizer);

/* The frame of return address `address`, cached per address; valid until
 * the symbolizer is destroyed. */
const struct gpucache_frame *gpucache_symbolize(struct gpucache_symbolizer *symbolizer,
                                               uintptr_t address);

#endif
