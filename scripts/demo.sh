#!/usr/bin/env bash
# The main job on the simulated device: an allocation-heavy CUDA program run
# natively and under libgpucache.so with several configurations side by side,
# then the same comparison offline on recorded PyTorch traces.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cuda_root=${GPUCACHE_CUDA_ROOT:-/usr/local/cuda}
if [[ ! -d build ]]; then
    meson setup build -Dcuda-root="$cuda_root" >/dev/null
fi
ninja -C build >/dev/null

steps=${GPUCACHE_DEMO_STEPS:-300}
export LD_LIBRARY_PATH=$PWD/build/sim GPUSIM_MEMORY=${GPUSIM_MEMORY:-16GiB}

echo "== A/B on the simulated device: samples/training_loop.c, $steps steps, 16 GiB device"
build/tools/gpucache ab --baseline --repeat 3 \
    --conf "" --conf "expandable_segments:True" --conf "roundup_power2_divisions:4" \
    --conf "reuse:conservative" \
    -- build/samples/training_loop "$steps"

traces=../shared/traces/pytorch-snapshots
if [[ -d $traces ]]; then
    for trace in "$traces"/*.pickle; do
        echo
        echo "== offline replay of $(basename "$trace") (a PyTorch memory snapshot)"
        build/tools/gpucache replay --min-device \
            --conf "" --conf "expandable_segments:True" \
            --conf "expandable_segments:True,expandable_segments_stitch:False,expandable_segments_handles:growth" \
            --conf "roundup_power2_divisions:4" "$trace"
    done
fi
