/* The count of captures in progress. Counting errs on one side only: a
 * capture that ends unseen (its context destroyed, or an end through a route
 * the library does not hook) keeps the count up, and the driver is asked as
 * before; a decrement needs an end the driver confirmed. */
#include "capture_tracking.h"

#include <pthread.h>

unsigned long capture_tracking_in_progress;
/* Exclusive while a capture begins, shared by the library's own calls that
 * a beginning capture would change (event records outside the relaxed
 * capture mode). */
static pthread_rwlock_t capture_begin_lock = PTHREAD_RWLOCK_INITIALIZER;

void capture_tracking_beginning(void)
{
    pthread_rwlock_wrlock(&capture_begin_lock);
    __atomic_add_fetch(&capture_tracking_in_progress, 1, __ATOMIC_SEQ_CST);
}

void capture_tracking_begun(bool succeeded)
{
    if (!succeeded)
        __atomic_sub_fetch(&capture_tracking_in_progress, 1, __ATOMIC_SEQ_CST);
    pthread_rwlock_unlock(&capture_begin_lock);
}

void capture_tracking_ended(void)
{
    /* Never below zero: an end of a capture begun before the library
     * counted (none can be) would otherwise make every later one unseen. */
    unsigned long count = __atomic_load_n(&capture_tracking_in_progress, __ATOMIC_SEQ_CST);
    while (count != 0 &&
           !__atomic_compare_exchange_n(&capture_tracking_in_progress, &count, count - 1, false,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        ;
}

void capture_tracking_hold(void)
{
    pthread_rwlock_rdlock(&capture_begin_lock);
}

void capture_tracking_release(void)
{
    pthread_rwlock_unlock(&capture_begin_lock);
}
