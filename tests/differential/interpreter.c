/* Runs one differential case: a list of CUDA operations read from a text
 * file, executed through the runtime and driver APIs on host threads, with
 * every call's result and every read-back checksum printed. The same binary
 * runs natively on the simulated device and under libgpucache.so, so any
 * difference in what it prints is the library's doing (tests/differential/
 * README.md). Interpreting a list instead of compiling a program per case
 * keeps a case cheap enough to run thousands of them.
 *
 *   interpreter --replay FILE          run the case
 *   interpreter --replay FILE --dump   print the parsed list back, run nothing
 *
 * Output is buffered per thread and printed phase by phase in thread order,
 * so it does not depend on how the threads interleave. Lines look like
 *   1.0.4 malloc b3 4096 = 0
 *   1.0.9 checksum r2 = 5e1f...
 *   taint b3
 * "taint" names a buffer or read-back whose contents depend on an earlier
 * allocation that failed for lack of memory: where the device runs out
 * differs between the driver and a caching allocator, so the runner ignores
 * every line about such a name.
 *
 * One file because it is one program: the case reader and the operation
 * dispatch share the tables of streams, events and buffers. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum op_kind {
    OP_STREAM_CREATE,
    OP_STREAM_DESTROY,
    OP_STREAM_SYNC,
    OP_STREAM_QUERY,
    OP_STREAM_WAIT,
    OP_EVENT_CREATE,
    OP_EVENT_DESTROY,
    OP_EVENT_RECORD,
    OP_EVENT_SYNC,
    OP_EVENT_QUERY,
    OP_DEVICE_SYNC,
    OP_CONTEXT_SYNC,
    OP_DEVICE_RESET,
    OP_MALLOC,
    OP_FREE,
    OP_MALLOC_ASYNC,
    OP_FREE_ASYNC,
    OP_CU_ALLOC,
    OP_CU_FREE,
    OP_MEMSET,
    OP_HTOD,
    OP_DTOD,
    OP_DTOH,
    OP_CHECKSUM,
    OP_HOST_FUNC,
    OP_KERNEL_SET,
    OP_KERNEL_COPY,
};

/* Argument shapes: 's' stream, 'e' event, 'b' buffer, 'r' read-back, 'n' a
 * number, 'f' a stream-creation flag word. */
static const struct {
    const char *name;
    const char *arguments;
} op_syntax[] = {
    [OP_STREAM_CREATE] = {"stream_create", "sf"},
    [OP_STREAM_DESTROY] = {"stream_destroy", "s"},
    [OP_STREAM_SYNC] = {"stream_sync", "s"},
    [OP_STREAM_QUERY] = {"stream_query", "s"},
    [OP_STREAM_WAIT] = {"stream_wait", "se"},
    [OP_EVENT_CREATE] = {"event_create", "en"},
    [OP_EVENT_DESTROY] = {"event_destroy", "e"},
    [OP_EVENT_RECORD] = {"event_record", "es"},
    [OP_EVENT_SYNC] = {"event_sync", "e"},
    [OP_EVENT_QUERY] = {"event_query", "e"},
    [OP_DEVICE_SYNC] = {"device_sync", ""},
    [OP_CONTEXT_SYNC] = {"ctx_sync", ""},
    [OP_DEVICE_RESET] = {"device_reset", ""},
    [OP_MALLOC] = {"malloc", "bn"},
    [OP_FREE] = {"free", "b"},
    [OP_MALLOC_ASYNC] = {"malloc_async", "bns"},
    [OP_FREE_ASYNC] = {"free_async", "bs"},
    [OP_CU_ALLOC] = {"cu_alloc", "bn"},
    [OP_CU_FREE] = {"cu_free", "b"},
    [OP_MEMSET] = {"memset", "bnnns"},      /* buffer offset length value stream */
    [OP_HTOD] = {"htod", "bnnns"},          /* buffer offset length seed stream */
    [OP_DTOD] = {"dtod", "bnbnns"},         /* dst offset src offset length stream */
    [OP_DTOH] = {"dtoh", "bnnsr"},          /* buffer offset length stream read-back */
    [OP_CHECKSUM] = {"checksum", "r"},
    [OP_HOST_FUNC] = {"host_func", "sn"},   /* stream microseconds */
    /* The same effects as memset and dtod, done by kernels: one thread per
     * byte, each a global store (and load). */
    [OP_KERNEL_SET] = {"kernel_set", "bnnns"},   /* buffer offset length value stream */
    [OP_KERNEL_COPY] = {"kernel_copy", "bnbnns"}, /* dst offset src offset length stream */
};
#define OP_KIND_COUNT (sizeof op_syntax / sizeof op_syntax[0])
#define MAX_ARGUMENTS 6

