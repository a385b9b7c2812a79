/* GPUSIM_RACECHECK: for each CUDA ordering rule, a program that relies on it
 * (no race) and one that lacks it (exactly one race). Races are read through
 * gpusim_race_count() and then forgotten, so each test process still exits
 * with status 0; the exit status, the report line and abort mode are checked
 * by check_races.py on program_races.c. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "racecheck_test_support.h"

#define BYTES 4096

TestSuite(racecheck, .init = racecheck_on);

struct fixture {
    CUdeviceptr buffer;
    CUstream first, second; /* non-blocking */
};

static struct fixture start(void)
{
    start_device(0);
    struct fixture fixture;
    EXPECT_OK(cuMemAlloc(&fixture.buffer, BYTES));
    EXPECT_OK(cuStreamCreate(&fixture.first, CU_STREAM_NON_BLOCKING));
    EXPECT_OK(cuStreamCreate(&fixture.second, CU_STREAM_NON_BLOCKING));
    return fixture;
}

static void write_on(CUdeviceptr buffer, CUstream stream)
{
    EXPECT_OK(cuMemsetD8Async(buffer, 0x5A, BYTES, stream));
}

/* A host function that holds its stream until the test lets it go, so a
 * query can see the stream's work still pending. */
static atomic_int gate;

static void CUDA_CB wait_for_gate(void *unused)
{
    (void)unused;
    while (atomic_load(&gate) == 0)
        sleep_milliseconds(1);
}

Test(racecheck, program_order_in_one_stream_is_no_race)
{
    struct fixture f = start();
    write_on(f.buffer, f.first);
    write_on(f.buffer, f.first);
    EXPECT_OK(cuMemcpyDtoDAsync(f.buffer, f.buffer + BYTES / 2, BYTES / 2, f.first));
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(0);
}

Test(racecheck, two_non_blocking_streams_race)
{
    struct fixture f = start();
    write_on(f.buffer, f.first);
    write_on(f.buffer, f.second);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(1);
}

Test(racecheck, disjoint_bytes_do_not_race)
{
    struct fixture f = start();
    EXPECT_OK(cuMemsetD8Async(f.buffer, 1, BYTES / 2, f.first));
    EXPECT_OK(cuMemsetD8Async(f.buffer + BYTES / 2, 2, BYTES / 2, f.second));
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(0);
}

Test(racecheck, interleaved_rows_of_two_2d_memsets_do_not_race)
{
    struct fixture f = start();
    /* 8 rows of 512 bytes: the first stream sets the left half of each row,
     * the second the right half. */
    EXPECT_OK(cuMemsetD2D8Async(f.buffer, 512, 1, 256, 8, f.first));
    EXPECT_OK(cuMemsetD2D32Async(f.buffer + 256, 512, 2, 64, 8, f.second));
    EXPECT_OK(cuMemsetD2D16Async(f.buffer + 200, 512, 3, 4, 8, f.second));
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(1); /* only the last one crosses into the first stream's half */
}

Test(racecheck, an_event_wait_orders_two_streams)
{
    struct fixture f = start();
    CUevent written;
    EXPECT_OK(cuEventCreate(&written, CU_EVENT_DISABLE_TIMING));
    write_on(f.buffer, f.first);
    EXPECT_OK(cuEventRecord(written, f.first));
    EXPECT_OK(cuStreamWaitEvent(f.second, written, 0));
    write_on(f.buffer, f.second);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(0);
}

Test(racecheck, an_event_recorded_before_the_write_does_not_order_it)
{
    struct fixture f = start();
    CUevent too_early;
    EXPECT_OK(cuEventCreate(&too_early, CU_EVENT_DISABLE_TIMING));
    EXPECT_OK(cuEventRecord(too_early, f.first));
    write_on(f.buffer, f.first);
    EXPECT_OK(cuStreamWaitEvent(f.second, too_early, 0));
    write_on(f.buffer, f.second);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(1);
}

Test(racecheck, work_queued_after_event_synchronize_is_ordered)
{
    struct fixture f = start();
    CUevent written;
    EXPECT_OK(cuEventCreate(&written, 0));
    write_on(f.buffer, f.first);
    EXPECT_OK(cuEventRecord(written, f.first));
    EXPECT_OK(cuEventSynchronize(written));
    write_on(f.buffer, f.second);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(0);
}

