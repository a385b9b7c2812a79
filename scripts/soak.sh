#!/usr/bin/env bash
# Runs the reuse soak (tests/interpose/soak_streams.c) for longer than the
# bounded run of the suite: natively and under the library in each reuse
# mode, several seeds each, with the simulated device's race detector on.
# Any corrupted buffer, failed call or race fails it.
#   scripts/soak.sh [SECONDS-PER-RUN [SEEDS [THREADS]]]   defaults: 60 5 8
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
seeds=${2:-5}
threads=${3:-8}
[[ -x build/tests/interpose/soak_streams ]] || { scripts/install-deps.sh; \
    [[ -d build ]] || meson setup build -Dcuda-root="${GPUCACHE_CUDA_ROOT:-/usr/local/cuda}"; \
    ninja -C build >/dev/null; }
export LD_LIBRARY_PATH=$PWD/build/sim:$PWD/build/sim/runtime GPUSIM_RACECHECK=1
library=$PWD/build/interpose/libgpucache.so
failed=0
passed=0
for seed in $(seq 1 "$seeds"); do
    for conf in native "" reuse:conservative expandable_segments:True; do
        if [[ $conf == native ]]; then
            line=$(build/tests/interpose/soak_streams "$seconds" "$threads" "$seed") && status=0 || status=$?
        else
            line=$(GPUCACHE_ALLOC_CONF=$conf LD_PRELOAD=$library \
                   build/tests/interpose/soak_streams "$seconds" "$threads" "$seed") && status=0 || status=$?
        fi
        echo "seed $seed, ${conf:-default}: $line"
        if ((status == 0)); then passed=$((passed + 1)); else failed=$((failed + 1)); fi
    done
done
# The test build with the legacy-stream reuse defect put back: the race
# detector must report it during a soak as long as the others.
mutant=$PWD/build/interpose/libgpucache-mutant-legacy-reuse.so
if [[ -e $mutant ]]; then
    if EXPECT_RACE_PRELOAD=$mutant tests/interpose/expect_race.py \
           build/tests/interpose/soak_streams "$seconds" "$threads" 1 >/dev/null 2>&1; then
        echo "test build with the legacy reuse defect: the race detector found it"
        passed=$((passed + 1))
    else
        echo "test build with the legacy reuse defect: the race detector did not fire"
        failed=$((failed + 1))
    fi
fi
echo "$passed passed, $failed failed"
((failed == 0))