/* Streams that exist without being created: handle 0, cudaStreamLegacy and
 * cudaStreamPerThread. Created streams are numbered from 1 ("s1"). */
#define STREAM_LEGACY_ZERO (-1)
#define STREAM_LEGACY (-2)
#define STREAM_PER_THREAD (-3)

struct op {
    enum op_kind kind;
    long long argument[MAX_ARGUMENTS];
    /* The stream-creation flag word, kept as text for the dump. */
    char flag[24];
    unsigned line;
};

struct thread_ops {
    struct op *ops;
    size_t count, capacity;
};

#define MAX_THREADS 8

struct phase {
    unsigned thread_count;
    struct thread_ops threads[MAX_THREADS];
};

struct program {
    struct phase *phases;
    size_t phase_count;
    long long max_id[128]; /* highest number seen per object letter */
};

static _Noreturn void die(const char *format, const char *detail, unsigned line)
{
    fprintf(stderr, "interpreter: ");
    fprintf(stderr, format, detail);
    if (line)
        fprintf(stderr, " (line %u)", line);
    fprintf(stderr, "\n");
    exit(2);
}

static void *grow(void *array, size_t *capacity, size_t element)
{
    *capacity = *capacity ? *capacity * 2 : 16;
    void *bigger = realloc(array, *capacity * element);
    if (bigger == NULL)
        die("out of host memory%s", "", 0);
    return bigger;
}

static long long parse_object(const char *token, char letter, unsigned line)
{
    if (letter == 's') {
        if (strcmp(token, "legacy0") == 0)
            return STREAM_LEGACY_ZERO;
        if (strcmp(token, "legacy") == 0)
            return STREAM_LEGACY;
        if (strcmp(token, "pts") == 0)
            return STREAM_PER_THREAD;
    }
    char *end;
    long long id = token[0] == letter ? strtoll(token + 1, &end, 10) : 0;
    if (token[0] != letter || id < 1 || id > 1000000 || *end != '\0')
        die("expected an object name like %s", (char[]){letter, '1', '\0'}, line);
    return id;
}

static void parse_op(struct program *program, struct thread_ops *thread, char *name,
                     char *saveptr, unsigned line)
{
    size_t kind = 0;
    while (kind < OP_KIND_COUNT && strcmp(op_syntax[kind].name, name) != 0)
        kind++;
    if (kind == OP_KIND_COUNT)
        die("unknown operation '%s'", name, line);
    if (thread->count == thread->capacity)
        thread->ops = grow(thread->ops, &thread->capacity, sizeof *thread->ops);
    struct op *op = &thread->ops[thread->count++];
    memset(op, 0, sizeof *op);
    op->kind = (enum op_kind)kind;
    op->line = line;
    const char *shape = op_syntax[kind].arguments;
    for (size_t i = 0; shape[i]; i++) {
        char *token = strtok_r(NULL, " \t\n", &saveptr);
        if (token == NULL)
            die("too few arguments for '%s'", name, line);
        char letter = shape[i];
        if (letter == 'n') {
            char *end;
            errno = 0;
            op->argument[i] = strtoll(token, &end, 0);
            if (errno != 0 || *end != '\0')
                die("not a number: '%s'", token, line);
        } else if (letter == 'f') {
            if (strcmp(token, "blocking") != 0 && strcmp(token, "nonblocking") != 0 &&
                strncmp(token, "priority", 8) != 0 && strncmp(token, "nbpriority", 10) != 0)
                die("unknown stream flag '%s' (blocking, nonblocking, priorityN, nbpriorityN)",
                    token, line);
            snprintf(op->flag, sizeof op->flag, "%s", token);
        } else {
            op->argument[i] = parse_object(token, letter, line);
            if (op->argument[i] > program->max_id[(unsigned char)letter])
                program->max_id[(unsigned char)letter] = op->argument[i];
        }
    }
    if (strtok_r(NULL, " \t\n", &saveptr) != NULL)
        die("too many arguments for '%s'", name, line);
}

