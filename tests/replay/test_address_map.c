/* The readers' address map: every key found again after growth, values
 * replaced in place, absent keys absent, including device-like addresses
 * whose low bits are all zero. */
#include <criterion/criterion.h>

#include "address_map.h"

static struct address_map map;

static void setup(void)
{
    address_map_init(&map);
}

static void release(void)
{
    address_map_destroy(&map);
}

TestSuite(address_map, .init = setup, .fini = release);

Test(address_map, finds_every_key_after_growing)
{
    enum { COUNT = 100000 };
    for (uint32_t index = 0; index < COUNT; index++)
        cr_assert(address_map_put(&map, (uint64_t)(index + 1) << 27, index));
    cr_assert_eq(map.count, COUNT);
    for (uint32_t index = 0; index < COUNT; index++) {
        uint32_t value = UINT32_MAX;
        cr_assert(address_map_get(&map, (uint64_t)(index + 1) << 27, &value));
        cr_assert_eq(value, index);
    }
    uint32_t value;
    cr_assert_not(address_map_get(&map, (uint64_t)(COUNT + 1) << 27, &value));
    cr_assert_not(address_map_get(&map, 1, &value));
}

Test(address_map, replaces_the_value_of_a_present_key)
{
    cr_assert(address_map_put(&map, 0x7f0000000000, 1));
    cr_assert(address_map_put(&map, 0x7f0000000000, 2));
    uint32_t value = 0;
    cr_assert(address_map_get(&map, 0x7f0000000000, &value));
    cr_assert_eq(value, 2);
    cr_assert_eq(map.count, 1);
}

Test(address_map, an_empty_map_finds_nothing)
{
    uint32_t value;
    cr_assert_not(address_map_get(&map, 0, &value));
    cr_assert_not(address_map_get(&map, 0x7f0000000000, &value));
}
