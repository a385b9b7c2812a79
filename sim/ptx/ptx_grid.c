/* Grids: the CTAs of every running launch are handed out to one
 * process-wide pool of worker threads (one per host CPU besides the
 * launching thread, started on the first launch), so a kernel uses every core and concurrent kernels of
 * different streams share them. The thread that launched the grid (a
 * stream's worker) runs CTAs too while it waits, so a grid always makes
 * progress even while the pool is busy with others. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptx_cta.h"

struct grid_job {
    struct ptx_launch *launch;
    unsigned long long total;    /* CTAs in the grid */
    unsigned long long next;     /* next CTA to hand out */
    unsigned long long finished; /* CTAs done */
    bool failed;
    struct grid_job *next_job;
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_available = PTHREAD_COND_INITIALIZER;
static pthread_cond_t job_finished = PTHREAD_COND_INITIALIZER;
static struct grid_job *jobs; /* under pool_lock */
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static unsigned pool_size;

/* Report under the lock of the job's launch: the first failure wins. */
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;

void ptx_grid_report(struct ptx_launch *launch, enum ptx_status status, const char *format, ...)
{
    pthread_mutex_lock(&report_lock);
    if (launch->status == PTX_OK) {
        launch->status = status;
        va_list arguments;
        va_start(arguments, format);
        vsnprintf(launch->message, sizeof launch->message, format, arguments);
        va_end(arguments);
    }
    pthread_mutex_unlock(&report_lock);
}

/* ---- the pool ----------------------------------------------------------- */

static void cta_coordinates(const struct ptx_launch *launch, unsigned long long index, unsigned ctaid[3])
{
    ctaid[0] = (unsigned)(index % launch->grid[0]);
    ctaid[1] = (unsigned)((index / launch->grid[0]) % launch->grid[1]);
    ctaid[2] = (unsigned)(index / ((unsigned long long)launch->grid[0] * launch->grid[1]));
}

/* Runs one CTA of `job` claimed as `index`; call without the lock. */
static void run_claimed(struct grid_job *job, unsigned long long index, struct ptx_cta_memory *memory,
                        unsigned worker)
{
    unsigned ctaid[3];
    cta_coordinates(job->launch, index, ctaid);
    enum ptx_status status = ptx_run_cta(job->launch, memory, worker, ctaid);
    pthread_mutex_lock(&pool_lock);
    if (status != PTX_OK && !job->failed) {
        job->failed = true;
        if (job->launch->status == PTX_OK)
            ptx_grid_report(job->launch, status, "a CTA failed");
        /* A faulting kernel ends: no further CTA starts. */
        job->total = job->next;
    }
    job->finished++;
    if (job->finished == job->total && job->next == job->total)
        pthread_cond_broadcast(&job_finished);
    pthread_mutex_unlock(&pool_lock);
}

/* The first job with a CTA left to hand out; under pool_lock. */
static struct grid_job *claimable_job(void)
{
    for (struct grid_job *job = jobs; job != NULL; job = job->next_job)
        if (job->next < job->total)
            return job;
    return NULL;
}

static void *pool_worker(void *argument)
{
    unsigned worker = (unsigned)(uintptr_t)argument;
    struct ptx_cta_memory memory = {0};
    pthread_mutex_lock(&pool_lock);
    for (;;) {
        struct grid_job *job;
        while ((job = claimable_job()) == NULL)
            pthread_cond_wait(&work_available, &pool_lock);
        unsigned long long index = job->next++;
        pthread_mutex_unlock(&pool_lock);
        run_claimed(job, index, &memory, worker);
        pthread_mutex_lock(&pool_lock);
    }
    return NULL;
}

/* GPUSIM_KERNEL_THREADS=N: host threads that run a grid's CTAs, the
 * launching stream worker included (1..256; default: one per online CPU),
 * so the pool holds N - 1. A bad value stops the process like every other
 * GPUSIM_* variable. */
static unsigned pool_size_from_environment(void)
{
    const char *text = getenv("GPUSIM_KERNEL_THREADS");
    if (text == NULL || *text == '\0') {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        return cpus < 1 ? 1 : cpus > 256 ? 256 : (unsigned)cpus;
    }
    char *end;
    long value = strtol(text, &end, 10);
    if (*end != '\0' || value < 1 || value > 256) {
        fprintf(stderr, "gpusim: GPUSIM_KERNEL_THREADS: bad value '%s' (expected a number of threads, 1..256)\n",
                text);
        exit(2);
    }
    return (unsigned)value;
}