/* The case format: "phase N" starts a phase of N threads; "T OP ARGS"
 * gives thread T of the current phase its next operation; "#" starts a
 * comment. */
static void parse_program(FILE *file, struct program *program)
{
    char text[512];
    unsigned line = 0;
    size_t phase_capacity = 0;
    while (fgets(text, sizeof text, file) != NULL) {
        line++;
        char *comment = strchr(text, '#');
        if (comment)
            *comment = '\0';
        char *saveptr;
        char *first = strtok_r(text, " \t\n", &saveptr);
        if (first == NULL)
            continue;
        if (strcmp(first, "phase") == 0) {
            char *count = strtok_r(NULL, " \t\n", &saveptr);
            int threads = count ? atoi(count) : 0;
            if (threads < 1 || threads > MAX_THREADS)
                die("a phase has 1 to 8 threads, not '%s'", count ? count : "", line);
            if (program->phase_count == phase_capacity)
                program->phases = grow(program->phases, &phase_capacity, sizeof *program->phases);
            struct phase *phase = &program->phases[program->phase_count++];
            memset(phase, 0, sizeof *phase);
            phase->thread_count = (unsigned)threads;
            continue;
        }
        if (program->phase_count == 0)
            die("an operation before the first 'phase' line%s", "", line);
        struct phase *phase = &program->phases[program->phase_count - 1];
        char *end;
        long thread = strtol(first, &end, 10);
        if (*end != '\0' || thread < 0 || thread >= (long)phase->thread_count)
            die("expected a thread number of this phase, not '%s'", first, line);
        char *name = strtok_r(NULL, " \t\n", &saveptr);
        if (name == NULL)
            die("a thread number without an operation%s", "", line);
        parse_op(program, &phase->threads[thread], name, saveptr, line);
    }
}

static void print_object(FILE *out, char letter, long long id)
{
    if (letter == 's' && id == STREAM_LEGACY_ZERO)
        fputs("legacy0", out);
    else if (letter == 's' && id == STREAM_LEGACY)
        fputs("legacy", out);
    else if (letter == 's' && id == STREAM_PER_THREAD)
        fputs("pts", out);
    else
        fprintf(out, "%c%lld", letter, id);
}

/* The operation in the case format, without the thread number. */
static void print_op(FILE *out, const struct op *op)
{
    fputs(op_syntax[op->kind].name, out);
    const char *shape = op_syntax[op->kind].arguments;
    for (size_t i = 0; shape[i]; i++) {
        fputc(' ', out);
        if (shape[i] == 'n')
            fprintf(out, "%lld", op->argument[i]);
        else if (shape[i] == 'f')
            fputs(op->flag, out);
        else
            print_object(out, shape[i], op->argument[i]);
    }
}

