#!/bin/sh
# A binary without PTX fails its launch (the program checks the error) and
# the driver's one line on stderr names the missing PTX and the fix.
set -u
errors=$("$1" 2>&1 >/dev/null)
status=$?
if [ "$status" -ne 0 ]; then
    echo "the program exited with $status: $errors" >&2
    exit 1
fi
case "$errors" in
*"built without PTX"*"-gencode arch=compute_90,code=compute_90"*) ;;
*) echo "stderr does not explain the missing PTX: '$errors'" >&2; exit 1 ;;
esac
lines=$(printf '%s\n' "$errors" | grep -c .)
if [ "$lines" -ne 1 ]; then
    echo "expected one line on stderr, got $lines: $errors" >&2
    exit 1
fi
