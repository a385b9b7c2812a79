/* A stand-in for libgpucache.so's constructor: loads the configuration the
 * way the library does, so LD_PRELOAD behaviour is tested on this branch. */
#include "gpucache_config.h"

__attribute__((constructor)) static void load_configuration(void)
{
    gpucache_config_load_or_exit();
}