static void dump_program(const struct program *program)
{
    for (size_t p = 0; p < program->phase_count; p++) {
        const struct phase *phase = &program->phases[p];
        printf("phase %u\n", phase->thread_count);
        for (unsigned t = 0; t < phase->thread_count; t++)
            for (size_t i = 0; i < phase->threads[t].count; i++) {
                printf("%u ", t);
                print_op(stdout, &phase->threads[t].ops[i]);
                putchar('\n');
            }
    }
}

/* ---- execution ---- */

struct buffer {
    CUdeviceptr address;
    size_t size;
    bool present; /* allocated and not yet freed */
    bool tainted; /* contents depend on an allocation that failed */
};

struct read_back {
    unsigned char *host;
    size_t length;
    bool tainted;
};

/* Objects are indexed by their number. A thread only touches the objects it
 * owns (the generator guarantees it), so the arrays need no lock. */
static cudaStream_t *streams;
static cudaEvent_t *events;
static struct buffer *buffers;
static struct read_back *read_backs;

/* Host memory handed to asynchronous copies stays alive until the end: the
 * copy may run long after the operation that issued it. */
static pthread_mutex_t staging_lock = PTHREAD_MUTEX_INITIALIZER;
static void **staging;
static size_t staging_count, staging_capacity;

static void *staging_alloc(size_t length)
{
    void *memory = malloc(length ? length : 1);
    if (memory == NULL)
        die("out of host memory%s", "", 0);
    pthread_mutex_lock(&staging_lock);
    if (staging_count == staging_capacity)
        staging = grow(staging, &staging_capacity, sizeof *staging);
    staging[staging_count++] = memory;
    pthread_mutex_unlock(&staging_lock);
    return memory;
}

static cudaStream_t stream_of(long long id)
{
    switch (id) {
    case STREAM_LEGACY_ZERO:
        return 0;
    case STREAM_LEGACY:
        return cudaStreamLegacy;
    case STREAM_PER_THREAD:
        return cudaStreamPerThread;
    default:
        return streams[id];
    }
}

/* The kernels of kernel_set and kernel_copy, loaded once per context (a
 * device reset unloads them). One thread per byte: p[i] = v, d[i] = s[i]. */
static const char byte_kernels_ptx[] =
    ".version 8.0\n.target sm_75\n.address_size 64\n"
    ".visible .entry set_bytes(.param .u64 p, .param .u64 n, .param .u32 v)\n{\n"
    ".reg .pred %p<2>;\n.reg .b32 %r<6>;\n.reg .b64 %rd<8>;\n"
    "ld.param.u64 %rd1, [p];\nld.param.u64 %rd2, [n];\nld.param.u32 %r1, [v];\n"
    "mov.u32 %r2, %ctaid.x;\nmov.u32 %r3, %ntid.x;\nmov.u32 %r4, %tid.x;\n"
    "mul.wide.u32 %rd3, %r2, %r3;\ncvt.u64.u32 %rd4, %r4;\nadd.s64 %rd5, %rd3, %rd4;\n"
    "setp.ge.u64 %p1, %rd5, %rd2;\n@%p1 bra DONE;\n"
    "add.s64 %rd6, %rd1, %rd5;\nst.global.u8 [%rd6], %r1;\nDONE:\nret;\n}\n"
    ".visible .entry copy_bytes(.param .u64 d, .param .u64 s, .param .u64 n)\n{\n"
    ".reg .pred %p<2>;\n.reg .b32 %r<6>;\n.reg .b64 %rd<10>;\n"
    "ld.param.u64 %rd1, [d];\nld.param.u64 %rd7, [s];\nld.param.u64 %rd2, [n];\n"
    "mov.u32 %r2, %ctaid.x;\nmov.u32 %r3, %ntid.x;\nmov.u32 %r4, %tid.x;\n"
    "mul.wide.u32 %rd3, %r2, %r3;\ncvt.u64.u32 %rd4, %r4;\nadd.s64 %rd5, %rd3, %rd4;\n"
    "setp.ge.u64 %p1, %rd5, %rd2;\n@%p1 bra DONE;\n"
    "add.s64 %rd8, %rd7, %rd5;\nld.global.u8 %r1, [%rd8];\n"
    "add.s64 %rd6, %rd1, %rd5;\nst.global.u8 [%rd6], %r1;\nDONE:\nret;\n}\n";

