#!/usr/bin/env bash
# bench-threads.sh BENCH [BENCH ...]
#
# Thread scaling of cache-hit pairs, side by side: for each of three rounds,
# every given `bench_hit_pair` binary in turn runs the one-thread cases 1
# (cuMemFreeAsync) and 4 (cuMemFree) pinned to each CPU with taskset, then
# the two-thread cases 2 and 5 on all CPUs. The machine's speed may change
# between runs, so compare binaries within a round. Stop other jobs first.
set -euo pipefail
if [[ $# -lt 1 ]]; then
    echo "usage: $0 BENCH_HIT_PAIR [BENCH_HIT_PAIR ...]" >&2
    exit 2
fi
cpus=$(nproc)
for round in 1 2 3; do
    for bench in "$@"; do
        for case in 1 4; do
            for ((cpu = 0; cpu < cpus; cpu++)); do
                echo "round $round $bench case $case cpu $cpu: $(taskset -c "$cpu" "$bench" 1001 "$case" | tail -1)"
            done
        done
        for case in 2 5; do
            echo "round $round $bench case $case all cpus: $("$bench" 1001 "$case" | tail -1)"
        done
    done
done
