#!/usr/bin/env python3
"""Writes a synthetic variable-shape training trace as an RMM replay CSV,
the workload expandable segments exist for: every step has a different
sequence length, so activation sizes change from step to step and freed
blocks rarely fit the next step's requests.

usage: variable_shape_trace.py OUTPUT.csv [STEPS] [SEED]

Per step: for each of 24 layers an activation of tokens x 4096 x 2 bytes is
kept for the backward pass, an MLP intermediate of tokens x 11008 x 2 bytes
and a small bias-sized tensor come and go; the activations are freed in
reverse order at the end of the step. 40 weight tensors of 4-64 MiB stay
live throughout. Deterministic for a given seed."""

import os
import random
import sys

# The trace writer the workload generators use (workloads/generate.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "workloads"))
from generate import MiB, Trace  # noqa: E402


def generate(steps, seed):
    rng = random.Random(seed)
    out = Trace()
    for _ in range(40):
        out.allocate(rng.randrange(4, 65) * MiB)
    for _ in range(steps):
        tokens = rng.randrange(128, 4097, 64)
        kept = []
        for _ in range(24):
            kept.append(out.allocate(tokens * 4096 * 2))
            intermediate = out.allocate(tokens * 11008 * 2)
            bias = out.allocate(rng.randrange(1, 512) * 1024)
            out.free(intermediate)
            out.free(bias)
        for block in reversed(kept):
            out.free(block)
    return out.rows


def main():
    if len(sys.argv) < 2:
        print(next(line for line in __doc__.splitlines() if line.startswith("usage:")),
              file=sys.stderr)
        return 2
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    with open(sys.argv[1], "w", encoding="ascii") as output:
        output.write("\n".join(generate(steps, seed)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
