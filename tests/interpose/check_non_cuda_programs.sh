#!/usr/bin/env bash
# Programs that never use CUDA run under the library exactly as without it:
# same exit status, same output, nothing on stderr.
# usage: check_non_cuda_programs.sh (LD_PRELOAD names the library)
set -euo pipefail
errors=$(mktemp)
trap 'rm -f "$errors"' EXIT

/bin/true 2>"$errors" || { echo "/bin/true failed under the library"; exit 1; }
[[ ! -s $errors ]] || { echo "/bin/true wrote to stderr:"; cat "$errors"; exit 1; }

if /bin/false 2>"$errors"; then
    echo "/bin/false succeeded under the library"
    exit 1
fi

output=$(sh -c 'echo "one $((6 * 7))"; exit 0' 2>"$errors")
[[ $output == "one 42" ]] || { echo "sh -c printed '$output'"; exit 1; }
[[ ! -s $errors ]] || { echo "sh -c wrote to stderr:"; cat "$errors"; exit 1; }

status=0
sh -c 'exit 7' || status=$?
[[ $status -eq 7 ]] || { echo "sh -c 'exit 7' exited $status"; exit 1; }
echo "non-CUDA programs unchanged"
