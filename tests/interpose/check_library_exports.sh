#!/usr/bin/env bash
# Checks what libgpucache.so exposes to the dynamic linker:
#  - it exports exactly the names its version script lists (every listed
#    hook is defined, nothing internal leaks);
#  - it has no NEEDED entry for libcuda or libcudart, so processes without a
#    driver, or that never use CUDA, load it without loading CUDA.
# usage: check_library_exports.sh LIBRARY VERSION_SCRIPT
set -euo pipefail
library=$1
version_script=$2

expected=$(sed -n '/global:/,/local:/p' "$version_script" \
    | grep -Eo '^[[:space:]]*[A-Za-z_][A-Za-z0-9_]*;' | tr -d ' ;' | sort)
exported=$(readelf --dyn-syms --wide "$library" \
    | awk '$5 != "LOCAL" && $7 != "UND" && ($4 == "FUNC" || $4 == "OBJECT") { sub(/@.*/, "", $8); print $8 }' \
    | sort -u)

if [[ "$expected" != "$exported" ]]; then
    echo "exported symbols differ from $version_script:"
    diff <(echo "$expected") <(echo "$exported") || true
    exit 1
fi
count=$(echo "$exported" | wc -l)

needed=$(readelf --dynamic --wide "$library" | grep NEEDED || true)
if grep -Eq 'libcuda|libcudart' <<<"$needed"; then
    echo "libgpucache.so must not depend on the CUDA libraries:"
    echo "$needed"
    exit 1
fi
echo "$count symbols exported, as listed; no NEEDED libcuda or libcudart"
