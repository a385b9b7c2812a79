// Twin of tests/sim/test_sim_streams.c: host functions and events in stream
// order, and the legacy default stream's ordering with blocking and
// non-blocking streams.
#include <time.h>

#include "twin_driver.h"

struct late_write {
    int delay_milliseconds;
    volatile int value;
};

static void CUDA_CB write_late(void *argument)
{
    late_write *late = (late_write *)argument;
    timespec pause = {0, late->delay_milliseconds * 1000000L};
    nanosleep(&pause, NULL);
    late->value = 42;
}

static void CUDA_CB mark_ran(void *argument)
{
    __atomic_store_n((int *)argument, 1, __ATOMIC_RELEASE);
}

static PFN_cuStreamCreate_v2000 stream_create;
static PFN_cuStreamDestroy_v4000 stream_destroy;
static PFN_cuLaunchHostFunc_v10000 launch_host;
static PFN_cuCtxSynchronize_v2000 synchronize;
static PFN_cuStreamWaitValue32_v11070 wait_value;
static PFN_cuMemHostAlloc_v2020 host_alloc;
static PFN_cuMemHostGetDevicePointer_v3020 device_pointer_of;
static PFN_cuMemFreeHost_v2000 free_host;

/* Holds `blocked` on a flag in pinned memory, queues a host function on
 * `probe`, and reports whether it ran while `blocked` was still held. A
 * probe that should run is given seconds; one that should wait, a while. */
#define SHOULD_RUN 5000
#define SHOULD_WAIT 300
static bool runs_while_blocked(CUstream blocked, CUstream probe, int patience_milliseconds)
{
    unsigned *flag = NULL;
    CUdeviceptr flag_on_device;
    TWIN_OK(host_alloc((void **)&flag, sizeof *flag, CU_MEMHOSTALLOC_DEVICEMAP));
    __atomic_store_n(flag, 0u, __ATOMIC_RELEASE);
    TWIN_OK(device_pointer_of(&flag_on_device, flag, 0));
    TWIN_OK(wait_value(blocked, flag_on_device, 1, CU_STREAM_WAIT_VALUE_GEQ));
    int ran = 0;
    TWIN_OK(launch_host(probe, mark_ran, &ran));
    for (int waited = 0; waited < patience_milliseconds && !__atomic_load_n(&ran, __ATOMIC_ACQUIRE);
         waited++) {
        timespec pause = {0, 1000000L};
        nanosleep(&pause, NULL);
    }
    bool ran_while_blocked = __atomic_load_n(&ran, __ATOMIC_ACQUIRE) != 0;
    __atomic_store_n(flag, 1u, __ATOMIC_RELEASE);
    TWIN_OK(synchronize());
    TWIN_CHECK(__atomic_load_n(&ran, __ATOMIC_ACQUIRE) == 1);
    TWIN_OK(free_host(flag));
    return ran_while_blocked;
}

int main()
{
    twin_start();
    stream_create = TWIN_ENTRY(cuStreamCreate, 2000);
    stream_destroy = TWIN_ENTRY(cuStreamDestroy, 4000);
    launch_host = TWIN_ENTRY(cuLaunchHostFunc, 10000);
    synchronize = TWIN_ENTRY(cuCtxSynchronize, 2000);
    wait_value = TWIN_ENTRY(cuStreamWaitValue32, 11070);
    host_alloc = TWIN_ENTRY(cuMemHostAlloc, 2020);
    device_pointer_of = TWIN_ENTRY(cuMemHostGetDevicePointer, 3020);
    free_host = TWIN_ENTRY(cuMemFreeHost, 2000);
    PFN_cuEventCreate_v2000 event_create = TWIN_ENTRY(cuEventCreate, 2000);
    PFN_cuEventRecord_v2000 event_record = TWIN_ENTRY(cuEventRecord, 2000);
    PFN_cuEventQuery_v2000 event_query = TWIN_ENTRY(cuEventQuery, 2000);
    PFN_cuEventSynchronize_v2000 event_synchronize = TWIN_ENTRY(cuEventSynchronize, 2000);
    PFN_cuEventDestroy_v4000 event_destroy = TWIN_ENTRY(cuEventDestroy, 4000);
    PFN_cuStreamGetId_v12000 stream_id = TWIN_ENTRY(cuStreamGetId, 12000);
    PFN_cuStreamGetId_v12000_ptsz stream_id_ptsz = TWIN_ENTRY_PER_THREAD(cuStreamGetId, 12000);

    CUstream stream;
    CUevent done;
    TWIN_OK(stream_create(&stream, CU_STREAM_NON_BLOCKING));
    TWIN_OK(event_create(&done, 0));
    late_write late = {150, 0};
    TWIN_OK(launch_host(stream, write_late, &late));
    TWIN_OK(event_record(done, stream));
    TWIN_EXPECT(event_query(done), CUDA_ERROR_NOT_READY);
    TWIN_CHECK(late.value == 0);
    TWIN_OK(event_synchronize(done));
    TWIN_CHECK(late.value == 42);
    TWIN_OK(event_query(done));
    TWIN_OK(event_destroy(done));
    TWIN_OK(stream_destroy(stream));

    CUstream blocking, non_blocking;
    TWIN_OK(stream_create(&blocking, CU_STREAM_DEFAULT));
    TWIN_OK(stream_create(&non_blocking, CU_STREAM_NON_BLOCKING));
    TWIN_CHECK(!runs_while_blocked(blocking, CU_STREAM_LEGACY, SHOULD_WAIT));
    TWIN_CHECK(runs_while_blocked(non_blocking, CU_STREAM_LEGACY, SHOULD_RUN));
    TWIN_CHECK(!runs_while_blocked(CU_STREAM_LEGACY, blocking, SHOULD_WAIT));
    TWIN_CHECK(runs_while_blocked(CU_STREAM_LEGACY, non_blocking, SHOULD_RUN));
    TWIN_CHECK(!runs_while_blocked(CU_STREAM_LEGACY, CU_STREAM_PER_THREAD, SHOULD_WAIT));
    TWIN_CHECK(runs_while_blocked(blocking, non_blocking, SHOULD_RUN));
    TWIN_OK(stream_destroy(blocking));
    TWIN_OK(stream_destroy(non_blocking));

    unsigned long long legacy_id, per_thread_id, null_ptsz_id;
    TWIN_OK(stream_id(CU_STREAM_LEGACY, &legacy_id));
    TWIN_OK(stream_id(CU_STREAM_PER_THREAD, &per_thread_id));
    TWIN_OK(stream_id_ptsz(NULL, &null_ptsz_id));
    TWIN_CHECK(legacy_id != per_thread_id);
    TWIN_CHECK(null_ptsz_id == per_thread_id);
    return twin_finish("twin_streams");
}
