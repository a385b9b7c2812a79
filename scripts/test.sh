#!/usr/bin/env bash
# Builds gpucache and runs every suite: the plain build with -Werror, the
# ASan/UBSan build, the TSan build of the multithreaded tests, and bounded
# fuzzing runs of the configuration parser and the trace readers. The
# differential suite (80 seeds and the regressions, tests/differential) runs
# inside meson test; scripts/differential.sh makes the long runs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cuda_root=${GPUCACHE_CUDA_ROOT:-/usr/local/cuda}
jobs=$(nproc)

setup() { # build-dir, extra meson args...
    local dir=$1; shift
    if [[ -d $dir ]]; then
        meson setup --reconfigure "$dir" -Dcuda-root="$cuda_root" -Dwerror=true "$@" >/dev/null
    else
        meson setup "$dir" -Dcuda-root="$cuda_root" -Dwerror=true "$@" >/dev/null
    fi
    ninja -C "$dir" -j "$jobs" >/dev/null
}

echo "== plain build (gcc, -Werror)"
setup build
meson test -C build --print-errorlogs --num-processes "$jobs"

echo "== ASan + UBSan build"
setup build-asan -Db_sanitize=address,undefined -Db_lundef=false
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    meson test -C build-asan --print-errorlogs --num-processes "$jobs" --no-suite benchmark

echo "== TSan build (multithreaded suites)"
setup build-tsan -Db_sanitize=thread -Db_lundef=false
TSAN_OPTIONS=halt_on_error=1 \
    meson test -C build-tsan --print-errorlogs --num-processes "$jobs" --suite threads

echo "== fuzzing the configuration parser (clang, libFuzzer)"
CC=clang setup build-fuzz -Dfuzzers=true -Dtests=false
ninja -C build-fuzz config/fuzz_config_parser >/dev/null
mkdir -p build-fuzz/corpus
# New inputs go to the build folder so the seed corpus in the tree stays clean.
build-fuzz/config/fuzz_config_parser -max_total_time="${GPUCACHE_FUZZ_SECONDS:-30}" \
    -max_len=512 build-fuzz/corpus config/fuzz-corpus/ >fuzz-config.log 2>&1 \
    || { tail -40 fuzz-config.log; exit 1; }
echo "fuzz: configuration parser, $(grep -c . fuzz-config.log) log lines, no crash"

echo "== fuzzing the trace readers (CSV, pickle, JSON)"
ninja -C build-fuzz tools/replay/fuzz_trace_readers >/dev/null
mkdir -p build-fuzz/trace-corpus
# Seeds in tools/replay/fuzz-corpus/ share objects through the pickle memo;
# 64 KiB inputs leave room to grow lists of references past the readers'
# bound on work.
build-fuzz/tools/replay/fuzz_trace_readers -max_total_time="${GPUCACHE_FUZZ_SECONDS:-30}" \
    -max_len=65536 build-fuzz/trace-corpus tools/replay/fuzz-corpus/ >fuzz-traces.log 2>&1 \
    || { tail -40 fuzz-traces.log; exit 1; }
echo "fuzz: trace readers, $(grep -c . fuzz-traces.log) log lines, no crash"
echo "all suites passed"