#define BYTE_KERNEL_BLOCK 256u

static pthread_mutex_t kernels_lock = PTHREAD_MUTEX_INITIALIZER;
static CUmodule byte_kernels;
static CUfunction set_bytes, copy_bytes;

/* Loads the byte kernels into the current context if they are not there. */
static int require_byte_kernels(void)
{
    pthread_mutex_lock(&kernels_lock);
    int result = 0;
    if (byte_kernels == NULL) {
        result = cuModuleLoadData(&byte_kernels, byte_kernels_ptx);
        if (result == 0)
            result = cuModuleGetFunction(&set_bytes, byte_kernels, "set_bytes");
        if (result == 0)
            result = cuModuleGetFunction(&copy_bytes, byte_kernels, "copy_bytes");
        if (result != 0)
            byte_kernels = NULL;
    }
    pthread_mutex_unlock(&kernels_lock);
    return result;
}

static int launch_bytes(CUfunction function, void **params, size_t bytes, cudaStream_t stream)
{
    unsigned blocks = (unsigned)((bytes + BYTE_KERNEL_BLOCK - 1) / BYTE_KERNEL_BLOCK);
    return cuLaunchKernel(function, blocks, 1, 1, BYTE_KERNEL_BLOCK, 1, 1, 0, (CUstream)stream,
                          params, NULL);
}

/* The htod pattern with `seed`: each 8-byte word a mix of the seed and the
 * word's index, so that misplaced or stale bytes change the fingerprint.
 * Word-wise because the copies are up to 8 MiB and the long runs spend
 * their time here otherwise. */
static void fill_pattern(unsigned char *host, size_t length, long long seed)
{
    size_t words = length / 8;
    for (size_t i = 0; i < words; i++) {
        uint64_t word = ((uint64_t)seed + 1) * 0x9e3779b97f4a7c15ull ^ (i * 0xbf58476d1ce4e5b9ull);
        memcpy(host + i * 8, &word, 8);
    }
    for (size_t i = words * 8; i < length; i++)
        host[i] = (unsigned char)((uint64_t)seed * 131u + i * 7u);
}

/* A 64-bit fingerprint of a read-back, eight bytes at a time (FNV-1a's
 * multiply on words, with a fold so high bits reach low ones). */
static uint64_t fingerprint(const unsigned char *bytes, size_t length)
{
    uint64_t hash = 0xcbf29ce484222325ull ^ length;
    size_t words = length / 8;
    for (size_t i = 0; i < words; i++) {
        uint64_t word;
        memcpy(&word, bytes + i * 8, 8);
        hash = (hash ^ word) * 0x100000001b3ull;
        hash ^= hash >> 29;
    }
    for (size_t i = words * 8; i < length; i++)
        hash = (hash ^ bytes[i]) * 0x100000001b3ull;
    return hash;
}

static void CUDART_CB sleep_on_stream(void *microseconds)
{
    usleep((useconds_t)(uintptr_t)microseconds);
}

/* Results that depend on timing (a query may find work done or not) are
 * printed as "ready-or-not": their value is not part of the outcome, but
 * any other error still shows. */
static int timing_free_result(int result)
{
    return result == cudaErrorNotReady ? cudaSuccess : result;
}

static void taint(FILE *out, char letter, long long id, bool *flag)
{
    if (!*flag)
        fprintf(out, "taint %c%lld\n", letter, id);
    *flag = true;
}

/* Runs `op`; returns the result to print, or -1 when the operation was
 * skipped because a buffer it names was never allocated. */
