/* A soak of stream-ordered reuse: host threads, each with its own blocking
 * and non-blocking streams, also sharing the legacy stream and using their
 * per-thread default streams, allocate with cudaMalloc and cudaMallocAsync,
 * hand buffers from stream to stream with events, and free them with
 * cudaFree and cudaFreeAsync. Every buffer is filled with its own byte and
 * checked before it is freed; after the check its owner queues one more
 * write of the same byte behind a sleeping host function, so a block handed
 * to a new owner too early receives a late write of the old owner's byte,
 * which the new owner's check then finds. Every program it runs is correct
 * by CUDA's ordering rules: natively nothing is ever corrupted.
 *
 *   soak_streams [SECONDS [THREADS [SEED]]]   defaults: 2 s, 8 threads, 1
 *
 * Prints one line with the counts, and exits 1 when a buffer was corrupted
 * or a call failed. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test_support.h"

#define LIVE_BUFFERS 6
#define LARGEST_BUFFER ((size_t)3 << 20)

enum stream_kind { STREAM_LEGACY, STREAM_PER_THREAD, STREAM_BLOCKING, STREAM_NON_BLOCKING,
                   STREAM_KIND_COUNT };

struct buffer {
    unsigned char *device;
    size_t size;
    unsigned char value;
    bool from_stream_allocator; /* cudaMallocAsync, else cudaMalloc */
    enum stream_kind stream;    /* where its last work was queued */
};

struct worker {
    pthread_t thread;
    unsigned seed;
    cudaStream_t streams[STREAM_KIND_COUNT];
    struct buffer live[LIVE_BUFFERS];
    unsigned char *host;
    unsigned long long checked, corrupted, operations, failures;
};

static double soak_seconds = 2.0;
static atomic_bool stop;

static void CUDART_CB sleep_briefly(void *microseconds)
{
    usleep((useconds_t)(uintptr_t)microseconds);
}

static bool call_ok(struct worker *worker, int result, const char *what)
{
    worker->operations++;
    if (result == 0)
        return true;
    if (worker->failures++ == 0)
        fprintf(stderr, "soak: %s returned %d\n", what, result);
    return false;
}

/* Delays the stream by up to 2 ms of host sleep, so that work queued after
 * it runs well after the host has moved on. */
static void delay_stream(struct worker *worker, cudaStream_t stream)
{
    uintptr_t microseconds = 200 + next_random(&worker->seed) % 1800;
    call_ok(worker, cudaLaunchHostFunc(stream, sleep_briefly, (void *)microseconds),
            "cudaLaunchHostFunc");
}

static enum stream_kind random_stream(struct worker *worker)
{
    return (enum stream_kind)(next_random(&worker->seed) % STREAM_KIND_COUNT);
}

static size_t random_size(struct worker *worker)
{
    unsigned draw = next_random(&worker->seed);
    if (draw % 4 == 0) /* the small pool: at most 1 MiB */
        return 512 + draw % (1u << 20);
    return ((size_t)1 << 20) + draw % (LARGEST_BUFFER - ((size_t)1 << 20));
}

/* Orders `to` after the work queued on `from`, as CUDA requires before a
 * buffer used on one stream is used on another. */
static void hand_over(struct worker *worker, struct buffer *buffer, enum stream_kind to)
{
    if (to == buffer->stream)
        return;
    cudaEvent_t event;
    if (!call_ok(worker, cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
                 "cudaEventCreateWithFlags"))
        return;
    call_ok(worker, cudaEventRecord(event, worker->streams[buffer->stream]), "cudaEventRecord");
    call_ok(worker, cudaStreamWaitEvent(worker->streams[to], event, 0), "cudaStreamWaitEvent");
    call_ok(worker, cudaEventDestroy(event), "cudaEventDestroy");
    buffer->stream = to;
}

static void allocate(struct worker *worker, struct buffer *buffer)
{
    buffer->size = random_size(worker);
    buffer->value = (unsigned char)(1 + next_random(&worker->seed) % 255);
    buffer->stream = random_stream(worker);
    buffer->from_stream_allocator = next_random(&worker->seed) % 2 == 0;
    cudaStream_t stream = worker->streams[buffer->stream];
    void *device = NULL;
    int result = buffer->from_stream_allocator
                     ? cudaMallocAsync(&device, buffer->size, stream)
                     : cudaMalloc(&device, buffer->size);
    if (!call_ok(worker, result, buffer->from_stream_allocator ? "cudaMallocAsync" : "cudaMalloc")) {
        buffer->device = NULL;
        return;
    }
    buffer->device = device;
    /* Memory from cudaMalloc is usable on any stream at once; the filling
     * stream is chosen anew for it. */
    if (!buffer->from_stream_allocator)
        buffer->stream = random_stream(worker);
    call_ok(worker, cudaMemsetAsync(buffer->device, buffer->value, buffer->size,
                                    worker->streams[buffer->stream]),
            "cudaMemsetAsync");
}

/* Reads the buffer back on its stream and counts it corrupted when any byte
 * is not its own. */