static void start_pool(void)
{
    pool_size = pool_size_from_environment() - 1;
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attributes, 512 * 1024);
    unsigned started = 0;
    for (unsigned i = 0; i < pool_size; i++) {
        pthread_t thread;
        if (pthread_create(&thread, &attributes, pool_worker, (void *)(uintptr_t)(i + 1)) == 0)
            started++;
    }
    pthread_attr_destroy(&attributes);
    pool_size = started;
}

/* A cooperative grid on the calling thread, every CTA resident and each
 * taking a turn of its warps in order, so blocks that wait for each other
 * (a grid-wide barrier) all make progress however few host threads there
 * are. Its CTAs then run one at a time: the cost of that guarantee. */
static enum ptx_status run_resident(struct ptx_launch *launch, unsigned long long total)
{
    struct ptx_cta_memory *memories = calloc(total, sizeof *memories);
    struct ptx_cta_run **runs = calloc(total, sizeof *runs);
    if (memories == NULL || runs == NULL) {
        ptx_grid_report(launch, PTX_OUT_OF_MEMORY, "kernel %s: out of host memory for %llu resident CTAs",
                        launch->function->name, total);
        free(memories);
        free(runs);
        return launch->status;
    }
    unsigned long long started = 0, running = 0;
    for (; started < total; started++) {
        unsigned ctaid[3];
        cta_coordinates(launch, started, ctaid);
        runs[started] = ptx_cta_start(launch, &memories[started], 0, ctaid);
        if (runs[started] == NULL)
            break;
        running++;
    }
    bool failed = started < total;
    while (running > 0 && !failed) {
        for (unsigned long long index = 0; index < started && !failed; index++) {
            if (runs[index] == NULL || !ptx_cta_resume(runs[index], 1))
                continue;
            enum ptx_status status = ptx_cta_finish(runs[index]);
            runs[index] = NULL;
            running--;
            if (status != PTX_OK) {
                failed = true;
                if (launch->status == PTX_OK)
                    ptx_grid_report(launch, status, "a CTA failed");
            }
        }
    }
    /* A failure ends the grid: the other CTAs stop where they are. */
    for (unsigned long long index = 0; index < started; index++)
        if (runs[index] != NULL)
            ptx_cta_finish(runs[index]);
    for (unsigned long long index = 0; index < total; index++)
        ptx_cta_memory_release(&memories[index]);
    free(memories);
    free(runs);
    return launch->status;
}

enum ptx_status ptx_launch_run(struct ptx_launch *launch)
{
    launch->status = PTX_OK;
    launch->message[0] = '\0';
    unsigned long long total = (unsigned long long)launch->grid[0] * launch->grid[1] * launch->grid[2];
    if (total == 0)
        return PTX_OK;
    if (launch->cooperative && total > 1)
        return run_resident(launch, total);
    pthread_once(&pool_once, start_pool);
    struct grid_job job = {.launch = launch, .total = total};
    pthread_mutex_lock(&pool_lock);
    job.next_job = jobs;
    jobs = &job;
    if (total > 1)
        pthread_cond_broadcast(&work_available);
    /* Help with this grid until every CTA has been handed out. The
     * launcher's buffers last one grid: stream workers come and go, and
     * thread-local buffers would outlive nothing but leak. */
    struct ptx_cta_memory launcher_memory = {0};
    while (job.next < job.total) {
        unsigned long long index = job.next++;
        pthread_mutex_unlock(&pool_lock);
        run_claimed(&job, index, &launcher_memory, 0);
        pthread_mutex_lock(&pool_lock);
    }
    while (job.finished < job.next)
        pthread_cond_wait(&job_finished, &pool_lock);
    struct grid_job **link = &jobs;
    while (*link != &job)
        link = &(*link)->next_job;
    *link = job.next_job;
    pthread_mutex_unlock(&pool_lock);
    ptx_cta_memory_release(&launcher_memory);
    return launch->status;
}
