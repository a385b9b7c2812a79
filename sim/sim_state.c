/* The driver's global state: cuInit, the device table, the lock and the
 * registry of live handles. */
#include "sim_internal.h"

#include <stdio.h>
#include <stdlib.h>

struct sim_state sim = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

void sim_lock(void)
{
    pthread_mutex_lock(&sim.lock);
}

void sim_unlock(void)
{
    pthread_mutex_unlock(&sim.lock);
}

unsigned long long sim_next_id(void)
{
    return atomic_fetch_add(&sim.next_id, 1) + 1;
}

static int compare_handles(const struct sim_handle *a, const struct sim_handle *b)
{
    return a < b ? -1 : a > b;
}

RB_HEAD(sim_handle_tree, sim_handle);
RB_GENERATE_STATIC(sim_handle_tree, sim_handle, link, compare_handles)

static struct sim_handle_tree live_handles = RB_INITIALIZER(&live_handles);

void sim_handle_register(struct sim_handle *handle, enum sim_handle_kind kind)
{
    handle->kind = kind;
    RB_INSERT(sim_handle_tree, &live_handles, handle);
}

void sim_handle_unregister(struct sim_handle *handle)
{
    RB_REMOVE(sim_handle_tree, &live_handles, handle);
    handle->kind = 0;
}

bool sim_handle_is_live(const void *pointer, enum sim_handle_kind kind)
{
    if (pointer == NULL)
        return false;
    struct sim_handle *found =
        RB_FIND(sim_handle_tree, &live_handles, (struct sim_handle *)(uintptr_t)pointer);
    return found != NULL && found->kind == kind;
}

void sim_write_stats_at_exit(void);

static void after_fork_in_child(void)
{
    if (atomic_load(&sim.initialized))
        atomic_store(&sim.forked_after_init, true);
}

static void initialize_once(void)
{
    sim_read_environment(&sim.settings);
    sim.device_count = sim.settings.device_count;
    for (int i = 0; i < sim.device_count; i++) {
        struct sim_device *device = &sim.devices[i];
        device->ordinal = i;
        device->capacity = sim.settings.memory_per_device;
        device->physical_file = -1;
        device->primary = calloc(1, sizeof *device->primary);
        if (device->primary == NULL)
            abort();
        device->primary->device = device;
        device->primary->primary = true;
        pthread_mutex_init(&device->primary->submit_lock, NULL);
        LIST_INIT(&device->primary->streams);
        sim_handle_register(&device->primary->handle, SIM_HANDLE_CONTEXT);
        device->default_pool = sim_pool_create_default(device);
        device->current_pool = device->default_pool;
    }
    /* Before the stats writer, so that its exit status handler runs after
     * the stats file is written. */
    sim_racecheck_initialize();
    if (sim.settings.stats_path[0] != '\0')
        atexit(sim_write_stats_at_exit);
    pthread_atfork(NULL, NULL, after_fork_in_child);
    /* Like the real driver, a failed cuInit (no device) leaves every other
     * call returning CUDA_ERROR_NOT_INITIALIZED. */
    atomic_store_explicit(&sim.initialized, sim.device_count > 0, memory_order_release);
}

SIM_EXPORT CUresult cuInit(unsigned int Flags)
{
    SIM_ENTER_BEFORE_INIT("cuInit");
    if (atomic_load(&sim.forked_after_init))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    pthread_once(&init_once, initialize_once);
    sim_unlock();
    return sim.device_count == 0 ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDriverGetVersion(int *driverVersion)
{
    SIM_ENTER_BEFORE_INIT("cuDriverGetVersion");
    if (driverVersion == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = SIM_DRIVER_VERSION;
    return CUDA_SUCCESS;
}
