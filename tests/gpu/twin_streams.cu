// Twin of tests/sim/test_sim_streams.c: host functions and events in stream
// order, and the legacy default stream's ordering with blocking and
// non-blocking streams.
#include <stdatomic.h>
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

struct ordering_probe {
    volatile int *clock;
    volatile int seen_at;
};

static void CUDA_CB stamp(void *argument)
{
    ordering_probe *probe = (ordering_probe *)argument;
    probe->seen_at = __atomic_fetch_add(probe->clock, 1, __ATOMIC_SEQ_CST);
}

static PFN_cuStreamCreate_v2000 stream_create;
static PFN_cuStreamDestroy_v4000 stream_destroy;
static PFN_cuLaunchHostFunc_v10000 launch_host;
static PFN_cuCtxSynchronize_v2000 synchronize;

/* Does legacy work queued after slow work on a stream with `flags` wait? */
static bool legacy_waits_for(unsigned flags)
{
    CUstream other;
    TWIN_OK(stream_create(&other, flags));
    volatile int clock = 1;
    late_write slow = {150, 0};
    ordering_probe slow_done = {&clock, 0}, legacy = {&clock, 0};
    TWIN_OK(launch_host(other, write_late, &slow));
    TWIN_OK(launch_host(other, stamp, &slow_done));
    TWIN_OK(launch_host(CU_STREAM_LEGACY, stamp, &legacy));
    TWIN_OK(synchronize());
    TWIN_OK(stream_destroy(other));
    return legacy.seen_at > slow_done.seen_at;
}

int main()
{
    twin_start();
    stream_create = TWIN_ENTRY(cuStreamCreate, 2000);
    stream_destroy = TWIN_ENTRY(cuStreamDestroy, 4000);
    launch_host = TWIN_ENTRY(cuLaunchHostFunc, 10000);
    synchronize = TWIN_ENTRY(cuCtxSynchronize, 2000);
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

    TWIN_CHECK(legacy_waits_for(CU_STREAM_DEFAULT));
    TWIN_CHECK(!legacy_waits_for(CU_STREAM_NON_BLOCKING));

    unsigned long long legacy_id, per_thread_id, null_ptsz_id;
    TWIN_OK(stream_id(CU_STREAM_LEGACY, &legacy_id));
    TWIN_OK(stream_id(CU_STREAM_PER_THREAD, &per_thread_id));
    TWIN_OK(stream_id_ptsz(NULL, &null_ptsz_id));
    TWIN_CHECK(legacy_id != per_thread_id);
    TWIN_CHECK(null_ptsz_id == per_thread_id);
    return twin_finish("twin_streams");
}
