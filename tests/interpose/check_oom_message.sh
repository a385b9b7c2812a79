#!/usr/bin/env bash
# oom_message: each out of memory prints one line on stderr with the
# request, the device's total and free bytes, allocated, reserved,
# reserved-but-unallocated, the largest free block and the advice that fits
# where the memory is; oom_message:False prints nothing.
# usage: check_oom_message.sh PROGRAM (GPUCACHE_TEST_PRELOAD names the library; the
# device has 256 MiB)
set -euo pipefail
program=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "$1"; [[ -f $work/err ]] && { echo "--- stderr"; cat "$work/err"; }; exit 1; }

# run MODE CONFIGURATION: the OOM count on stdout, stderr in $work/err
run() {
    GPUCACHE_ALLOC_CONF="$2" LD_PRELOAD=$GPUCACHE_TEST_PRELOAD "$program" "$1" 2>"$work/err" | sed -n 's/^ooms=//p'
}

expect() { # MODE CONFIGURATION ADVICE
    local ooms lines
    ooms=$(run "$1" "$2")
    lines=$(grep -c '^gpucache: out of memory on device 0: ' "$work/err" || true)
    [[ -n $ooms && $lines -eq $ooms ]] ||
        fail "$1 '$2': $lines lines for $ooms out-of-memory failures"
    local line
    line=$(grep '^gpucache: out of memory' "$work/err" | tail -1)
    for part in "tried to allocate " "the device has 256.00 MiB, " " free; the program has " \
                " allocated, the cache reserves " " of it unallocated (largest free block " "$3"; do
        [[ $line == *"$part"* ]] || fail "$1 '$2': the line lacks '$part': $line"
    done
    echo "ok: $1 '$2': $3"
}

# 20 MiB segments hold two 8 MiB blocks and a 4 MiB tail each: free memory
# in pieces, which expandable segments avoid.
expect fill "" "try expandable_segments:True to avoid fragmentation"
# Expandable segments map just what the blocks need: the device is full.
expect fill "expandable_segments:True" "the program's own allocations fill the device"
# Holes of 8 MiB inside 20 MiB handles (one per growth, none moved): free,
# but in pieces.
expect holes "expandable_segments:True,expandable_segments_stitch:False,expandable_segments_handles:growth" \
    "try max_split_size_mb:20 so that blocks this large"
# With the defaults (a handle per page, stitching) the 16 MiB request takes
# the pages of two holes: only the fill fails.
ooms=$(run holes "expandable_segments:True")
[[ $ooms == 1 ]] || fail "holes 'expandable_segments:True': $ooms failures, expected the fill's alone"
echo "ok: holes 'expandable_segments:True': the holes' pages serve the 16 MiB request"
# The cap, not the device, stops the cache.
expect fill "expandable_segments:True,per_process_memory_fraction:0.5" \
    "per_process_memory_fraction:0.5 caps the cache below this request"

ooms=$(run fill "oom_message:False")
[[ $ooms == 1 ]] && ! grep -q '^gpucache: out of memory' "$work/err" ||
    fail "oom_message:False: $ooms failures, or an out-of-memory line on stderr"
echo "ok: oom_message:False prints nothing"
