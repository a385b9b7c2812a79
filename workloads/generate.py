#!/usr/bin/env python3
"""Seeded variable-shape workloads as RMM replay CSV traces, for measuring
allocator policies on workloads no constant was chosen on.

usage: generate.py FAMILY SEED OUTPUT.csv
       generate.py --list

Each family is a function of a seeded random generator with its parameters
at its top; sizes are what a PyTorch model of that shape would request
(bf16 activations, fp32 optimizer state). The trace is single-stream and
single-threaded, as `gpucache replay` reads it."""

import math
import random
import sys

HEADER = "Thread,Time,Action,Pointer,Size,Stream"
MiB = 1 << 20


class Trace:
    def __init__(self):
        self.rows = [HEADER]
        self.next_pointer = 0x7F0000000000

    def allocate(self, size):
        size = max(1, int(size))
        pointer = self.next_pointer
        self.next_pointer += (size + 0xFFFF) & ~0xFFFF  # distinct trace addresses
        self.rows.append(f"1,0,allocate,{pointer:#x},{size},0x0")
        return pointer, size

    def free(self, block):
        pointer, size = block
        self.rows.append(f"1,0,free,{pointer:#x},{size},0x0")

    def free_all(self, blocks):
        for block in reversed(blocks):
            self.free(block)
        blocks.clear()


