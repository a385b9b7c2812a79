#!/bin/sh
# A program linked with NVIDIA's static runtime (nvcc's default) cannot run
# on the simulated device: it must fail, and the driver's one line on stderr
# must say why and how to build it instead.
set -u
errors=$("$1" 2>&1 >/dev/null)
status=$?
if [ "$status" -eq 0 ]; then
    echo "the program ran with NVIDIA's static runtime on the simulated device" >&2
    exit 1
fi
case "$errors" in
*"gpusim: nvcc_static_runtime_program carries NVIDIA's CUDA runtime"*"nvcc -cudart shared"*) ;;
*) echo "stderr does not explain the static runtime: '$errors'" >&2; exit 1 ;;
esac
count=$(printf '%s\n' "$errors" | grep -c "^gpusim: ")
if [ "$count" -ne 1 ]; then
    echo "expected one gpusim line on stderr, got $count: $errors" >&2
    exit 1
fi
