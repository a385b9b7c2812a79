#!/usr/bin/env bash
# Runs PROGRAM natively and under the library on the simulated device, reads
# the number of cuMemAlloc_v2 calls from the simulator's statistics
# (GPUSIM_STATS) of each run, and checks that the library made at most
# PERCENT percent of the native count, which must equal EXPECTED_NATIVE.
# usage: compare_driver_allocations.sh LIBRARY_PRELOAD PROGRAM EXPECTED_NATIVE PERCENT
set -euo pipefail
preload=$1 program=$2 expected_native=$3 percent=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

driver_allocations() { # stats-file
    local count
    count=$(grep -o '"cuMemAlloc_v2": *[0-9]*' "$1" | grep -o '[0-9]*$' || true)
    echo "${count:-0}"
}

env -u LD_PRELOAD GPUSIM_STATS="$work/native.json" "$program"
LD_PRELOAD="$preload" GPUSIM_STATS="$work/cached.json" "$program"
native=$(driver_allocations "$work/native.json")
cached=$(driver_allocations "$work/cached.json")
echo "cuMemAlloc_v2 calls: native $native, under the library $cached"
[[ $native -eq $expected_native ]] || { echo "native run made $native, expected $expected_native"; exit 1; }
(( cached * 100 <= native * percent )) || { echo "more than $percent% of the native driver allocations"; exit 1; }
