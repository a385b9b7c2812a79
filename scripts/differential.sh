#!/usr/bin/env bash
# Long differential runs: generated CUDA programs run natively on the
# simulated device and under libgpucache.so in every configuration that
# matters (tests/differential/README.md). Builds what is missing first.
#
#   scripts/differential.sh --seeds N      seeds 0..N-1 (default 1000)
#   scripts/differential.sh --hours H      as many seeds as fit in H hours
#   scripts/differential.sh ... [runner options]
#
# Runner options pass through, e.g. --first-seed 5000, --jobs 8,
# --no-legacy-free-async (look past the known legacy-stream bug),
# --no-busy-destroy, --conf reuse:conservative. Each failing case is minimised
# into differential-found/ (first --max-shrinks of them, default 20); copy
# the ones worth keeping into tests/differential/regressions/.
set -euo pipefail
cd "$(dirname "$0")/.."
cuda_root=${GPUCACHE_CUDA_ROOT:-/usr/local/cuda}
[[ -d build ]] || meson setup build -Dcuda-root="$cuda_root" -Dwerror=true >/dev/null
ninja -C build tests/differential/interpreter interpose/libgpucache.so >/dev/null

range=(--seeds 1000)
runner_options=()
while (($#)); do
    case $1 in
        --seeds) range=(--seeds "$2"); shift 2 ;;
        --hours) range=(--hours "$2"); shift 2 ;;
        *) runner_options+=("$1"); shift ;;
    esac
done
LD_LIBRARY_PATH=build/sim exec python3 tests/differential/differential.py run \
    --interpreter build/tests/differential/interpreter \
    --library build/interpose/libgpucache.so \
    --shrink-into differential-found --max-shrinks 20 \
    "${range[@]}" "${runner_options[@]}"
