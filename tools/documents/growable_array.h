/* Capacity growth for the readers' arrays (events, stacks, tables). */
#ifndef GPUCACHE_GROWABLE_ARRAY_H
#define GPUCACHE_GROWABLE_ARRAY_H

#include <stdbool.h>
#include <stddef.h>

/* Makes `*array` (of `*capacity` elements of `element_size` bytes) hold at
 * least `needed` elements, doubling so appends stay amortised O(1). False,
 * with the array untouched, when host memory runs out or the size overflows. */
bool growable_array_grow(void **array, size_t *capacity, size_t needed, size_t element_size);

/* The common case, room already there, inline: readers reserve per value. */
static inline bool growable_array_reserve(void **array, size_t *capacity, size_t needed,
                                          size_t element_size)
{
    return needed <= *capacity || growable_array_grow(array, capacity, needed, element_size);
}

#endif
