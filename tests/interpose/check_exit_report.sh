#!/usr/bin/env bash
# report:PATH writes, at exit, the statistics of every device the library
# served. The program runs behind a shell that is preloaded too: only the
# process that used CUDA writes a report ("%p" makes one file per process),
# and the report counts the cache's driver allocations.
# usage: check_exit_report.sh PROGRAM (LD_PRELOAD names the library)
set -euo pipefail
program=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
GPUCACHE_ALLOC_CONF="report:$work/report-%p.json" sh -c '"$1" >/dev/null' sh "$program"
reports=("$work"/report-*.json)
[[ ${#reports[@]} -eq 1 && -s ${reports[0]} ]] || {
    echo "expected one report, found: ${reports[*]}"; exit 1; }
report=${reports[0]}
grep -q '"device": 0' "$report" || { echo "no device 0 in the report:"; cat "$report"; exit 1; }
allocations=$(grep -o '"num_device_alloc": *[0-9]*' "$report" | grep -o '[0-9]*$')
[[ -n $allocations && $allocations -ge 1 && $allocations -le 2 ]] || {
    echo "num_device_alloc is '$allocations', expected 1 or 2"; exit 1; }
grep -q '"allocation.all.allocated": [1-9]' "$report" || {
    echo "the report counts no allocation"; exit 1; }
echo "one report, from the CUDA process: $allocations driver allocations"
