/* Whether a stream capture may be in progress anywhere in the process. A
 * capture begins only through cuStreamBeginCapture* (the runtime's
 * cudaStreamBeginCapture* reach them through the resolver), so while none
 * has begun without its end being seen, no stream captures: not its origin,
 * not a stream that joined it through an event wait, not the legacy stream
 * (implicitly). The hot paths then skip the driver's capture queries; while
 * one may be in progress they ask the driver exactly as before. */
#ifndef GPUCACHE_INTERPOSE_CAPTURE_TRACKING_H
#define GPUCACHE_INTERPOSE_CAPTURE_TRACKING_H

#include <stdbool.h>

#include "real_driver.h"

/* True while some capture may be in progress (one began, its end not seen).
 * Inline: every async allocation and free asks. */
extern unsigned long capture_tracking_in_progress; /* atomic */
static inline bool capture_tracking_any_in_progress(void)
{
    return __atomic_load_n(&capture_tracking_in_progress, __ATOMIC_SEQ_CST) != 0;
}

/* Around a capture's begin: counted before the driver call (a thread that
 * learns of the capture afterwards sees the count) and taken back if the
 * call failed. Excludes capture_tracking_hold holders meanwhile. */
void capture_tracking_beginning(void);
void capture_tracking_begun(bool succeeded);

/* A capture the program began has ended (its origin stream stopped
 * capturing in cuStreamEndCapture). */
void capture_tracking_ended(void);

/* Held (shared) across a check of capture_tracking_any_in_progress and the
 * driver calls it allowed, so that no capture begins in between. */
void capture_tracking_hold(void);
void capture_tracking_release(void);

/* True when `stream` may be capturing: false at once while no capture is in
 * progress, else the driver's answer (real_driver_stream_capturing). */
static inline bool capture_tracking_stream_capturing(const struct real_driver *driver,
                                                     CUstream stream, bool per_thread)
{
    return capture_tracking_any_in_progress() &&
           real_driver_stream_capturing(driver, stream, per_thread);
}

#endif
