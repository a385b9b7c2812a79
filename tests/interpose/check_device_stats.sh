#!/usr/bin/env bash
# Runs PROGRAM with GPUSIM_STATS=STATS (set by the test) and then checks the
# simulator's report written at exit: no physical bytes still held.
# usage: check_device_stats.sh STATS PROGRAM [ARGS...]
set -euo pipefail
stats=$1
shift
rm -f "$stats"
"$@"
held=$(grep -o '"current_physical_bytes": *[0-9]*' "$stats" | head -1 | grep -o '[0-9]*$')
[[ $held == 0 ]] || { echo "the device holds $held bytes at exit"; exit 1; }
echo "no physical memory held at exit"