static void check(struct worker *worker, struct buffer *buffer)
{
    cudaStream_t stream = worker->streams[buffer->stream];
    if (!call_ok(worker, cudaMemcpyAsync(worker->host, buffer->device, buffer->size,
                                         cudaMemcpyDeviceToHost, stream),
                 "cudaMemcpyAsync") ||
        !call_ok(worker, cudaStreamSynchronize(stream), "cudaStreamSynchronize"))
        return;
    worker->checked++;
    for (size_t i = 0; i < buffer->size; i++) {
        if (worker->host[i] != buffer->value) {
            worker->corrupted++;
            return;
        }
    }
}

static void release(struct worker *worker, struct buffer *buffer)
{
    check(worker, buffer);
    /* The owner's last write, queued late: the block must not reach a new
     * owner before it has landed. */
    if (next_random(&worker->seed) % 4 != 0) {
        cudaStream_t stream = worker->streams[buffer->stream];
        delay_stream(worker, stream);
        call_ok(worker, cudaMemsetAsync(buffer->device, buffer->value, buffer->size, stream),
                "cudaMemsetAsync");
    }
    /* cudaFreeAsync only for what the stream-ordered allocator handed out. */
    int result = !buffer->from_stream_allocator || next_random(&worker->seed) % 3 == 0
                     ? cudaFree(buffer->device)
                     : cudaFreeAsync(buffer->device, worker->streams[buffer->stream]);
    call_ok(worker, result, "cudaFree/cudaFreeAsync");
    buffer->device = NULL;
}

static double seconds_since(const struct timespec *start)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) * 1e-9;
}

static void *run_worker(void *argument)
{
    struct worker *worker = argument;
    worker->streams[STREAM_LEGACY] = cudaStreamLegacy;
    worker->streams[STREAM_PER_THREAD] = cudaStreamPerThread;
    call_ok(worker, cudaStreamCreateWithFlags(&worker->streams[STREAM_BLOCKING], cudaStreamDefault),
            "cudaStreamCreateWithFlags");
    call_ok(worker, cudaStreamCreateWithFlags(&worker->streams[STREAM_NON_BLOCKING],
                                              cudaStreamNonBlocking),
            "cudaStreamCreateWithFlags");
    worker->host = malloc(LARGEST_BUFFER);
    CHECK(worker->host != NULL, "no host memory");
    while (!atomic_load(&stop) && worker->failures == 0) {
        struct buffer *buffer = &worker->live[next_random(&worker->seed) % LIVE_BUFFERS];
        if (buffer->device == NULL) {
            allocate(worker, buffer);
            continue;
        }
        switch (next_random(&worker->seed) % 3) {
        case 0: /* use it on another stream, ordered after its last work */
            hand_over(worker, buffer, random_stream(worker));
            delay_stream(worker, worker->streams[buffer->stream]);
            call_ok(worker, cudaMemsetAsync(buffer->device, buffer->value, buffer->size,
                                            worker->streams[buffer->stream]),
                    "cudaMemsetAsync");
            break;
        default:
            release(worker, buffer);
            break;
        }
    }
    for (int i = 0; i < LIVE_BUFFERS; i++)
        if (worker->live[i].device != NULL)
            release(worker, &worker->live[i]);
    call_ok(worker, cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    call_ok(worker, cudaStreamDestroy(worker->streams[STREAM_BLOCKING]), "cudaStreamDestroy");
    call_ok(worker, cudaStreamDestroy(worker->streams[STREAM_NON_BLOCKING]), "cudaStreamDestroy");
    free(worker->host);
    return NULL;
}

int main(int argc, char **argv)
{
    unsigned thread_count = 8;
    unsigned seed = 1;
    if (argc > 1)
        soak_seconds = atof(argv[1]);
    if (argc > 2)
        thread_count = (unsigned)atoi(argv[2]);
    if (argc > 3)
        seed = (unsigned)strtoul(argv[3], NULL, 10);
    CHECK(soak_seconds > 0 && thread_count >= 1 && thread_count <= 64 && argc <= 4,
          "usage: soak_streams [SECONDS [THREADS (1-64) [SEED]]]");
    CHECK_CUDA(cudaFree(0));
    struct worker *workers = calloc(thread_count, sizeof *workers);
    CHECK(workers != NULL, "no host memory");
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (unsigned t = 0; t < thread_count; t++) {
        workers[t].seed = seed * 7919u + t * 104729u;
        CHECK(pthread_create(&workers[t].thread, NULL, run_worker, &workers[t]) == 0,
              "pthread_create failed");
    }
    while (seconds_since(&start) < soak_seconds)
        usleep(10000);
    atomic_store(&stop, true);
    unsigned long long checked = 0, corrupted = 0, operations = 0, failures = 0;
    for (unsigned t = 0; t < thread_count; t++) {
        pthread_join(workers[t].thread, NULL);
        checked += workers[t].checked;
        corrupted += workers[t].corrupted;
        operations += workers[t].operations;
        failures += workers[t].failures;
    }
    printf("soak: %u threads, %.1f s, %llu calls, %llu buffers checked, %llu corrupted, "
           "%llu failed calls\n",
           thread_count, seconds_since(&start), operations, checked, corrupted, failures);
    free(workers);
    return corrupted == 0 && failures == 0 && checked > 0 ? 0 : 1;
}
