#!/usr/bin/env bash
# replay-figures.sh OUTPUT_DIR
#
# A before/after guard for changes that must not move a figure: replays every
# shared PyTorch snapshot under a fixed set of configurations with
# `build/tools/gpucache replay --conf C --json TRACE` and writes each JSON
# report, without the keys that hold timings (every key containing "seconds",
# "nanoseconds" or "per_second"), to OUTPUT_DIR/<trace>@<configuration>.json.
# Run it before and after the change and compare with `diff -r`.
#
# The six worked examples of the allocator's behaviour (the reserved figures
# of PyTorch's native allocator and of expandable segments) are reproduced by
# `gpucache replay` on small RMM CSV traces; tests/replay/replay_command_test.py
# (cases example-1, expandable-examples, example-6) builds and checks them. The
# script writes the same traces and replays each under the same configurations
# to OUTPUT_DIR/example-<name>@<configuration>.json (the "trace" key reduced to
# the file's name). The tests in tests/allocator/test_worked_examples.c and
# tests/vmm/test_expandable_allocator.c assert the examples on the allocator's
# API; the script runs those tests and writes which passed to
# OUTPUT_DIR/worked-examples.txt.
#
# Traces: $GPUCACHE_TRACES, else ../shared/traces/pytorch-snapshots relative
# to the parent of the repository root. The build directory is $GPUCACHE_BUILD
# (default build/).
set -euo pipefail
if [[ $# -ne 1 ]]; then
    echo "usage: $0 OUTPUT_DIR" >&2
    exit 2
fi
out=$1
root=$(cd "$(dirname "$0")/.." && pwd)
traces=${GPUCACHE_TRACES:-$root/../shared/traces/pytorch-snapshots}
build=${GPUCACHE_BUILD:-$root/build}
gpucache=$build/tools/gpucache
[[ -x $gpucache ]] || { echo "$0: $gpucache not built" >&2; exit 1; }
[[ -d $traces ]] || { echo "$0: no trace directory $traces" >&2; exit 1; }

configurations=(
    ""
    "expandable_segments:True"
    "reuse:conservative"
    "garbage_collection_threshold:0.6"
    "max_split_size_mb:64"
    "roundup_power2_divisions:4"
    "expandable_segments:True,garbage_collection_threshold:0.6"
)
# Extra configurations, comma-separated keys, separated by ';' (for checking
# that a key moves no figure).
if [[ -n ${GPUCACHE_EXTRA_CONFIGURATIONS:-} ]]; then
    IFS=';' read -r -a extra <<<"$GPUCACHE_EXTRA_CONFIGURATIONS"
    configurations+=("${extra[@]}")
fi

mkdir -p "$out"
strip_timings='
import json, os, sys
def strip(value):
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items()
                if not any(t in k for t in ("seconds", "nanoseconds", "per_second"))}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value
report = strip(json.load(sys.stdin))
if len(sys.argv) > 1 and isinstance(report.get("trace"), str):
    report["trace"] = os.path.basename(report["trace"])
json.dump(report, sys.stdout, indent=1)
sys.stdout.write("\n")
'
shopt -s nullglob
count=0
for trace in "$traces"/*.pickle; do
    name=$(basename "$trace" .pickle)
    for conf in "${configurations[@]}"; do
        label=${conf:-default}
        label=${label//[:,]/_}
        file="$out/$name@$label.json"
        if ! "$gpucache" replay --conf "$conf" --json "$trace" | python3 -c "$strip_timings" >"$file"; then
            echo "$0: replay failed: --conf '$conf' $trace" >&2
            exit 1
        fi
        count=$((count + 1))
    done
done
[[ $count -gt 0 ]] || { echo "$0: no *.pickle under $traces" >&2; exit 1; }

# The worked examples' traces, as tests/replay/replay_command_test.py writes them.
examples=$(mktemp -d "${TMPDIR:-/tmp}/gpucache-examples-XXXXXX")
trap 'rm -rf "$examples"' EXIT
PYTHONDONTWRITEBYTECODE=1 python3 - "$root/tests/replay" "$examples" <<'PYTHON'
import os, sys
sys.path.insert(0, sys.argv[1])
from replay_command_test import (CsvTrace, MiB, example_1_trace, example_3_trace,
                                 example_4_trace)
out = sys.argv[2]
base = 0x7F0000000000
traces = {
    "1-small-first": example_1_trace(True),
    "1-large-first": example_1_trace(False),
    "2": CsvTrace().allocate(base, 16 * MiB).allocate(base + (1 << 32), 16 * MiB),
    "5": CsvTrace().allocate(base, 40 * MiB).free(base, 40 * MiB).allocate(base, 60 * MiB),
    "6-loophole": CsvTrace().allocate(base, 2 * MiB).free(base, 2 * MiB)
                  .allocate(0x7F1000000000, MiB // 2),
    "6-control": CsvTrace().allocate(base, 2 * MiB).free(base, 2 * MiB).allocate(base, 2 * MiB),
}
traces["3"] = example_3_trace()
traces["4"] = example_4_trace()
for name, trace in traces.items():
    trace.write(os.path.join(out, name + ".csv"))
PYTHON
for trace in "$examples"/*.csv; do
    name=example-$(basename "$trace" .csv)
    for conf in "${configurations[@]}"; do
        label=${conf:-default}
        label=${label//[:,]/_}
        file="$out/$name@$label.json"
        if ! "$gpucache" replay --conf "$conf" --json "$trace" |
                python3 -c "$strip_timings" basename >"$file"; then
            echo "$0: replay failed: --conf '$conf' $trace" >&2
            exit 1
        fi
        count=$((count + 1))
    done
done

# Worked examples: the names and results of the tests that assert them.
{
    for test in "tests/allocator/allocator_unit_tests --filter=worked_examples/*" \
                "tests/vmm/vmm_allocator_tests"; do
        read -r -a argv <<<"$test"
        if [[ -x $build/${argv[0]} ]]; then
            echo "# $test"
            "$build/${argv[0]}" "${argv[@]:1}" --jobs=1 --tap=- 2>/dev/null |
                sed -E 's/ *\([0-9.]+s\)$//' | grep -E '^(not )?ok' | grep -v '# SKIP' | sed -E 's/^(not )?ok [0-9]+/\1ok/' | sort || true
        else
            echo "missing: ${argv[0]}"
        fi
    done
} >"$out/worked-examples.txt"
echo "$count replay reports and worked-examples.txt written to $out"