Test(racecheck, synchronizing_an_earlier_event_does_not_order_later_work)
{
    struct fixture f = start();
    CUevent too_early;
    EXPECT_OK(cuEventCreate(&too_early, 0));
    EXPECT_OK(cuEventRecord(too_early, f.first));
    write_on(f.buffer, f.first);
    EXPECT_OK(cuEventSynchronize(too_early));
    write_on(f.buffer, f.second);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(1);
}

Test(racecheck, a_successful_event_query_orders_later_work)
{
    struct fixture f = start();
    CUevent written;
    EXPECT_OK(cuEventCreate(&written, 0));
    write_on(f.buffer, f.first);
    EXPECT_OK(cuEventRecord(written, f.first));
    CUresult query;
    while ((query = cuEventQuery(written)) == CUDA_ERROR_NOT_READY)
        sleep_milliseconds(1);
    EXPECT_RESULT(query, CUDA_SUCCESS);
    write_on(f.buffer, f.second);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(0);
}

Test(racecheck, an_event_query_that_is_not_ready_orders_nothing)
{
    struct fixture f = start();
    CUevent written;
    EXPECT_OK(cuEventCreate(&written, 0));
    EXPECT_OK(cuLaunchHostFunc(f.first, wait_for_gate, NULL));
    write_on(f.buffer, f.first);
    EXPECT_OK(cuEventRecord(written, f.first));
    EXPECT_RESULT(cuEventQuery(written), CUDA_ERROR_NOT_READY);
    write_on(f.buffer, f.second);
    atomic_store(&gate, 1);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(1);
}

Test(racecheck, a_successful_stream_query_orders_later_work)
{
    struct fixture f = start();
    write_on(f.buffer, f.first);
    CUresult query;
    while ((query = cuStreamQuery(f.first)) == CUDA_ERROR_NOT_READY)
        sleep_milliseconds(1);
    EXPECT_RESULT(query, CUDA_SUCCESS);
    write_on(f.buffer, f.second);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(0);
}

Test(racecheck, a_stream_query_that_is_not_ready_orders_nothing)
{
    struct fixture f = start();
    EXPECT_OK(cuLaunchHostFunc(f.first, wait_for_gate, NULL));
    write_on(f.buffer, f.first);
    EXPECT_RESULT(cuStreamQuery(f.first), CUDA_ERROR_NOT_READY);
    write_on(f.buffer, f.second);
    atomic_store(&gate, 1);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(1);
}

Test(racecheck, stream_synchronize_orders_later_work)
{
    struct fixture f = start();
    write_on(f.buffer, f.first);
    EXPECT_OK(cuStreamSynchronize(f.first));
    write_on(f.buffer, f.second);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(0);
}

Test(racecheck, synchronizing_another_stream_orders_nothing)
{
    struct fixture f = start();
    write_on(f.buffer, f.first);
    EXPECT_OK(cuStreamSynchronize(f.second));
    write_on(f.buffer, f.second);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(1);
}

Test(racecheck, context_synchronize_orders_later_work)
{
    struct fixture f = start();
    write_on(f.buffer, f.first);
    EXPECT_OK(cuCtxSynchronize());
    write_on(f.buffer, f.second);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(0);
}

Test(racecheck, the_legacy_stream_orders_with_blocking_streams)
{
    struct fixture f = start();
    CUstream blocking;
    EXPECT_OK(cuStreamCreate(&blocking, 0));
    write_on(f.buffer, blocking);
    write_on(f.buffer, NULL); /* after the blocking stream's write */
    write_on(f.buffer, blocking); /* after the legacy stream's write */
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(0);
}

Test(racecheck, the_legacy_stream_does_not_order_with_non_blocking_streams)
{
    struct fixture f = start();
    write_on(f.buffer, CU_STREAM_LEGACY);
    write_on(f.buffer, f.first);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(1);
}

Test(racecheck, two_blocking_streams_are_ordered_only_through_legacy_work)
{
    start_device(0);
    CUdeviceptr buffer;
    EXPECT_OK(cuMemAlloc(&buffer, BYTES));
    CUstream one, two;
    EXPECT_OK(cuStreamCreate(&one, 0));
    EXPECT_OK(cuStreamCreate(&two, 0));
    write_on(buffer, one);
    write_on(buffer, two);
    EXPECT_RACES(1);
    EXPECT_OK(cuMemsetD8Async(buffer, 0, 1, NULL)); /* legacy work after both */
    write_on(buffer, one); /* ordered after both first writes through it */
    write_on(buffer, two);
    EXPECT_RACES(1); /* two's second write races with one's second write */
    EXPECT_OK(cuCtxSynchronize());
}

