#!/usr/bin/env bash
# The real-GPU check of libgpucache.so. Builds the interposition test
# programs of tests/interpose (which skip their simulator-only counts on a
# real driver) and the GPU-only ones of tests/gpu/interpose with nvcc, against the static runtime (nvcc's
# default), the shared runtime and per-thread default streams; runs each one
#   native       without the library,
#   counted      under the library with passthrough:True (every call goes to
#                the driver; the report counts the driver allocations the
#                program makes on its own),
#   cached       under the library (the report counts the driver allocations
#                the cache made),
# and prints one table. A row fails when any run fails, or when the cache
# made no fewer driver allocations than the program alone on a route that
# must be cached. Exits 1 if any row failed, 0 otherwise; without a GPU (or
# without nvcc) it says so and exits 0, or GPUCACHE_GPU_CHECK_SKIP_STATUS.
#
# usage: scripts/gpu-check.sh [path/to/libgpucache.so]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
skip_status=${GPUCACHE_GPU_CHECK_SKIP_STATUS:-0}

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "gpu-check: skipped: no NVIDIA GPU visible (nvidia-smi -L found none)"
    exit "$skip_status"
fi
cuda_root=${GPUCACHE_CUDA_ROOT:-/usr/local/cuda}
nvcc=${NVCC:-$(command -v nvcc || echo "$cuda_root/bin/nvcc")}
if [[ ! -x $nvcc ]]; then
    echo "gpu-check: skipped: nvcc not found (set NVCC or GPUCACHE_CUDA_ROOT)"
    exit "$skip_status"
fi

library=${1:-$root/build/interpose/libgpucache.so}
if [[ ! -f $library ]]; then
    echo "gpu-check: building $library"
    (cd "$root" && { [[ -d build ]] || meson setup build -Dcuda-root="$cuda_root" >/dev/null; } \
        && ninja -C build >/dev/null) || { echo "gpu-check: the build failed"; exit 1; }
fi
library=$(cd "$(dirname "$library")" && pwd)/$(basename "$library")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
shared_tests=$root/tests/interpose
twins=$root/tests/gpu/interpose

# build NAME VARIANT SOURCE... : one binary, $work/NAME.VARIANT
build() {
    local name=$1 variant=$2
    shift 2
    local flags=(-O2 -I"$shared_tests" -o "$work/$name.$variant")
    case $variant in
        static) ;;
        shared) flags+=(-cudart shared) ;;
        per-thread) flags+=(--default-stream per-thread) ;;
        driver) flags+=(-L"$cuda_root/lib64/stubs" -lcuda) ;;
    esac
    if ! "$nvcc" "${flags[@]}" "$@" "$shared_tests/test_support.c" -ldl -lpthread \
            >"$work/$name.$variant.build.log" 2>&1; then
        echo "gpu-check: nvcc failed for $name ($variant):"
        cat "$work/$name.$variant.build.log"
        exit 1
    fi
}

build route_runtime static "$shared_tests/route_runtime.c"
build route_runtime shared "$shared_tests/route_runtime.c"
build route_runtime per-thread "$shared_tests/route_runtime.c"
build route_driver_api driver "$shared_tests/route_driver_api.c"
build route_dlopen_driver static "$shared_tests/route_dlopen_driver.c"
build route_driver_entry_point static "$shared_tests/route_driver_entry_point.c"
build route_driver_entry_point shared "$shared_tests/route_driver_entry_point.c"
build lifecycle static "$twins/lifecycle.c"
build lifecycle shared "$twins/lifecycle.c"
build data_integrity static "$shared_tests/data_integrity.c"
build reuse_hazard static "$shared_tests/reuse_hazard.c"
build threads_streams static "$shared_tests/threads_streams.c"
build threads_streams shared "$shared_tests/threads_streams.c"

# "num_device_alloc" summed over the devices of a report, or "-".
driver_allocations() {
    [[ -s $1 ]] || { echo "-"; return; }
    grep -o '"num_device_alloc": *[0-9]*' "$1" | grep -o '[0-9]*$' \
        | awk '{ sum += $1 } END { print sum + 0 }'
}

