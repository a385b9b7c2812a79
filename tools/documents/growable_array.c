#include "growable_array.h"

#include <stdint.h>
#include <stdlib.h>

bool growable_array_grow(void **array, size_t *capacity, size_t needed, size_t element_size)
{
    if (needed <= *capacity)
        return true;
    size_t grown = *capacity ? *capacity : 16;
    while (grown < needed) {
        if (grown > SIZE_MAX / 2)
            return false;
        grown *= 2;
    }
    if (grown > SIZE_MAX / element_size)
        return false;
    void *bigger = realloc(*array, grown * element_size);
    if (!bigger)
        return false;
    *array = bigger;
    *capacity = grown;
    return true;
}