Test(racecheck, a_destroyed_blocking_stream_still_orders_before_legacy_work)
{
    struct fixture f = start();
    CUstream blocking;
    EXPECT_OK(cuStreamCreate(&blocking, 0));
    EXPECT_OK(cuLaunchHostFunc(blocking, wait_for_gate, NULL));
    write_on(f.buffer, blocking);
    EXPECT_OK(cuStreamDestroy(blocking));
    atomic_store(&gate, 1);
    sleep_milliseconds(20); /* its worker leaves the context */
    write_on(f.buffer, NULL);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(0);
}

Test(racecheck, a_destroyed_stream_still_races)
{
    struct fixture f = start();
    write_on(f.buffer, f.first);
    EXPECT_OK(cuStreamDestroy(f.first));
    sleep_milliseconds(20);
    write_on(f.buffer, f.second);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(1);
}

/* A stream synchronized and destroyed retires; a new stream takes its clock
 * slot. Its old entries in other clocks must not order the new stream. */
Test(racecheck, a_new_stream_in_a_retired_streams_slot_is_not_ordered_by_old_entries)
{
    struct fixture f = start();
    CUdeviceptr other;
    EXPECT_OK(cuMemAlloc(&other, BYTES));
    CUstream retiring;
    EXPECT_OK(cuStreamCreate(&retiring, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < 3; i++)
        write_on(f.buffer, retiring);
    EXPECT_OK(cuStreamSynchronize(retiring));
    EXPECT_OK(cuStreamDestroy(retiring));
    sleep_milliseconds(20); /* its worker leaves */
    EXPECT_OK(cuCtxSynchronize());
    write_on(f.buffer, f.first); /* ordered after the retired stream */
    CUstream successor;
    EXPECT_OK(cuStreamCreate(&successor, CU_STREAM_NON_BLOCKING));
    write_on(other, successor);
    write_on(f.buffer, successor);
    EXPECT_RACES(1); /* with the first stream's write, not with the retired one */
    write_on(other, f.first);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(1);
}

Test(racecheck, the_per_thread_stream_orders_with_the_legacy_stream)
{
    struct fixture f = start();
    write_on(f.buffer, CU_STREAM_PER_THREAD);
    write_on(f.buffer, CU_STREAM_LEGACY);
    write_on(f.buffer, CU_STREAM_PER_THREAD);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(0);
}

struct other_thread {
    CUcontext context;
    CUdeviceptr buffer;
};

static void *write_on_own_per_thread_stream(void *argument)
{
    struct other_thread *other = argument;
    cuCtxSetCurrent(other->context);
    /* No CUDA synchronization: a cuStreamSynchronize here would order the
     * write before everything any host thread queues later, since the
     * detector sees all host threads as one host. */
    cuMemsetD8Async(other->buffer, 7, BYTES, CU_STREAM_PER_THREAD);
    return NULL;
}

Test(racecheck, per_thread_streams_of_two_threads_race)
{
    CUcontext context = start_device(0);
    struct other_thread other = {.context = context};
    EXPECT_OK(cuMemAlloc(&other.buffer, BYTES));
    pthread_t thread;
    cr_assert_eq(pthread_create(&thread, NULL, write_on_own_per_thread_stream, &other), 0);
    pthread_join(thread, NULL); /* host synchronization the device cannot see */
    write_on(other.buffer, CU_STREAM_PER_THREAD);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(1);
}

Test(racecheck, a_host_function_is_ordered_in_its_stream_only)
{
    struct fixture f = start();
    atomic_int flag = 0;
    write_on(f.buffer, f.first);
    EXPECT_OK(cuLaunchHostFunc(f.first, raise_flag, &flag));
    write_on(f.buffer, f.first);
    EXPECT_OK(cuStreamSynchronize(f.first));
    EXPECT_RACES(0);
    write_on(f.buffer, f.first);
    EXPECT_OK(cuLaunchHostFunc(f.first, raise_flag, &flag));
    while (atomic_load(&flag) == 0) /* seen by the host, not by CUDA */
        sleep_milliseconds(1);
    write_on(f.buffer, f.second);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(1);
}

Test(racecheck, a_copy_that_blocks_the_host_orders_later_work)
{
    struct fixture f = start();
    static char host[BYTES];
    write_on(f.buffer, NULL);
    EXPECT_OK(cuMemcpyDtoH(host, f.buffer, BYTES));
    write_on(f.buffer, f.first);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(0);
    EXPECT_OK(cuMemcpyHtoD(f.buffer, host, BYTES));
    write_on(f.buffer, f.second);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(0);
    /* The legacy stream's copy does not wait for a non-blocking stream. */
    write_on(f.buffer, f.first);
    EXPECT_OK(cuMemcpyHtoD(f.buffer, host, BYTES));
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(1);
}

Test(racecheck, a_device_to_device_copy_does_not_block_the_host)
{
    struct fixture f = start();
    CUdeviceptr other;
    EXPECT_OK(cuMemAlloc(&other, BYTES));
    EXPECT_OK(cuMemcpyDtoD(other, f.buffer, BYTES));
    write_on(other, f.first);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(1);
}

Test(racecheck, two_streams_reading_the_same_bytes_do_not_race)
{
    struct fixture f = start();
    CUdeviceptr one, two;
    EXPECT_OK(cuMemAlloc(&one, BYTES));
    EXPECT_OK(cuMemAlloc(&two, BYTES));
    EXPECT_OK(cuMemcpyDtoDAsync(one, f.buffer, BYTES, f.first));
    EXPECT_OK(cuMemcpyDtoDAsync(two, f.buffer, BYTES, f.second));
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(0);
    EXPECT_OK(cuMemcpyDtoDAsync(one, f.buffer, BYTES, f.first));
    write_on(f.buffer, f.second); /* write after an unordered read */
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(1);
}

Test(racecheck, stream_memory_operations_do_not_race_with_each_other)
{
    struct fixture f = start();
    EXPECT_OK(cuStreamWriteValue32(f.first, f.buffer, 1, 0));
    EXPECT_OK(cuStreamWaitValue32(f.second, f.buffer, 1, CU_STREAM_WAIT_VALUE_GEQ));
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(0);
    EXPECT_OK(cuStreamWriteValue64(f.first, f.buffer, 2, 0));
    write_on(f.buffer, f.second);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(1);
}

Test(racecheck, memory_from_cuMemAlloc_after_cuMemFree_starts_fresh)
{
    struct fixture f = start();
    write_on(f.buffer, f.first);
    EXPECT_OK(cuMemFree(f.buffer));
    CUdeviceptr reused;
    EXPECT_OK(cuMemAlloc(&reused, BYTES));
    write_on(reused, f.second);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(0);
}

Test(racecheck, cuMemFree_waits_for_the_context_as_the_driver_does)
{
    struct fixture f = start();
    CUdeviceptr other;
    EXPECT_OK(cuMemAlloc(&other, BYTES));
    write_on(f.buffer, f.first);
    EXPECT_OK(cuMemFree(other));
    write_on(f.buffer, f.second);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(0);
}

Test(racecheck, a_pool_address_reused_after_cuMemFreeAsync_starts_fresh)
{
    struct fixture f = start();
    size_t before = gpusim_physical_bytes(0);
    CUdeviceptr first;
    EXPECT_OK(cuMemAllocAsync(&first, BYTES, f.first));
    write_on(first, f.first);
    EXPECT_OK(cuMemFreeAsync(first, f.first));
    /* Once the free has run (the host cannot know it), the next allocation
     * of that size gets the same address back in practice. */
    while (gpusim_physical_bytes(0) > before)
        sleep_milliseconds(1);
    CUdeviceptr second;
    EXPECT_OK(cuMemAllocAsync(&second, BYTES, f.second));
    cr_log_info("the second allocation %s the first one's address",
                second == first ? "reuses" : "does not reuse");
    write_on(second, f.second);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(0);
}

Test(racecheck, cuMemFreeAsync_unordered_with_a_use_races)
{
    struct fixture f = start();
    CUdeviceptr pooled;
    EXPECT_OK(cuMemAllocAsync(&pooled, BYTES, f.first));
    atomic_int written = 0;
    write_on(pooled, f.first);
    EXPECT_OK(cuLaunchHostFunc(f.first, raise_flag, &written));
    /* Host functions keep the free behind the write in this run, so the
     * simulator does not fault, but CUDA does not order the two. */
    EXPECT_OK(cuLaunchHostFunc(f.second, wait_for_flag, &written));
    EXPECT_OK(cuMemFreeAsync(pooled, f.second));
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(1);
}

#define PAGE ((size_t)2 << 20)

static CUdeviceptr map_page(CUmemGenericAllocationHandle *handle)
{
    CUmemAllocationProp properties;
    memset(&properties, 0, sizeof properties);
    properties.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CUdeviceptr address;
    EXPECT_OK(cuMemAddressReserve(&address, PAGE, 0, 0, 0));
    EXPECT_OK(cuMemCreate(handle, PAGE, &properties, 0));
    EXPECT_OK(cuMemMap(address, PAGE, 0, *handle, 0));
    CUmemAccessDesc access = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
                              .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    EXPECT_OK(cuMemSetAccess(address, PAGE, &access, 1));
    return address;
}

Test(racecheck, unmapping_memory_a_stream_still_uses_races)
{
    struct fixture f = start();
    CUmemGenericAllocationHandle handle;
    CUdeviceptr address = map_page(&handle);
    write_on(address, f.first);
    EXPECT_OK(cuMemUnmap(address, PAGE));
    EXPECT_RACES(1);
    EXPECT_OK(cuMemRelease(handle));
    EXPECT_OK(cuMemAddressFree(address, PAGE));
    EXPECT_RACES(0);
}

Test(racecheck, unmapping_after_synchronizing_is_no_race)
{
    struct fixture f = start();
    CUmemGenericAllocationHandle handle;
    CUdeviceptr address = map_page(&handle);
    write_on(address, f.first);
    EXPECT_OK(cuStreamSynchronize(f.first));
    EXPECT_OK(cuMemUnmap(address, PAGE));
    EXPECT_OK(cuMemRelease(handle));
    /* A new mapping at the same address starts fresh. */
    EXPECT_OK(cuMemCreate(&handle, PAGE, &(CUmemAllocationProp){
                                              .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                              .location.type = CU_MEM_LOCATION_TYPE_DEVICE},
                          0));
    EXPECT_OK(cuMemMap(address, PAGE, 0, handle, 0));
    CUmemAccessDesc access = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
                              .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    EXPECT_OK(cuMemSetAccess(address, PAGE, &access, 1));
    write_on(address, f.second);
    EXPECT_OK(cuStreamSynchronize(f.second));
    EXPECT_OK(cuMemUnmap(address, PAGE));
    EXPECT_OK(cuMemRelease(handle));
    EXPECT_OK(cuMemAddressFree(address, PAGE));
    EXPECT_RACES(0);
}

Test(racecheck, host_memory_is_not_tracked)
{
    struct fixture f = start();
    void *pinned;
    EXPECT_OK(cuMemAllocHost(&pinned, BYTES));
    static char pageable[BYTES];
    /* Both streams write the same pinned bytes; the device bytes are only
     * read. */
    EXPECT_OK(cuMemcpyDtoHAsync(pinned, f.buffer, BYTES / 2, f.first));
    EXPECT_OK(cuMemcpyDtoHAsync(pinned, f.buffer, BYTES / 2, f.second));
    EXPECT_OK(cuMemcpyHtoDAsync(f.buffer + BYTES / 2, pageable, BYTES / 2, f.first));
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_OK(cuMemcpyDtoHAsync(pageable, f.buffer, BYTES / 2, f.first));
    EXPECT_OK(cuMemcpyDtoHAsync(pageable, f.buffer, BYTES / 2, f.second));
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(0);
    EXPECT_OK(cuMemFreeHost(pinned));
}

Test(racecheck, the_stats_file_counts_races)
{
    struct fixture f = start();
    write_on(f.buffer, f.first);
    write_on(f.buffer, f.second);
    EXPECT_OK(cuCtxSynchronize());
    char path[] = "/tmp/gpusim-racecheck-stats-XXXXXX";
    int descriptor = mkstemp(path);
    cr_assert_geq(descriptor, 0);
    close(descriptor);
    cr_assert_eq(gpusim_write_stats(path), 0);
    FILE *file = fopen(path, "r");
    char text[16384] = {0};
    size_t length = fread(text, 1, sizeof text - 1, file);
    fclose(file);
    unlink(path);
    text[length] = '\0';
    cr_assert(strstr(text, "\"races\": 1,") != NULL, "stats: %s", text);
    EXPECT_RACES(1);
}

Test(racecheck, off_by_default)
{
    unsetenv("GPUSIM_RACECHECK");
    struct fixture f = start();
    write_on(f.buffer, f.first);
    write_on(f.buffer, f.second);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(0);
}