def weights(trace, rng, count, low_mib, high_mib):
    return [trace.allocate(rng.randint(low_mib * MiB, high_mib * MiB) // 512 * 512)
            for _ in range(count)]


def varlen_attention(rng, trace):
    """Training with a different sequence length every step: attention
    scores of heads x L x L grow quadratically, from kilobytes to past a
    gigabyte, so they cross every size threshold a policy could pick."""
    layers, hidden, heads, steps = 12, 2048, 16, 60
    kept = weights(trace, rng, 24, 8, 48)
    for _ in range(steps):
        tokens = int(math.exp(rng.uniform(math.log(128), math.log(6144))))
        saved = []
        for _ in range(layers):
            saved.append(trace.allocate(tokens * hidden * 2))            # layer input
            scores = trace.allocate(heads * tokens * tokens * 2)         # attention scores
            saved.append(trace.allocate(heads * tokens * tokens * 2))    # softmax, kept
            trace.free(scores)
            mlp = trace.allocate(tokens * hidden * 4 * 2)
            saved.append(trace.allocate(tokens * hidden * 2))
            trace.free(mlp)
        for block in reversed(saved):                                    # backward
            gradient = trace.allocate(block[1])
            trace.free(gradient)
            trace.free(block)
    trace.free_all(kept)


def dynamic_batch(rng, trace):
    """A fixed model fed batches whose size changes every step (the tail of
    an epoch, padding-free batching): every activation scales with it."""
    layers, width, steps = 16, 4096, 80
    kept = weights(trace, rng, 32, 4, 32)
    for _ in range(steps):
        batch = rng.choice([1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64])
        tokens = batch * 512
        saved = [trace.allocate(tokens * width * 2) for _ in range(layers)]
        for _ in range(layers):
            temporary = trace.allocate(tokens * width * 4 * 2)
            trace.free(temporary)
        for block in reversed(saved):
            trace.free(block)
    trace.free_all(kept)


def kv_cache_inference(rng, trace):
    """Serving: requests arrive and leave; each keeps a KV cache per layer
    that grows by reallocation as tokens are generated (a new buffer with
    room for 64 more tokens, the old one freed), and is freed when the
    request ends. Requests overlap, so caches of every size interleave."""
    layers, per_token, requests, concurrent = 8, 2 * 8 * 128 * 2, 120, 12
    kept = weights(trace, rng, 16, 16, 64)
    active = []
    started = 0
    while started < requests or active:
        if started < requests and len(active) < concurrent and rng.random() < 0.5:
            prompt = rng.randint(16, 4096)
            active.append({"tokens": prompt, "left": rng.randint(16, 1024),
                           "caches": [trace.allocate((prompt + 64) * per_token)
                                      for _ in range(layers)]})
            started += 1
            continue
        if not active:
            continue
        request = rng.choice(active)
        request["tokens"] += 1
        request["left"] -= 1
        scratch = trace.allocate(request["tokens"] * 64)
        trace.free(scratch)
        if request["tokens"] % 64 == 0:
            grown = []
            for cache in request["caches"]:
                grown.append(trace.allocate((request["tokens"] + 64) * per_token))
                trace.free(cache)
            request["caches"] = grown
        if request["left"] == 0:
            for cache in request["caches"]:
                trace.free(cache)
            active.remove(request)
    trace.free_all(kept)


def mixture_of_experts(rng, trace):
    """Mixture of experts: each layer routes the batch's tokens to 16
    experts unevenly (a skewed, changing share each step), so per-expert
    buffers take any size from nothing to most of the batch."""
    layers, experts, hidden, ffn, steps = 8, 16, 2048, 8192, 50
    kept = weights(trace, rng, 40, 8, 32)
    for _ in range(steps):
        tokens = rng.choice([2048, 4096, 8192])
        saved = []
        for _ in range(layers):
            shares = [rng.paretovariate(1.2) for _ in range(experts)]
            total = sum(shares)
            routed = trace.allocate(tokens * hidden * 2)
            for share in shares:
                count = int(tokens * share / total)
                if count == 0:
                    continue
                inner = trace.allocate(count * ffn * 2)
                saved.append(trace.allocate(count * hidden * 2))
                trace.free(inner)
            trace.free(routed)
        for block in reversed(saved):
            trace.free(block)
    trace.free_all(kept)


def cnn_variable_images(rng, trace):
    """A convolutional network on images whose size changes per batch
    (multi-scale training): each stage's feature maps scale with H x W and
    halve per stage, with workspace buffers for the convolutions."""
    stages, channels, steps = 5, [64, 128, 256, 512, 1024], 60
    kept = weights(trace, rng, 60, 1, 16)
    for _ in range(steps):
        side = rng.choice([224, 256, 288, 320, 384, 448, 512, 640])
        batch = rng.choice([8, 16, 32])
        saved = []
        for stage in range(stages):
            pixels = (side >> stage) * (side >> stage)
            for _ in range(3):
                workspace = trace.allocate(rng.choice([0, 1, 4, 16, 64]) * MiB + 4096)
                saved.append(trace.allocate(batch * channels[stage] * pixels * 2))
                trace.free(workspace)
        for block in reversed(saved):
            gradient = trace.allocate(block[1])
            trace.free(gradient)
            trace.free(block)
    trace.free_all(kept)


def weights_and_optimizer(rng, trace):
    """Long-lived weights interleaved with short-lived activations, and an
    optimizer whose state is allocated lazily at the first step (two fp32
    moments per weight) and kept, with per-step gradient buffers freed after
    the update: the long-lived blocks land between short-lived ones."""
    parameters, steps = 60, 40
    weights_list, moments = [], []
    for _ in range(parameters):
        weights_list.append(trace.allocate(rng.randint(1, 96) * MiB))
        activation = trace.allocate(rng.randint(1, 64) * MiB)          # warm-up pass
        trace.free(activation)
    for step in range(steps):
        tokens = rng.randint(1024, 8192)
        activations = [trace.allocate(tokens * rng.choice([2048, 4096, 11008]) * 2)
                       for _ in range(24)]
        gradients = []
        for weight in reversed(weights_list):
            gradients.append(trace.allocate(weight[1]))
            if activations:
                trace.free(activations.pop())
        trace.free_all(activations)
        for index, weight in enumerate(weights_list):
            if step == 0:
                moments.append(trace.allocate(weight[1] * 2))
                moments.append(trace.allocate(weight[1] * 2))
            update = trace.allocate(weight[1] * 2)
            trace.free(update)
        trace.free_all(gradients)
    trace.free_all(moments)
    trace.free_all(weights_list)


FAMILIES = {
    "varlen_attention": varlen_attention,
    "dynamic_batch": dynamic_batch,
    "kv_cache_inference": kv_cache_inference,
    "mixture_of_experts": mixture_of_experts,
    "cnn_variable_images": cnn_variable_images,
    "weights_and_optimizer": weights_and_optimizer,
}


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--list":
        for name, family in FAMILIES.items():
            print(f"{name}: {family.__doc__.split(chr(10))[0]}")
        return 0
    if len(sys.argv) != 4 or sys.argv[1] not in FAMILIES:
        print(__doc__, file=sys.stderr)
        print("families: " + ", ".join(FAMILIES), file=sys.stderr)
        return 2
    try:
        seed = int(sys.argv[2])
    except ValueError:
        print(f"generate.py: seed '{sys.argv[2]}' is not an integer", file=sys.stderr)
        return 2
    trace = Trace()
    FAMILIES[sys.argv[1]](random.Random(seed), trace)
    try:
        with open(sys.argv[3], "x") as file:
            file.write("\n".join(trace.rows) + "\n")
    except FileExistsError:
        print(f"generate.py: {sys.argv[3]} exists; not overwritten", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
