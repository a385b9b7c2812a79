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

/* Frees a worker's buffers. */
void ptx_cta_memory_release(struct ptx_cta_memory *memory);

/* Records the grid's first failure and its message (later ones are
 * dropped, as the first fault is the one the program sees). */
void ptx_grid_report(struct ptx_launch *launch, enum ptx_status status, const char *format, ...)
    __attribute__((format(printf, 3, 4)));


#endif
