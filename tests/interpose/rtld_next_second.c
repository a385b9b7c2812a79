/* The second definition of `which_library` (see rtld_next_first.c). */
char which_library(void)
{
    return 'B';
}

/* Referenced by the test program so the linker keeps this library. */
int second_library_loaded(void)
{
    return 1;
}
