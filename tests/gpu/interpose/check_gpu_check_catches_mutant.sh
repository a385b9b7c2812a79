#!/usr/bin/env bash
# scripts/gpu-check.sh --sim with the library whose legacy-stream reuse
# defect is put back: the legacy reuse_hazard row, and only that row, must
# fail (a script that passes the defect, or fails for another reason such
# as a build error, fails this test).
# usage: check_gpu_check_catches_mutant.sh GPU_CHECK_SCRIPT MUTANT_LIBRARY
# (GPUCACHE_GPU_CHECK_ROWS may narrow the rows to the reuse_hazard ones)
set -uo pipefail
output=$("$1" --sim "$2" 2>&1)
status=$?
failed_rows=$(grep -E ' (pass|FAIL)$' <<<"$output" | grep -c ' FAIL$')
if [[ $status -ne 1 || $failed_rows -ne 1 ]] ||
    ! grep -qE '^reuse_hazard/legacy .* FAIL$' <<<"$output"; then
    echo "expected exactly the reuse_hazard/legacy row to fail (exit $status, $failed_rows rows failed):"
    echo "$output"
    exit 1
fi
echo "gpu-check --sim fails the defect on its legacy row only"
