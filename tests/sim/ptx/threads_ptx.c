/* Kernels from several host threads at once, each on its own stream, while
 * the CTA pool serves them all: every result must be right. A plain
 * program (not Criterion) so the ThreadSanitizer build runs it (suite
 * 'threads'). */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define ROUNDS 20
#define N 4096

#define CHECK(call)                                                                                \
    do {                                                                                           \
        CUresult result_ = (call);                                                                 \
        if (result_ != CUDA_SUCCESS) {                                                             \
            fprintf(stderr, "%s:%d: %s returned %d\n", __FILE__, __LINE__, #call, (int)result_);   \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* out[i] = in[i] * factor, and a block-wide sum of in added to *total. */
static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry work(.param .u64 in, .param .u64 out, .param .u64 total, .param .u32 factor)\n{\n"
    ".reg .b32 %r<16>; .reg .b64 %rd<12>; .reg .pred %p<3>;\n"
    ".shared .align 4 .u32 block_sum;\n"
    "ld.param.u64 %rd1, [in]; ld.param.u64 %rd2, [out]; ld.param.u64 %rd3, [total]; ld.param.u32 %r1, [factor];\n"
    "mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x; mov.u32 %r4, %tid.x; mad.lo.s32 %r5, %r2, %r3, %r4;\n"
    "setp.eq.s32 %p1, %r4, 0; @%p1 st.shared.u32 [block_sum], 0; bar.sync 0;\n"
    "mul.wide.u32 %rd4, %r5, 4; add.s64 %rd5, %rd1, %rd4; ld.global.u32 %r6, [%rd5];\n"
    "mul.lo.s32 %r7, %r6, %r1; add.s64 %rd6, %rd2, %rd4; st.global.u32 [%rd6], %r7;\n"
    "atom.shared.add.u32 %r8, [block_sum], %r6; bar.sync 0;\n"
    "@%p1 ld.shared.u32 %r9, [block_sum]; @%p1 red.global.add.u32 [%rd3], %r9;\n"
    "ret;\n}\n";

static CUcontext context;
static CUfunction work;

static void *run(void *argument)
{
    unsigned id = (unsigned)(uintptr_t)argument;
    CHECK(cuCtxSetCurrent(context));
    CUstream stream;
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    static unsigned host_in[THREADS][N], host_out[THREADS][N];
    CUdeviceptr in, out, total;
    CHECK(cuMemAlloc(&in, N * 4));
    CHECK(cuMemAlloc(&out, N * 4));
    CHECK(cuMemAlloc(&total, 4));
    unsigned long long expected_sum = 0;
    for (unsigned i = 0; i < N; i++) {
        host_in[id][i] = i + id;
        expected_sum += i + id;
    }
    CHECK(cuMemcpyHtoD(in, host_in[id], N * 4));
    for (unsigned round = 0; round < ROUNDS; round++) {
        unsigned factor = round + 1, sum = 0;
        CHECK(cuMemsetD32Async(total, 0, 1, stream));
        void *params[] = {&in, &out, &total, &factor};
        CHECK(cuLaunchKernel(work, N / 128, 1, 1, 128, 1, 1, 0, stream, params, NULL));
        CHECK(cuMemcpyDtoHAsync(host_out[id], out, N * 4, stream));
        CHECK(cuMemcpyDtoHAsync(&sum, total, 4, stream));
        CHECK(cuStreamSynchronize(stream));
        for (unsigned i = 0; i < N; i++)
            if (host_out[id][i] != host_in[id][i] * factor) {
                fprintf(stderr, "thread %u round %u: out[%u] = %u\n", id, round, i, host_out[id][i]);
                exit(1);
            }
        if (sum != (unsigned)expected_sum) {
            fprintf(stderr, "thread %u round %u: sum %u, expected %llu\n", id, round, sum, expected_sum);
            exit(1);
        }
    }
    CHECK(cuMemFree(in));
    CHECK(cuMemFree(out));
    CHECK(cuMemFree(total));
    CHECK(cuStreamDestroy(stream));
    return NULL;
}

int main(void)
{
    CHECK(cuInit(0));
    CHECK(cuDevicePrimaryCtxRetain(&context, 0));
    CHECK(cuCtxSetCurrent(context));
    CUmodule module;
    CHECK(cuModuleLoadData(&module, ptx));
    CHECK(cuModuleGetFunction(&work, module, "work"));
    pthread_t threads[THREADS];
    for (unsigned t = 0; t < THREADS; t++)
        if (pthread_create(&threads[t], NULL, run, (void *)(uintptr_t)t) != 0)
            return 1;
    for (unsigned t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
    CHECK(cuModuleUnload(module));
    CHECK(cuDevicePrimaryCtxRelease(0));
    printf("%d threads x %d rounds of kernels correct\n", THREADS, ROUNDS);
    return 0;
}
