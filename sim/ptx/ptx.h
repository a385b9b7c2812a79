/* The PTX interpreter of the simulated device: parses the PTX text nvcc
 * emits into a decoded form and runs kernels on host threads.
 *
 * A grid is split into CTAs that a process-wide pool of worker threads (one
 * per host CPU) runs; each CTA runs on one worker, its threads grouped in
 * warps of 32 lanes that execute in lockstep, the lanes at the lowest program
 * counter first, so divergent paths reconverge wherever they meet. This
 * header is what the driver (sim_module.c, sim_launch.c) sees; the decoded
 * form is private to sim/ptx/. */
#ifndef PTX_H
#define PTX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ptx_module;
struct ptx_function;

/* How a module-scope .global or .const variable gets its device address:
 * called once per variable while parsing, with its initial bytes (NULL for
 * zero-filled). Returns the address, or 0 when memory runs out. */
typedef uint64_t (*ptx_variable_allocator)(void *context, const char *name, size_t size,
                                           size_t alignment, const void *initial_bytes,
                                           bool constant);

/* Parses and decodes a PTX module (text, not necessarily NUL-terminated).
 * Returns NULL and one line in `error` on failure; every opcode or directive
 * the interpreter cannot run is reported here by its text, never skipped. */
struct ptx_module *ptx_module_parse(const char *text, size_t length,
                                    ptx_variable_allocator allocate, void *allocator_context,
                                    char *error, size_t error_size);

/* One PTX text of a module linked from several. */
struct ptx_source {
    const char *text; /* not necessarily NUL-terminated */
    size_t length;
};

/* Why ptx_module_link() refused its texts. */
enum ptx_link_failure {
    PTX_LINK_INVALID,    /* a text does not parse (or memory ran out) */
    PTX_LINK_UNRESOLVED, /* an .extern symbol or a called function no text defines */
    PTX_LINK_DUPLICATE,  /* two texts define the same .visible symbol */
};

/* Parses `count` texts into one module, as the driver's JIT linker links
 * separately compiled PTX: each text's non-.visible symbols are its own,
 * and its .extern declarations (and calls) resolve to the .visible or
 * .weak definition of any text. NULL, one line in `error` and the reason
 * in `failure` (may be NULL) on failure. */
struct ptx_module *ptx_module_link(const struct ptx_source *sources, size_t count,
                                   ptx_variable_allocator allocate, void *allocator_context,
                                   char *error, size_t error_size, enum ptx_link_failure *failure);

/* Frees a module (not the device memory of its variables). */
void ptx_module_free(struct ptx_module *module);

/* The kernel (.entry) named `name`, or NULL. */
const struct ptx_function *ptx_module_function(const struct ptx_module *module, const char *name);

/* Number of .entry functions, and the i-th of them. */
size_t ptx_module_function_count(const struct ptx_module *module);
const struct ptx_function *ptx_module_function_at(const struct ptx_module *module, size_t index);

/* The module-scope .global/.const variable `name`: its address and size;
 * false when there is none. */
bool ptx_module_variable(const struct ptx_module *module, const char *name, uint64_t *address,
                         size_t *size);

/* Number of module-scope .global/.const variables and the i-th one's name,
 * address and size (to release their memory at unload). */
size_t ptx_module_variable_count(const struct ptx_module *module);
void ptx_module_variable_at(const struct ptx_module *module, size_t index, const char **name,
                            uint64_t *address, size_t *size);

/* What a kernel needs from a launch. */
const char *ptx_function_name(const struct ptx_function *function);
unsigned ptx_function_param_count(const struct ptx_function *function);
/* Offset and size of parameter `index` in the parameter buffer. */
void ptx_function_param(const struct ptx_function *function, unsigned index, size_t *offset,
                        size_t *size);
/* Bytes of the parameter buffer (every parameter, aligned). */
size_t ptx_function_param_bytes(const struct ptx_function *function);
/* Static shared memory bytes and local memory bytes per thread. */
size_t ptx_function_static_shared_bytes(const struct ptx_function *function);
size_t ptx_function_local_bytes(const struct ptx_function *function);
/* Registers per thread the decoded form uses (reported as NUM_REGS). */
unsigned ptx_function_register_count(const struct ptx_function *function);
/* Threads per block the kernel declares it needs at most (.maxntid or
 * .reqntid), or 1024. */
unsigned ptx_function_max_threads(const struct ptx_function *function);

/* Why the kernel cannot run (an instruction the interpreter does not
 * support, with its PTX line and text), or NULL when it can. */
const char *ptx_function_decode_error(const struct ptx_function *function);

/* Why a grid stopped. */
enum ptx_status {
    PTX_OK,
    PTX_ILLEGAL_ADDRESS, /* a load, store or atomic outside accessible memory */
    PTX_MISALIGNED,      /* an access not aligned to its size */
    PTX_TRAP,            /* trap or brkpt */
    PTX_ASSERT,          /* a failed device assert() (__assertfail) */
    PTX_UNSUPPORTED,     /* an instruction form the interpreter decoded but cannot run */
    PTX_DEADLOCK,        /* every live thread waits at a barrier that cannot complete */
    PTX_OUT_OF_MEMORY,   /* the host could not hold the CTA state */
};

/* Says whether [address, address + size) is memory a kernel may touch
 * outside its own shared and local memory and, when it is, stores the whole
 * accessible extent around it (the allocation or mapping), which the
 * interpreter then checks later accesses against without asking again.
 * Called from worker threads. */
typedef bool (*ptx_address_checker)(uintptr_t address, size_t size, uintptr_t *extent_start,
                                    uintptr_t *extent_end);

/* How a thread touches memory; atomics (and reductions) are ordered with
 * each other by the memory system, plain loads and stores are not. */
enum ptx_access {
    PTX_ACCESS_LOAD,
    PTX_ACCESS_STORE,
    PTX_ACCESS_ATOMIC,
};

/* The most workers that run one grid's CTAs: the pool (at most 255) and
 * the launching thread, whose index is 0. */
#define PTX_MAX_WORKERS 256

/* Sees one global (or constant, or generic-to-global) access of a thread
 * running on `worker` (below PTX_MAX_WORKERS; one thread per index within a
 * grid): the hook a race detector attaches to. Called from worker threads. */
typedef void (*ptx_access_observer)(void *context, unsigned worker, uintptr_t address, size_t size,
                                    enum ptx_access access);

struct ptx_launch {
    const struct ptx_function *function;
    unsigned grid[3];
    unsigned block[3];
    size_t dynamic_shared_bytes;
    const void *params; /* ptx_function_param_bytes() bytes */
    ptx_address_checker is_accessible;
    unsigned sm_count;  /* %nsmid; %smid is the CTA's worker modulo this */
    ptx_access_observer observe_access; /* NULL: nobody watches */
    void *observer_context;
    /* A cooperative launch: every CTA is resident at once (they may wait
     * for each other), and `grid_workspace` is the device address of the
     * grid barrier that %envreg1 (high half) and %envreg2 (low half) give
     * the kernel, as CUDA's cooperative groups expect. */
    bool cooperative;
    uint64_t grid_workspace;
    /* Out: the first failure, with one line describing it. */
    enum ptx_status status;
    char message[320];
};

/* Runs a whole grid and returns when every CTA is done or one failed (the
 * remaining CTAs are then skipped, as a faulting kernel ends on a GPU). */
enum ptx_status ptx_launch_run(struct ptx_launch *launch);

/* Thread-instructions executed so far in this process (for benchmarks). */
unsigned long long ptx_thread_instructions(void);

#endif
