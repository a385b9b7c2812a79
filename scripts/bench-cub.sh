#!/usr/bin/env bash
# bench-cub.sh CUB_PAIRS SIM_DIR SIM_RUNTIME_DIR LIBGPUCACHE
#
# Cache-hit malloc + free pairs of 1 MiB on one non-blocking stream, side by
# side in one run: CUB's CachingDeviceAllocator (DeviceAllocate/DeviceFree)
# and cudaMallocAsync/cudaFreeAsync served by gpucache under LD_PRELOAD,
# both through the simulated runtime and driver. Prints the median ns per
# pair of five interleaved runs of each, then callgrind's instructions per
# pair of the timed loop (sim included), and the ratios. CUB_PAIRS is
# build/tests/bench/cub_pairs (built by nvcc -cudart shared).
set -euo pipefail
if [[ $# -ne 4 ]]; then
    echo "usage: $0 CUB_PAIRS SIM_DIR SIM_RUNTIME_DIR LIBGPUCACHE" >&2
    exit 2
fi
program=$1 library=$4
export LD_LIBRARY_PATH=$3:$2${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
unset GPUSIM_RACECHECK
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
cub_ns=() gpucache_ns=()
for _ in 1 2 3 4 5; do
    cub_ns+=("$("$program" cub 201 | sed -n 's/^pair_ns=//p')")
    gpucache_ns+=("$(LD_PRELOAD=$library "$program" runtime 201 | sed -n 's/^pair_ns=//p')")
done
cub=$(printf '%s\n' "${cub_ns[@]}" | median)
ours=$(printf '%s\n' "${gpucache_ns[@]}" | median)
echo "ns per pair (median of 5 interleaved runs): CUB $cub, gpucache $ours," \
     "ratio $(awk -v a="$ours" -v b="$cub" 'BEGIN {printf "%.2f", a / b}')"
if command -v valgrind >/dev/null; then
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    count() { # MODE TOGGLE [PRELOAD]
        local out=$work/$1
        LD_PRELOAD=${3:-} valgrind --tool=callgrind --callgrind-out-file="$out" \
            --collect-atstart=no "--toggle-collect=$2" "$program" "$1" 20 >/dev/null 2>&1
        # 21 batches of 1000 pairs ran inside the toggled function.
        awk '/^summary:/ {printf "%.0f", $2 / 21000}' "$out"
    }
    cub_instructions=$(count cub 'run_cub_pairs*')
    our_instructions=$(count runtime 'run_runtime_pairs*' "$library")
    echo "instructions per pair (callgrind, sim included): CUB $cub_instructions," \
         "gpucache $our_instructions, ratio" \
         "$(awk -v a="$our_instructions" -v b="$cub_instructions" 'BEGIN {printf "%.2f", a / b}')"
fi
