// Two streams ordered by events: a producer fills a buffer, a consumer waits
// for the producer's event before transforming it. Host callbacks queued
// with cudaStreamAddCallback and cudaLaunchHostFunc record the order in
// which they ran, which stream order fixes. Timing events must measure a
// non-negative time; the time itself is not printed.
#include <mutex>
#include <vector>

#include "sample_check.h"

__global__ void fill(int *data, int n, int base)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        data[i] = base + i;
}

__global__ void square_plus(const int *in, int *out, int n, int amount)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = in[i] * in[i] + amount;
}

// What the callbacks write: the order they ran in, and what they saw.
struct Journal {
    std::mutex lock;
    std::vector<int> order;
    int failed_status = 0;
};

struct Step {
    Journal *journal;
    int id;
};

static void record(Step *step)
{
    std::lock_guard<std::mutex> guard(step->journal->lock);
    step->journal->order.push_back(step->id);
}

static void CUDART_CB stream_callback(cudaStream_t, cudaError_t status, void *data)
{
    Step *step = static_cast<Step *>(data);
    if (status != cudaSuccess) {
        std::lock_guard<std::mutex> guard(step->journal->lock);
        step->journal->failed_status++;
    }
    record(step);
}

static void CUDART_CB host_function(void *data)
{
    record(static_cast<Step *>(data));
}

int main()
{
    const int n = 1 << 16, rounds = 3;
    const int blocks = (n + 255) / 256;
    cudaStream_t producer, consumer;
    CHECK(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking));
    cudaEvent_t filled, start, stop;
    CHECK(cudaEventCreateWithFlags(&filled, cudaEventDisableTiming));
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    int *input, *output;
    CHECK(cudaMalloc(&input, n * sizeof(int)));
    CHECK(cudaMalloc(&output, rounds * n * sizeof(int)));

    Journal journal;
    // Ids 10*r+1 (after the fill, producer), 10*r+2 (after the transform,
    // consumer, host function) and 10*r+3 (consumer, stream callback).
    std::vector<Step> steps;
    steps.reserve(rounds * 3);
    for (int r = 0; r < rounds; r++)
        for (int k = 1; k <= 3; k++)
            steps.push_back(Step{&journal, 10 * r + k});

    CHECK(cudaEventRecord(start, consumer));
    for (int r = 0; r < rounds; r++) {
        // The producer may refill the input only after the consumer of the
        // previous round read it.
        if (r > 0) {
            cudaEvent_t consumed;
            CHECK(cudaEventCreateWithFlags(&consumed, cudaEventDisableTiming));
            CHECK(cudaEventRecord(consumed, consumer));
            CHECK(cudaStreamWaitEvent(producer, consumed, 0));
            CHECK(cudaEventDestroy(consumed));
        }
        fill<<<blocks, 256, 0, producer>>>(input, n, 1000 * r);
        CHECK(cudaGetLastError());
        CHECK(cudaEventRecord(filled, producer));
        CHECK(cudaStreamAddCallback(producer, stream_callback, &steps[3 * r], 0));
        CHECK(cudaStreamWaitEvent(consumer, filled, 0));
        square_plus<<<blocks, 256, 0, consumer>>>(input, output + r * n, n, r);
        CHECK(cudaGetLastError());
        CHECK(cudaLaunchHostFunc(consumer, host_function, &steps[3 * r + 1]));
        CHECK(cudaStreamAddCallback(consumer, stream_callback, &steps[3 * r + 2], 0));
    }
    CHECK(cudaEventRecord(stop, consumer));
    CHECK(cudaEventSynchronize(stop));
    float milliseconds = -1.0f;
    CHECK(cudaEventElapsedTime(&milliseconds, start, stop));
    CHECK(cudaStreamSynchronize(producer));
    CHECK(cudaEventQuery(filled));

    std::vector<int> results(rounds * n);
    CHECK(cudaMemcpy(results.data(), output, results.size() * sizeof(int), cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < n; i++) {
            long long value = 1000LL * r + i;
            if (results[r * n + i] != (int)(value * value + r))
                wrong++;
        }

    // Per stream the callbacks ran in the order queued; across streams each
    // round's producer callback could run before or after the consumer's, so
    // only the per-stream orders are checked, plus that every one ran once.
    bool order_right = journal.order.size() == (size_t)(rounds * 3) && journal.failed_status == 0;
    std::vector<int> producer_order, consumer_order;
    for (int id : journal.order)
        (id % 10 == 1 ? producer_order : consumer_order).push_back(id);
    for (int r = 0; r < rounds && order_right; r++) {
        order_right = producer_order.size() == (size_t)rounds && producer_order[r] == 10 * r + 1 &&
                      consumer_order.size() == (size_t)(2 * rounds) &&
                      consumer_order[2 * r] == 10 * r + 2 && consumer_order[2 * r + 1] == 10 * r + 3;
    }

    CHECK(cudaFree(input));
    CHECK(cudaFree(output));
    CHECK(cudaEventDestroy(filled));
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
    CHECK(cudaStreamDestroy(producer));
    CHECK(cudaStreamDestroy(consumer));
    if (wrong || !order_right || !(milliseconds >= 0.0f)) {
        std::printf("events_callbacks: %d values wrong, callback order %s, elapsed time %s\n", wrong,
                    order_right ? "right" : "wrong", milliseconds >= 0.0f ? "valid" : "invalid");
        return 1;
    }
    std::printf("events_callbacks: %d rounds of %d values correct, %d callbacks in stream order\n",
                rounds, n, rounds * 3);
    return 0;
}
