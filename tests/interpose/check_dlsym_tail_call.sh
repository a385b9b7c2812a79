#!/usr/bin/env bash
# glibc resolves dlsym(RTLD_NEXT, ...) relative to the return address of
# dlsym. The library's dlsym hook must therefore leave through a jump into
# the real dlsym, never through a call: this disassembles the hook and checks
# that its pass-through is an indirect jump and that it makes no indirect
# call (the real dlsym is only ever reached by pointer).
# usage: check_dlsym_tail_call.sh LIBRARY
set -euo pipefail
library=$1
body=$(objdump --disassemble=dlsym --no-show-raw-insn "$library" | sed -n '/<dlsym>:/,/^$/p')
if [[ -z "$body" ]]; then
    echo "no dlsym function in $library"
    exit 1
fi
if ! grep -Eq '(jmp|br|b)[[:space:]]+\*?%?(r[a-z0-9]+|x[0-9]+)' <<<"$body"; then
    echo "dlsym has no indirect jump: the pass-through is not a tail call"
    echo "$body"
    exit 1
fi
if grep -Eq 'call[a-z]*[[:space:]]+\*|blr[[:space:]]' <<<"$body"; then
    echo "dlsym calls through a pointer: RTLD_NEXT would resolve relative to the library"
    echo "$body"
    exit 1
fi
echo "dlsym passes through with a tail jump"