static int run_op(FILE *out, const struct op *op)
{
    const long long *a = op->argument;
    switch (op->kind) {
    case OP_STREAM_CREATE: {
        int priority = 0;
        unsigned flags = cudaStreamDefault;
        if (strcmp(op->flag, "nonblocking") == 0)
            flags = cudaStreamNonBlocking;
        if (strncmp(op->flag, "priority", 8) == 0)
            priority = atoi(op->flag + 8);
        if (strncmp(op->flag, "nbpriority", 10) == 0) {
            priority = atoi(op->flag + 10);
            flags = cudaStreamNonBlocking;
        }
        if (strstr(op->flag, "priority"))
            return cudaStreamCreateWithPriority(&streams[a[0]], flags, priority);
        return cudaStreamCreateWithFlags(&streams[a[0]], flags);
    }
    case OP_STREAM_DESTROY:
        return cudaStreamDestroy(streams[a[0]]);
    case OP_STREAM_SYNC:
        return cudaStreamSynchronize(stream_of(a[0]));
    case OP_STREAM_QUERY:
        return timing_free_result(cudaStreamQuery(stream_of(a[0])));
    case OP_STREAM_WAIT:
        return cudaStreamWaitEvent(stream_of(a[0]), events[a[1]], 0);
    case OP_EVENT_CREATE:
        return cudaEventCreateWithFlags(&events[a[0]],
                                        a[1] ? cudaEventDisableTiming : cudaEventDefault);
    case OP_EVENT_DESTROY:
        return cudaEventDestroy(events[a[0]]);
    case OP_EVENT_RECORD:
        return cudaEventRecord(events[a[0]], stream_of(a[1]));
    case OP_EVENT_SYNC:
        return cudaEventSynchronize(events[a[0]]);
    case OP_EVENT_QUERY:
        return timing_free_result(cudaEventQuery(events[a[0]]));
    case OP_DEVICE_SYNC:
        return cudaDeviceSynchronize();
    case OP_CONTEXT_SYNC:
        return cuCtxSynchronize();
    case OP_DEVICE_RESET: {
        int result = cudaDeviceReset();
        /* The reset destroyed every allocation, stream, event and module. */
        pthread_mutex_lock(&kernels_lock);
        byte_kernels = NULL;
        pthread_mutex_unlock(&kernels_lock);
        for (long long i = 0; buffers && buffers[i].size != (size_t)-1; i++)
            buffers[i].present = false;
        /* Bind the fresh context now, so that a driver-API call that comes
         * next finds a current context natively and under the library. */
        int rebind = cudaFree(0);
        return result != cudaSuccess ? result : rebind;
    }
    case OP_MALLOC:
    case OP_CU_ALLOC:
    case OP_MALLOC_ASYNC: {
        struct buffer *buffer = &buffers[a[0]];
        void *pointer = NULL;
        int result;
        if (op->kind == OP_MALLOC)
            result = cudaMalloc(&pointer, (size_t)a[1]);
        else if (op->kind == OP_MALLOC_ASYNC)
            result = cudaMallocAsync(&pointer, (size_t)a[1], stream_of(a[2]));
        else
            result = cuMemAlloc(&buffer->address, (size_t)a[1]);
        if (op->kind != OP_CU_ALLOC)
            buffer->address = (CUdeviceptr)(uintptr_t)pointer;
        buffer->size = (size_t)a[1];
        buffer->present = result == 0;
        if (result != 0)
            taint(out, 'b', a[0], &buffer->tainted);
        return result;
    }
    case OP_FREE:
    case OP_CU_FREE:
    case OP_FREE_ASYNC: {
        struct buffer *buffer = &buffers[a[0]];
        if (!buffer->present)
            return -1;
        buffer->present = false;
        if (op->kind == OP_FREE)
            return cudaFree((void *)(uintptr_t)buffer->address);
        if (op->kind == OP_FREE_ASYNC)
            return cudaFreeAsync((void *)(uintptr_t)buffer->address, stream_of(a[1]));
        return cuMemFree(buffer->address);
    }
    case OP_MEMSET: {
        struct buffer *buffer = &buffers[a[0]];
        if (!buffer->present)
            return -1;
        return cudaMemsetAsync((void *)(uintptr_t)(buffer->address + (size_t)a[1]), (int)a[3],
                               (size_t)a[2], stream_of(a[4]));
    }
    case OP_HTOD: {
        struct buffer *buffer = &buffers[a[0]];
        if (!buffer->present)
            return -1;
        unsigned char *host = staging_alloc((size_t)a[2]);
        fill_pattern(host, (size_t)a[2], a[3]);
        return cudaMemcpyAsync((void *)(uintptr_t)(buffer->address + (size_t)a[1]), host,
                               (size_t)a[2], cudaMemcpyHostToDevice, stream_of(a[4]));
    }
    case OP_DTOD: {
        struct buffer *target = &buffers[a[0]], *source = &buffers[a[2]];
        if (source->tainted || !source->present)
            taint(out, 'b', a[0], &target->tainted);
        if (!target->present || !source->present)
            return -1;
        return cudaMemcpyAsync((void *)(uintptr_t)(target->address + (size_t)a[1]),
                               (const void *)(uintptr_t)(source->address + (size_t)a[3]),
                               (size_t)a[4], cudaMemcpyDeviceToDevice, stream_of(a[5]));
    }
    case OP_KERNEL_SET: {
        struct buffer *buffer = &buffers[a[0]];
        if (!buffer->present)
            return -1;
        int loaded = require_byte_kernels();
        if (loaded != 0)
            return loaded;
        CUdeviceptr start = buffer->address + (size_t)a[1];
        unsigned long long bytes = (unsigned long long)a[2];
        unsigned value = (unsigned)a[3];
        void *params[] = {&start, &bytes, &value};
        return launch_bytes(set_bytes, params, (size_t)bytes, stream_of(a[4]));
    }
    case OP_KERNEL_COPY: {
        struct buffer *target = &buffers[a[0]], *source = &buffers[a[2]];
        if (source->tainted || !source->present)
            taint(out, 'b', a[0], &target->tainted);
        if (!target->present || !source->present)
            return -1;
        int loaded = require_byte_kernels();
        if (loaded != 0)
            return loaded;
        CUdeviceptr to = target->address + (size_t)a[1];
        CUdeviceptr from = source->address + (size_t)a[3];
        unsigned long long bytes = (unsigned long long)a[4];
        void *params[] = {&to, &from, &bytes};
        return launch_bytes(copy_bytes, params, (size_t)bytes, stream_of(a[5]));
    }
    case OP_DTOH: {
        struct buffer *buffer = &buffers[a[0]];
        struct read_back *read_back = &read_backs[a[4]];
        read_back->length = (size_t)a[2];
        read_back->host = staging_alloc(read_back->length);
        if (buffer->tainted || !buffer->present)
            taint(out, 'r', a[4], &read_back->tainted);
        if (!buffer->present)
            return -1;
        return cudaMemcpyAsync(read_back->host,
                               (const void *)(uintptr_t)(buffer->address + (size_t)a[1]),
                               (size_t)a[2], cudaMemcpyDeviceToHost, stream_of(a[3]));
    }
    case OP_CHECKSUM: {
        struct read_back *read_back = &read_backs[a[0]];
        if (read_back->tainted)
            return -1;
        fprintf(out, "checksum r%lld %016llx\n", a[0],
                (unsigned long long)fingerprint(read_back->host, read_back->length));
        return 0;
    }
    case OP_HOST_FUNC:
        return cudaLaunchHostFunc(stream_of(a[0]), sleep_on_stream,
                                  (void *)(uintptr_t)a[1]);
    }
    return -1;
}

