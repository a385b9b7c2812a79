/* For suites that run with the simulated device's race detector on: its
 * switch, the check of how many races it reported, and host functions that
 * hold a stream or signal the host, so tests can order work in time without
 * ordering it by CUDA's rules. */
#ifndef RACECHECK_TEST_SUPPORT_H
#define RACECHECK_TEST_SUPPORT_H

#include <stdatomic.h>
#include <stdlib.h>

#include "sim_test_support.h"

/* A suite's .init: the detector reads GPUSIM_RACECHECK at cuInit. */
static inline void racecheck_on(void)
{
    setenv("GPUSIM_RACECHECK", "1", 1);
}

/* Checks the races reported since the last check, then forgets them, so the
 * test process still exits with status 0. */
#define EXPECT_RACES(expected)                                                                 \
    do {                                                                                       \
        unsigned long long races_ = gpusim_race_count();                                       \
        gpusim_forget_races();                                                                 \
        cr_assert_eq(races_, (unsigned long long)(expected), "%llu races reported, expected %d", \
                     races_, (expected));                                                      \
    } while (0)

/* A host function that sets the atomic_int `flag` points at. */
static inline void CUDA_CB raise_flag(void *flag)
{
    atomic_store((atomic_int *)flag, 1);
}

/* A host function that holds its stream until the atomic_int `flag` points
 * at is set. */
static inline void CUDA_CB wait_for_flag(void *flag)
{
    while (atomic_load((atomic_int *)flag) == 0)
        sleep_milliseconds(1);
}

#endif
