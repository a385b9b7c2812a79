/* Stream memory operations: cuStreamWaitValue32/64 hold a stream until a
 * word in memory satisfies a condition, cuStreamWriteValue32/64 write one in
 * stream order. Tests use them to block a stream deterministically. */
#include "sim_internal.h"

#include <time.h>

static uint64_t load_value(uintptr_t address, unsigned width)
{
    if (width == 4)
        return __atomic_load_n((uint32_t *)address, __ATOMIC_ACQUIRE);
    return __atomic_load_n((uint64_t *)address, __ATOMIC_ACQUIRE);
}

static bool condition_holds(uint64_t current, uint64_t value, unsigned width, unsigned flags)
{
    uint64_t mask = width == 4 ? 0xFFFFFFFFu : ~0ULL;
    switch (flags & 0xF) {
    case CU_STREAM_WAIT_VALUE_GEQ:
        /* Wrap-around comparison, as documented. */
        return width == 4 ? (int32_t)((uint32_t)current - (uint32_t)value) >= 0
                          : (int64_t)(current - value) >= 0;
    case CU_STREAM_WAIT_VALUE_EQ:
        return current == value;
    case CU_STREAM_WAIT_VALUE_AND:
        return (current & value & mask) != 0;
    default: /* CU_STREAM_WAIT_VALUE_NOR */
        return (~(current | value) & mask) != 0;
    }
}

void sim_wait_value(const struct sim_work *work)
{
    const struct timespec pause = {.tv_sec = 0, .tv_nsec = 20000};
    while (!condition_holds(load_value(work->u.memory_value.address, work->u.memory_value.width),
                            work->u.memory_value.value, work->u.memory_value.width,
                            work->u.memory_value.flags))
        nanosleep(&pause, NULL);
}

void sim_write_value(const struct sim_work *work)
{
    if (work->u.memory_value.width == 4)
        __atomic_store_n((uint32_t *)work->u.memory_value.address,
                         (uint32_t)work->u.memory_value.value, __ATOMIC_RELEASE);
    else
        __atomic_store_n((uint64_t *)work->u.memory_value.address, work->u.memory_value.value,
                         __ATOMIC_RELEASE);
}

static CUresult queue_memory_operation(enum sim_work_kind kind, CUstream stream, CUdeviceptr addr,
                                       uint64_t value, unsigned width, unsigned flags,
                                       bool per_thread_default)
{
    unsigned known = kind == SIM_WORK_WAIT_VALUE
                         ? (unsigned)(0x3 | CU_STREAM_WAIT_VALUE_FLUSH)
                         : (unsigned)CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER;
    if ((flags & ~known) != 0 || addr % width != 0 ||
        !sim_address_is_device_accessible((uintptr_t)addr, width))
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_work work = {.kind = kind};
    work.u.memory_value.address = (uintptr_t)addr;
    work.u.memory_value.value = value;
    work.u.memory_value.width = width;
    work.u.memory_value.flags = flags;
    return sim_stream_run(stream, per_thread_default, &work, false);
}

#define MEMORY_OPERATION(name, kind, type, width, per_thread)                                 \
    SIM_EXPORT CUresult name(CUstream stream, CUdeviceptr addr, type value, unsigned int flags) \
    {                                                                                         \
        SIM_ENTER(#name);                                                                     \
        return queue_memory_operation(kind, stream, addr, value, width, flags, per_thread);   \
    }

MEMORY_OPERATION(cuStreamWaitValue32, SIM_WORK_WAIT_VALUE, cuuint32_t, 4, false)
MEMORY_OPERATION(cuStreamWaitValue32_ptsz, SIM_WORK_WAIT_VALUE, cuuint32_t, 4, true)
MEMORY_OPERATION(cuStreamWaitValue32_v2, SIM_WORK_WAIT_VALUE, cuuint32_t, 4, false)
MEMORY_OPERATION(cuStreamWaitValue32_v2_ptsz, SIM_WORK_WAIT_VALUE, cuuint32_t, 4, true)
MEMORY_OPERATION(cuStreamWaitValue64, SIM_WORK_WAIT_VALUE, cuuint64_t, 8, false)
MEMORY_OPERATION(cuStreamWaitValue64_ptsz, SIM_WORK_WAIT_VALUE, cuuint64_t, 8, true)
MEMORY_OPERATION(cuStreamWaitValue64_v2, SIM_WORK_WAIT_VALUE, cuuint64_t, 8, false)
MEMORY_OPERATION(cuStreamWaitValue64_v2_ptsz, SIM_WORK_WAIT_VALUE, cuuint64_t, 8, true)
MEMORY_OPERATION(cuStreamWriteValue32, SIM_WORK_WRITE_VALUE, cuuint32_t, 4, false)
MEMORY_OPERATION(cuStreamWriteValue32_ptsz, SIM_WORK_WRITE_VALUE, cuuint32_t, 4, true)
MEMORY_OPERATION(cuStreamWriteValue32_v2, SIM_WORK_WRITE_VALUE, cuuint32_t, 4, false)
MEMORY_OPERATION(cuStreamWriteValue32_v2_ptsz, SIM_WORK_WRITE_VALUE, cuuint32_t, 4, true)
MEMORY_OPERATION(cuStreamWriteValue64, SIM_WORK_WRITE_VALUE, cuuint64_t, 8, false)
MEMORY_OPERATION(cuStreamWriteValue64_ptsz, SIM_WORK_WRITE_VALUE, cuuint64_t, 8, true)
MEMORY_OPERATION(cuStreamWriteValue64_v2, SIM_WORK_WRITE_VALUE, cuuint64_t, 8, false)
MEMORY_OPERATION(cuStreamWriteValue64_v2_ptsz, SIM_WORK_WRITE_VALUE, cuuint64_t, 8, true)
