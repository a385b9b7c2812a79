/* Between the grid runner (ptx_grid.c) and the CTA interpreter
 * (ptx_exec.c). */
#ifndef PTX_CTA_H
#define PTX_CTA_H

#include "ptx_internal.h"

/* A worker's buffers, kept from one CTA to the next so that running many
 * small CTAs does not allocate each time. */
struct ptx_cta_memory {
    void *registers;
    size_t register_capacity;
    void *shared;
    size_t shared_capacity;
    void *local;
    size_t local_capacity;
    void *call_params;
    size_t call_param_capacity;
    struct warp *warps;
    size_t warp_capacity;
};

/* Runs CTA `ctaid` of the launch to completion on the calling thread. */
enum ptx_status ptx_run_cta(struct ptx_launch *launch, struct ptx_cta_memory *memory, unsigned worker,
                            const unsigned ctaid[3]);

/* A CTA that runs in turns, for grids whose CTAs must all be resident at
 * once (cooperative launches, where blocks wait for each other). */
struct ptx_cta_run;

/* Sets up CTA `ctaid` in `memory` (its own, kept until the CTA finishes);
 * NULL when host memory runs out (the launch then has the failure). */
struct ptx_cta_run *ptx_cta_start(struct ptx_launch *launch, struct ptx_cta_memory *memory,
                                  unsigned worker, const unsigned ctaid[3]);

/* Runs the CTA for up to `rounds` turns of its warps; true once it has
 * finished or failed. */
bool ptx_cta_resume(struct ptx_cta_run *run, unsigned rounds);

/* Frees a started CTA and returns how it ended. */
enum ptx_status ptx_cta_finish(struct ptx_cta_run *run);

/* Frees a worker's buffers. */
void ptx_cta_memory_release(struct ptx_cta_memory *memory);

/* Records the grid's first failure and its message (later ones are
 * dropped, as the first fault is the one the program sees). */
void ptx_grid_report(struct ptx_launch *launch, enum ptx_status status, const char *format, ...)
    __attribute__((format(printf, 3, 4)));


#endif