struct thread_run {
    const struct thread_ops *ops;
    size_t phase_number;
    unsigned thread_number;
    char *output;
    size_t output_size;
};

static void *run_thread(void *argument)
{
    struct thread_run *run = argument;
    FILE *out = open_memstream(&run->output, &run->output_size);
    if (out == NULL)
        die("out of host memory%s", "", 0);
    /* A new host thread binds the runtime's context first, so that a
     * driver-API call as its first operation finds a current context. */
    fprintf(out, "%zu.%u bind = %d\n", run->phase_number, run->thread_number, (int)cudaFree(0));
    for (size_t i = 0; i < run->ops->count; i++) {
        const struct op *op = &run->ops->ops[i];
        int result = run_op(out, op);
        fprintf(out, "%zu.%u.%zu ", run->phase_number, run->thread_number, i);
        print_op(out, op);
        if (result < 0)
            fprintf(out, " skipped\n");
        else
            fprintf(out, " = %d\n", result);
    }
    fclose(out);
    return NULL;
}

static void run_program(const struct program *program)
{
    /* One spare element past the highest number: its size of -1 ends the
     * walk of device_reset over buffers. */
    streams = calloc((size_t)program->max_id['s'] + 1, sizeof *streams);
    events = calloc((size_t)program->max_id['e'] + 1, sizeof *events);
    size_t buffer_count = (size_t)program->max_id['b'] + 2;
    buffers = calloc(buffer_count, sizeof *buffers);
    read_backs = calloc((size_t)program->max_id['r'] + 1, sizeof *read_backs);
    if (!streams || !events || !buffers || !read_backs)
        die("out of host memory%s", "", 0);
    buffers[buffer_count - 1].size = (size_t)-1;

    for (size_t p = 0; p < program->phase_count; p++) {
        const struct phase *phase = &program->phases[p];
        struct thread_run runs[MAX_THREADS] = {0};
        pthread_t threads[MAX_THREADS];
        for (unsigned t = 0; t < phase->thread_count; t++) {
            runs[t] = (struct thread_run){.ops = &phase->threads[t], .phase_number = p,
                                          .thread_number = t};
            if (pthread_create(&threads[t], NULL, run_thread, &runs[t]) != 0)
                die("cannot start a thread%s", "", 0);
        }
        for (unsigned t = 0; t < phase->thread_count; t++) {
            pthread_join(threads[t], NULL);
            fputs(runs[t].output, stdout);
            free(runs[t].output);
        }
    }

    printf("end device_sync = %d\n", (int)cudaDeviceSynchronize());
    /* Like a PyTorch program calling torch.cuda.empty_cache() before it
     * exits: under the library, the cache gives back what it holds, so the
     * device memory left at exit means the same thing with and without it. */
    void (*empty_cache)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "gpucache_empty_cache");
    if (empty_cache)
        empty_cache();
    for (size_t i = 0; i < staging_count; i++)
        free(staging[i]);
    free(staging);
    free(streams);
    free(events);
    free(buffers);
    free(read_backs);
}

int main(int argc, char **argv)
{
    const char *path = NULL;
    bool dump = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--replay") == 0 && i + 1 < argc)
            path = argv[++i];
        else if (strcmp(argv[i], "--dump") == 0)
            dump = true;
        else
            die("usage: interpreter --replay FILE [--dump] (unexpected '%s')", argv[i], 0);
    }
    if (path == NULL)
        die("usage: interpreter --replay FILE [--dump]%s", "", 0);
    FILE *file = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (file == NULL)
        die("cannot open '%s'", path, 0);
    struct program program = {0};
    parse_program(file, &program);
    if (file != stdin)
        fclose(file);
    if (dump)
        dump_program(&program);
    else
        run_program(&program);
    for (size_t p = 0; p < program.phase_count; p++)
        for (unsigned t = 0; t < MAX_THREADS; t++)
            free(program.phases[p].threads[t].ops);
    free(program.phases);
    return 0;
}
