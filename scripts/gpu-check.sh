#!/usr/bin/env bash
# The real-GPU check of libgpucache.so, built on `gpucache check`. Builds the
# interposition test programs of tests/interpose (which skip their
# simulator-only counts on a real driver) and the GPU-only ones of
# tests/gpu/interpose with nvcc, against the static runtime (nvcc's
# default), the shared runtime and per-thread default streams, and runs each
# through `gpucache check`: the program alone, then under the library with
# passthrough:True (the driver allocations the program makes on its own),
# then under the library in the row's configuration, which must exit as the
# program alone did with the same output. One table: a row fails when the
# check fails, or when the cache made no fewer driver allocations than the
# program alone on a route that must be cached. Exits 1 if any row failed,
# 0 otherwise; without a GPU (or without nvcc) it says so and exits 0, or
# GPUCACHE_GPU_CHECK_SKIP_STATUS.
#
# --sim runs the same rows on the simulated device instead (every program
# then uses the shared runtime, as the simulated device requires): how the
# script itself is tested without a GPU.
#
# GPUCACHE_GPU_CHECK_ROWS=REGEX builds and runs only the programs and rows
# whose names match (reuse_hazard, route_runtime/static).
#
# usage: scripts/gpu-check.sh [--sim] [path/to/libgpucache.so]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
skip_status=${GPUCACHE_GPU_CHECK_SKIP_STATUS:-0}
only=${GPUCACHE_GPU_CHECK_ROWS:-}
sim=
if [[ ${1:-} == --sim ]]; then
    sim=--sim
    shift
fi

if [[ -z $sim ]] && { ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; }; then
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
gpucache=$(dirname "$library")/../tools/gpucache
[[ -x $gpucache ]] || gpucache=$root/build/tools/gpucache
[[ -x $gpucache ]] || { echo "gpu-check: no gpucache command beside $library"; exit 1; }
export GPUCACHE_LIBRARY=$library

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
shared_tests=$root/tests/interpose
twins=$root/tests/gpu/interpose

# build NAME VARIANT SOURCE... : one binary, $work/NAME.VARIANT
build() {
    local name=$1 variant=$2
    shift 2
    [[ -z $only || $name =~ $only ]] || return 0
    local flags=(-O2 -I"$shared_tests" -o "$work/$name.$variant")
    # The simulated device cannot run NVIDIA's static runtime.
    [[ -n $sim && ( $variant == static || $variant == per-thread ) ]] && flags+=(-cudart shared)
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

failures=0
rows=()
run_seconds=${GPUCACHE_GPU_CHECK_RUN_SECONDS:-120}
# check LABEL BINARY MUST_CACHE CONFIG IGNORE [ARGS...]: one row through
# gpucache check; IGNORE is an --ignore pattern for output that differs by
# design (the route programs say whether they ran cached), or empty.
check() {
    local label=$1 binary=$2 must_cache=$3 config=$4 ignore=$5
    shift 5
    [[ -z $only || $label =~ $only ]] || return 0
    local key=${label//\//_}
    local log=$work/$key.log verdict=pass alone=- here=-
    local ignoring=()
    [[ -n $ignore ]] && ignoring=(--ignore "$ignore")
    timeout $((4 * run_seconds)) "$gpucache" check $sim --conf "$config" "${ignoring[@]}" \
        -- "$binary" "$@" >"$log" 2>&1 || verdict=FAIL
    # "driver allocations A -> B" on the verdict line: the program's own, the cache's.
    local counts
    counts=$(sed -n 's/.*driver allocations \([0-9][0-9]*\) -> \([0-9][0-9]*\).*/\1 \2/p' "$log" | head -1)
    if [[ -n $counts ]]; then
        alone=${counts% *}
        here=${counts#* }
    fi
    if [[ $must_cache == yes && $verdict == pass ]] &&
        ! [[ $alone =~ ^[0-9]+$ && $here =~ ^[0-9]+$ && $here -lt $alone ]]; then
        verdict=FAIL
    fi
    [[ $verdict == pass ]] || { failures=$((failures + 1)); sed 's/^/    /' "$log"; }
    rows+=("$(printf '%-34s %-22s %9s %9s  %s' "$label" "${config:-default}" "$alone" "$here" \
        "$verdict")")
}

# A row run under the library alone: its program asserts what the library
# does in a mode that gives up reuse safety, which has no native twin.
library_only() {
    local label=$1 binary=$2 config=$3
    shift 3
    [[ -z $only || $label =~ $only ]] || return 0
    local key=${label//\//_} verdict=pass
    local sim_environment=()
    if [[ -n $sim ]]; then
        local sim_dir
        sim_dir=$(dirname "$library")/../sim
        sim_environment=(LD_LIBRARY_PATH="$sim_dir:$sim_dir/runtime")
    fi
    timeout "$run_seconds" env "${sim_environment[@]}" LD_PRELOAD="$library" \
        GPUCACHE_ALLOC_CONF="$config" "$binary" "$@" >"$work/$key.log" 2>&1 || verdict=FAIL
    [[ $verdict == pass ]] || { failures=$((failures + 1)); sed 's/^/    /' "$work/$key.log"; }
    rows+=("$(printf '%-34s %-22s %9s %9s  %s' "$label" "$config (library only)" - - "$verdict")")
}

routes='^(native|cached): '
check route_runtime/static "$work/route_runtime.static" yes "" "$routes"
check route_runtime/shared "$work/route_runtime.shared" yes "" "$routes"
check route_runtime/per-thread "$work/route_runtime.per-thread" yes "" "$routes"
check route_driver_api "$work/route_driver_api.driver" yes "" "$routes"
check route_dlopen_driver "$work/route_dlopen_driver.static" yes "" "$routes"
check route_driver_entry_point/static "$work/route_driver_entry_point.static" yes "" "$routes"
check route_driver_entry_point/shared "$work/route_driver_entry_point.shared" yes "" "$routes"
check lifecycle/static "$work/lifecycle.static" no "" ""
check lifecycle/shared "$work/lifecycle.shared" no "" ""
check data_integrity "$work/data_integrity.static" yes "" ""
check data_integrity/expandable "$work/data_integrity.static" yes "expandable_segments:True" ""
# Which block the new owner got differs by design; what it saw must not.
owner='new owner \((same|another) block\)'
check reuse_hazard/free "$work/reuse_hazard.static" no "" "$owner" free
check reuse_hazard/async "$work/reuse_hazard.static" no "" "$owner" async
check reuse_hazard/legacy "$work/reuse_hazard.static" no "" "$owner" legacy
check reuse_hazard/free/conservative "$work/reuse_hazard.static" no "reuse:conservative" "$owner" free
library_only reuse_hazard/relaxed "$work/reuse_hazard.static" "reuse:relaxed" relaxed
check threads_streams/static "$work/threads_streams.static" no "" ""
check threads_streams/shared "$work/threads_streams.shared" no "" ""

echo
if [[ -n $sim ]]; then
    echo "gpu-check on the simulated device"
else
    echo "gpu-check on $(nvidia-smi -L | head -1)"
fi
printf '%-34s %-22s %9s %9s  %s\n' program configuration "drv-alloc" "drv-alloc" verdict
printf '%-34s %-22s %9s %9s  %s\n' "" "" "(alone)" "(cached)" ""
printf '%s\n' "${rows[@]}"
if (( failures )); then
    echo "gpu-check: $failures of ${#rows[@]} rows FAILED"
    exit 1
fi
echo "gpu-check: all ${#rows[@]} rows passed"