failures=0
rows=()
run_seconds=${GPUCACHE_GPU_CHECK_RUN_SECONDS:-120}
# check LABEL BINARY MUST_CACHE LIBRARY_ONLY EXTRA_CONFIG [ARGS...]
check() {
    local label=$1 binary=$2 must_cache=$3 library_only=$4 extra=$5
    shift 5
    local key=${label//\//_}
    local log=$work/$key.log native=skip counted=skip cached
    : >"$log"
    if [[ $library_only == no ]]; then
        env -u LD_PRELOAD timeout "$run_seconds" "$binary" "$@" >>"$log" 2>&1 \
            && native=pass || native=FAIL
        timeout "$run_seconds" env LD_PRELOAD="$library" \
            GPUCACHE_ALLOC_CONF="passthrough:True,report:$work/$key.counted.json" \
            "$binary" "$@" >>"$log" 2>&1 && counted=pass || counted=FAIL
    fi
    timeout "$run_seconds" env LD_PRELOAD="$library" \
        GPUCACHE_ALLOC_CONF="${extra:+$extra,}report:$work/$key.cached.json" \
        "$binary" "$@" >>"$log" 2>&1 && cached=pass || cached=FAIL
    local counted_allocations cached_allocations verdict=pass
    counted_allocations=$(driver_allocations "$work/$key.counted.json")
    cached_allocations=$(driver_allocations "$work/$key.cached.json")
    [[ $native != FAIL && $counted != FAIL && $cached == pass ]] || verdict=FAIL
    if [[ $must_cache == yes && $verdict == pass ]] &&
        ! [[ $counted_allocations =~ ^[0-9]+$ && $cached_allocations =~ ^[0-9]+$ &&
             $cached_allocations -lt $counted_allocations ]]; then
        verdict=FAIL
    fi
    [[ $verdict == pass ]] || { failures=$((failures + 1)); sed 's/^/    /' "$log"; }
    rows+=("$(printf '%-34s %-6s %-7s %-6s %9s %9s  %s' "$label" "$native" "$counted" "$cached" \
        "$counted_allocations" "$cached_allocations" "$verdict")")
}

check route_runtime/static "$work/route_runtime.static" yes no ""
check route_runtime/shared "$work/route_runtime.shared" yes no ""
check route_runtime/per-thread "$work/route_runtime.per-thread" yes no ""
check route_driver_api "$work/route_driver_api.driver" yes no ""
check route_dlopen_driver "$work/route_dlopen_driver.static" yes no ""
check route_driver_entry_point/static "$work/route_driver_entry_point.static" yes no ""
check route_driver_entry_point/shared "$work/route_driver_entry_point.shared" yes no ""
check lifecycle/static "$work/lifecycle.static" no no ""
check lifecycle/shared "$work/lifecycle.shared" no no ""
check data_integrity "$work/data_integrity.static" yes no ""
check reuse_hazard/free "$work/reuse_hazard.static" no no "" free
check reuse_hazard/async "$work/reuse_hazard.static" no no "" async
check reuse_hazard/free/conservative "$work/reuse_hazard.static" no yes "reuse:conservative" free
check reuse_hazard/relaxed "$work/reuse_hazard.static" no yes "reuse:relaxed" relaxed
check threads_streams/static "$work/threads_streams.static" no no ""
check threads_streams/shared "$work/threads_streams.shared" no no ""

echo
echo "gpu-check on $(nvidia-smi -L | head -1)"
printf '%-34s %-6s %-7s %-6s %9s %9s  %s\n' program native counted cached "drv-alloc" "drv-alloc" verdict
printf '%-34s %-6s %-7s %-6s %9s %9s  %s\n' "" "" "" "" "(program)" "(cached)" ""
printf '%s\n' "${rows[@]}"
if (( failures )); then
    echo "gpu-check: $failures of ${#rows[@]} rows FAILED"
    exit 1
fi
echo "gpu-check: all ${#rows[@]} rows passed"
