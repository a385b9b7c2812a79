/* The first of two libraries defining `which_library`; it asks dlsym for the
 * next definition, which must be the second library's whether or not a
 * dlsym hook stands in between. */
#include <dlfcn.h>

char which_library(void)
{
    return 'A';
}

char next_library(void)
{
    char (*next)(void) = (char (*)(void))dlsym(RTLD_NEXT, "which_library");
    return next ? next() : '?';
}
