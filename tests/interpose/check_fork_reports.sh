#!/usr/bin/env bash
# report:PATH with %p after fork: a child forked after its parent used CUDA
# passes every call through and writes no report (it has no CUDA state of
# its own), even when it ends through exit(); a child forked before CUDA
# was used is an ordinary CUDA process and writes its own.
# usage: check_fork_reports.sh FORK_CHILD_PROGRAM (LD_PRELOAD names the library)
set -euo pipefail
program=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

GPUCACHE_ALLOC_CONF="report:$work/after-%p.json" "$program" after &
parent=$!
wait "$parent"
reports=("$work"/after-*.json)
[[ ${#reports[@]} -eq 1 && ${reports[0]} == "$work/after-$parent.json" ]] || {
    echo "forked after CUDA: expected only the parent's report after-$parent.json, found:" \
        "${reports[*]##*/}"; exit 1; }

GPUCACHE_ALLOC_CONF="report:$work/before-%p.json" "$program" before &
parent=$!
wait "$parent"
reports=("$work"/before-*.json)
[[ ${#reports[@]} -eq 2 && -s $work/before-$parent.json ]] || {
    echo "forked before CUDA: expected the parent's and the child's reports, found:" \
        "${reports[*]##*/}"; exit 1; }
echo "after fork: one report per process that used CUDA"
