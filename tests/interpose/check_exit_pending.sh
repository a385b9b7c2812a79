#!/usr/bin/env bash
# The exit reports settle the frees whose work has finished: after a program
# that freed everything, the summary shows no active memory, the JSON report
# no pending bytes and the snapshot no active_pending_free block. Frees
# whose work is still queued at exit are shown as pending, not as freed.
# usage: check_exit_pending.sh PROGRAM (GPUCACHE_TEST_PRELOAD names the library)
set -euo pipefail
program=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "$1"; shift; for file in "$@"; do echo "--- $file"; cat "$file"; done; exit 1; }

run() {
    GPUCACHE_ALLOC_CONF="summary:$work/$1.txt,report:$work/$1.json,snapshot:$work/$1-snapshot.json" \
        LD_PRELOAD=$GPUCACHE_TEST_PRELOAD "$program" "$1"
}

run done
grep -q '^| Active memory  *|  *0 B  *|' "$work/done.txt" ||
    fail "done: the summary shows active memory after every buffer was freed" "$work/done.txt"
grep -q '^Pending frees at exit, device 0: 0 B in 0 blocks' "$work/done.txt" ||
    fail "done: the summary shows pending frees whose work had finished" "$work/done.txt"
grep -q '"gpucache.pending_bytes.current": 0,' "$work/done.json" ||
    fail "done: the report counts pending bytes" "$work/done.json"
if grep -q active_pending_free "$work/done-snapshot.json"; then
    fail "done: the snapshot holds active_pending_free blocks"
fi

run running
grep -q '^Pending frees at exit, device 0: 32.00 MiB in 8 blocks' "$work/running.txt" ||
    fail "running: the summary does not show the 32 MiB still pending" "$work/running.txt"
grep -q '"gpucache.pending_bytes.current": 33554432,' "$work/running.json" ||
    fail "running: the report does not count the 32 MiB still pending" "$work/running.json"
blocks=$(grep -o active_pending_free "$work/running-snapshot.json" | wc -l)
[[ $blocks -eq 8 ]] || fail "running: $blocks active_pending_free blocks in the snapshot, expected 8"
echo "settled at exit: nothing pending after finished work; 8 blocks (32 MiB) pending behind queued work"
