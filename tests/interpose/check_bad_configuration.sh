#!/usr/bin/env bash
# A bad configuration string stops even a program that never uses CUDA, at
# load, with exit status 2 and exactly one line on stderr naming the key.
# usage: check_bad_configuration.sh (LD_PRELOAD names the library)
set -euo pipefail
errors=$(mktemp)
trap 'rm -f "$errors"' EXIT
status=0
GPUCACHE_ALLOC_CONF='max_split_size_mb:banana' /bin/true 2>"$errors" || status=$?
[[ $status -eq 2 ]] || { echo "exit status $status, expected 2"; cat "$errors"; exit 1; }
lines=$(wc -l <"$errors")
[[ $lines -eq 1 ]] || { echo "$lines lines on stderr, expected 1:"; cat "$errors"; exit 1; }
grep -q 'max_split_size_mb' "$errors" || { echo "the line does not name the key:"; cat "$errors"; exit 1; }
echo "bad configuration rejected: $(cat "$errors")"
