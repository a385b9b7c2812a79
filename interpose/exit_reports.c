/* The destructor that writes the exit reports: it hands the reports the
 * allocators serving each device and the statistics gpucache_device_stats
 * gives, which sit above the reports and which they never look up. */
#include "device_allocators.h"
#include "gpucache_public.h"
#include "library_lifecycle.h"
#include "library_reports.h"
#include "real_driver.h"

__attribute__((destructor)) static void write_exit_reports(void)
{
    /* A process that never used CUDA (a shell or `timeout` in front of the
     * program) writes nothing; nor does a child forked after CUDA was used. */
    if (library_bypassed_after_fork() || !real_driver_activated())
        return;
    struct library_reports_allocators serving;
    device_serving_allocators(&serving);
    library_reports_at_exit(&serving, gpucache_device_stats);
}
