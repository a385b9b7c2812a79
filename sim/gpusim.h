/* gpusim: a simulated CUDA device for machines without a GPU.
 *
 * libcuda.so.1 from sim/ implements a subset of the CUDA 13 driver API on
 * host memory: device memory is lazily committed host memory, VMM
 * reservations are PROT_NONE address space, physical allocations are sparse
 * memfds counted against the device capacity, and every stream is a worker
 * thread that runs copies, memsets, host functions, event records and
 * kernels in order. Kernels run in a PTX interpreter (sim/ptx/): modules
 * and libraries load from PTX text, fat binaries (the PTX entry of the
 * highest virtual architecture up to compute_90, zstd- or LZ4-compressed)
 * or files; cuLaunchKernel/Ex/Cooperative check the configuration as the
 * driver does and queue the grid on its stream, whose CTAs then run on a
 * process-wide pool of host threads. Integer, bitwise, f32/f64 arithmetic
 * with every rounding mode, f16/bf16 add/sub/mul/fma/min/max/neg/abs and
 * compares (scalar and x2, round to nearest), conversions, loads and
 * stores in every state space, atomics, barriers (bar.red too), shuffles,
 * votes, redux, cp.async, special registers, device printf and assert, and
 * calls to the module's non-inlined, non-recursive device functions run;
 * a kernel using anything else (other f16 instructions, textures,
 * tensor-core and bulk-copy instructions, recursion) fails its launch with
 * CUDA_ERROR_NOT_SUPPORTED and one line on stderr naming the instruction.
 * GPUSIM_KERNEL_THREADS (below) sets how many host threads run CTAs.
 * A faulting kernel (illegal or misaligned address, trap) leaves a sticky
 * error in its context, as on a GPU. Binaries with SASS only (no PTX)
 * cannot run: loading fails with CUDA_ERROR_NO_BINARY_FOR_GPU and a line
 * on stderr saying how to add PTX. CUDA arrays, textures, graphs beyond
 * stream capture, and entry points not listed by cuGetProcAddress are not
 * simulated (cuGetProcAddress reports them as not found).
 *
 * With GPUSIM_RACECHECK (below) the device also checks that every pair of
 * accesses to the same device bytes is ordered by CUDA's stream rules, and
 * reports the ones that are not, whatever the timing of the run.
 *
 * VMM access is per device (cuMemSetAccess per location id), and a copy or
 * memset issued in a device's context that touches a mapping without access
 * for that device fails with CUDA_ERROR_INVALID_VALUE (a GPU would fault);
 * peer access between contexts does not grant it.
 *
 * A child forked after cuInit cannot use the driver (its threads and state
 * stay with the parent): there every call that needs cuInit, and cuInit
 * itself, returns CUDA_ERROR_NOT_INITIALIZED.
 *
 * Control through the environment, read once at the first cuInit. A bad
 * value prints one line naming the variable, the bad text and what is
 * accepted, and the process exits with status 2.
 *
 *   GPUSIM_DEVICES=N      number of devices, 0..16 (default 1). With 0,
 *                         cuInit returns CUDA_ERROR_NO_DEVICE.
 *   GPUSIM_MEMORY=SIZE    capacity of each device (default 80GiB). SIZE is a
 *                         number with an optional unit B, KiB, MiB, GiB, TiB
 *                         (or K, M, G, T, KB, MB, GB, TB: all powers of 1024).
 *   GPUSIM_GRANULARITY=SIZE  VMM allocation granularity reported by
 *                         cuMemGetAllocationGranularity and required of
 *                         cuMemCreate/cuMemMap sizes and addresses: a power of
 *                         two from the host page size to 1GiB (default 2MiB).
 *   GPUSIM_FAIL=RULES     injected failures, comma-separated rules:
 *                           NAME:N         the Nth call (1-based) of NAME fails
 *                           NAME:N+        the Nth and every later call fails
 *                           NAME:N:ERROR   ... with ERROR instead of the default
 *                           rate:P:seed:S  each allocation-type call fails with
 *                                          probability P (0..1), drawn from a
 *                                          generator seeded with S
 *                         NAME is an exported name (cuMemAlloc_v2) or a base
 *                         name (cuMemAlloc, matching every variant) of an
 *                         entry point the simulator implements; any other
 *                         name is rejected. ERROR is
 *                         oom, invalid, unknown, not_ready, a CUDA_ERROR_* name
 *                         or a number. The default error is
 *                         CUDA_ERROR_OUT_OF_MEMORY for allocation-type calls
 *                         (cuMemAlloc*, cuMemAllocPitch*, cuMemAllocAsync*,
 *                         cuMemAllocFromPoolAsync*, cuMemAllocManaged,
 *                         cuMemHostAlloc, cuMemAllocHost*, cuMemCreate,
 *                         cuMemAddressReserve, cuMemMap, cuMemPoolCreate) and
 *                         CUDA_ERROR_UNKNOWN for the others. A failed call has
 *                         no side effect. Rules count calls made after the
                         first cuInit. Example:
 *                           GPUSIM_FAIL=cuMemCreate:3,cuMemMap:2:oom
 *   GPUSIM_DELAY=RULES    injected delays, comma-separated rules NAME:N:US
 *                         (the Nth call of NAME sleeps US microseconds before
 *                         it starts) or NAME:N+:US (the Nth and every later
 *                         call); NAME as for GPUSIM_FAIL, US from 1 to
 *                         1000000. For tests that need a caller to stop
 *                         between two steps. Example:
 *                           GPUSIM_DELAY=cuStreamWaitEvent:1+:20000
 *   GPUSIM_KERNEL_THREADS=N  host threads that run the CTAs of a kernel,
 *                         the launching stream's worker included, 1..256
 *                         (default: the number of online CPUs). 1 runs
 *                         every CTA on the stream's own worker.
 *   GPUSIM_STATS=PATH     at exit, write JSON to PATH:
 *                           {"calls": {"cuInit": 1, ...},
 *                            "peak_physical_bytes": N,
 *                            "current_physical_bytes": N,
 *                            "synchronizations": N,
 *                            "races": N,
 *                            "devices": [{"capacity": N,
 *                                         "peak_physical_bytes": N,
 *                                         "current_physical_bytes": N}, ...]}
 *                         "calls" counts every driver entry point by its
 *                         exported name; synchronizations counts context,
 *                         stream and event synchronizes; races counts the
 *                         GPUSIM_RACECHECK reports.
 *   GPUSIM_RACECHECK=MODE a happens-before race detector over device memory
 *                         (device, pool, managed and mapped VMM bytes; host
 *                         and IPC-imported memory are not tracked). MODE is
 *                         0 (off, the default), 1 (report each race as one
 *                         line on stderr; at exit a process that saw a race
 *                         exits with status 66) or abort (report the first
 *                         race, then abort()). Every copy, memset and stream
 *                         memory operation records which stream read or
 *                         wrote which bytes, and cuMemFreeAsync counts as a
 *                         write at its place in its stream. Two accesses to
 *                         the same bytes, one a write, race unless CUDA's
 *                         rules order them: program order in a stream, the
 *                         host's knowledge when it queues work, the legacy
 *                         default stream's implicit ordering with blocking
 *                         (also per-thread default) streams, event record
 *                         and wait, and host synchronization
 *                         (cuStreamSynchronize, cuCtxSynchronize,
 *                         cuEventSynchronize, a successful cuEventQuery or
 *                         cuStreamQuery, copies that block the host,
 *                         cuMemFree). All host threads count as one host:
 *                         the program's own host-side synchronization is
 *                         invisible to the device. Allocations, pool
 *                         allocations and new VMM mappings start fresh.
 *                         cuMemUnmap or cuMemAddressFree of bytes whose last
 *                         use the host has not synchronized with is a race
 *                         too (cuMemRelease takes nothing away while a
 *                         mapping holds the memory). Stream memory
 *                         operations do not race with each other (they
 *                         synchronize through memory), and synchronous
 *                         device-to-device copies and memsets do not order
 *                         the host, as CUDA lets them return early.
 *
 * The functions below are for tests that link libcuda.so.1 directly. */
#ifndef GPUSIM_H
#define GPUSIM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Physical bytes (cuMemAlloc, pools, cuMemCreate) now held on `device`;
 * 0 for an unknown device or before cuInit. */
size_t gpusim_physical_bytes(int device);

/* Highest value gpusim_physical_bytes(device) has had. */
size_t gpusim_peak_physical_bytes(int device);

/* Calls made so far to the exported entry point `name` (e.g.
 * "cuMemAlloc_v2"); 0 if never called. */
unsigned long long gpusim_call_count(const char *name);

/* Context, stream and event synchronizations made so far. */
unsigned long long gpusim_synchronization_count(void);

/* Races GPUSIM_RACECHECK has reported so far (0 when it is off). */
unsigned long long gpusim_race_count(void);

/* Sets the race count back to 0, so a test that expects a race can still
 * exit with status 0. */
void gpusim_forget_races(void);

/* Writes the GPUSIM_STATS document to `path` now; 0 on success, -1 with
 * errno on failure. */
int gpusim_write_stats(const char *path);

/* Thread-instructions the PTX interpreter has executed so far in this
 * process (one per active thread per instruction), for benchmarks. */
unsigned long long gpusim_thread_instructions(void);

#ifdef __cplusplus
}
#endif

#endif
