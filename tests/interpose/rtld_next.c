/* dlsym(RTLD_NEXT) is resolved relative to its caller: through the library's
 * dlsym hook, the first library must still find the second one's function,
 * not its own (which a hook that calls the real dlsym without a tail call
 * would return). */
#include "test_support.h"

char next_library(void);
int second_library_loaded(void);

int main(void)
{
    CHECK(second_library_loaded(), "the second library is not loaded");
    char found = next_library();
    CHECK(found == 'B', "dlsym(RTLD_NEXT) from the first library found '%c'", found);
    return 0;
}
