#!/bin/sh
# Checks how a test program is linked against the CUDA runtime.
#   check_linkage.sh shared PROGRAM  - NEEDED libcudart.so.13, and runtime
#                                      references carry the version node
#                                      (cudaMalloc@libcudart.so.13)
#   check_linkage.sh static PROGRAM  - no libcudart dependency at all
# Neither may depend on libcuda: the runtime loads the driver with dlopen.
set -eu
mode=$1
program=$2
dynamic=$(readelf -d -W "$program")
symbols=$(readelf --dyn-syms -W "$program")
fail() { echo "$program: $*" >&2; exit 1; }
case $dynamic in *"[libcuda.so"*) fail "links libcuda directly" ;; esac
case $mode in
shared)
    case $dynamic in *"NEEDED"*"[libcudart.so.13]"*) ;; *) fail "has no NEEDED libcudart.so.13" ;; esac
    for name in cudaMalloc cudaMemcpy cudaMemset cudaFree cudaGetLastError; do
        echo "$symbols" | grep -q " UND ${name}@libcudart.so.13" \
            || fail "does not reference ${name}@libcudart.so.13"
    done
    ;;
static)
    case $dynamic in *"[libcudart"*) fail "depends on a shared libcudart" ;; esac
    echo "$symbols" | grep -q "@libcudart" && fail "references libcudart symbols"
    ;;
*)
    echo "usage: $0 shared|static PROGRAM" >&2
    exit 2
    ;;
esac
echo "$program: $mode runtime linkage as expected"
