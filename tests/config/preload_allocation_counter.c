/* Like preload_config.c, but counts heap allocations made while the
 * configuration loads: the library's constructor runs in every process it is
 * preloaded into and must not touch the heap. Exits 3 if it did. */
#include "gpucache_config.h"

#include <stddef.h>
#include <unistd.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);

static int counting;
static int allocations;

void *malloc(size_t size)
{
    allocations += counting;
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size)
{
    allocations += counting;
    return __libc_calloc(count, size);
}

void *realloc(void *pointer, size_t size)
{
    allocations += counting;
    return __libc_realloc(pointer, size);
}

__attribute__((constructor)) static void load_configuration_counting(void)
{
    counting = 1;
    gpucache_config_load_or_exit();
    counting = 0;
    if (allocations != 0) {
        static const char message[] = "configuration loading allocated\n";
        (void)!write(STDERR_FILENO, message, sizeof message - 1);
        _exit(3);
    }
}
