#!/usr/bin/env bash
# Installs the Debian packages the build and the suites need, only those
# missing, so a second run costs nothing.
set -euo pipefail
packages=(meson ninja-build pkg-config gcc g++ clang libclang-rt-14-dev
          libcriterion-dev libbsd-dev libxml2-utils python3 libzstd-dev liblz4-dev
          librsvg2-bin libdw-dev libunwind-dev binutils)
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' \
        || missing+=("$package")
done
if ((${#missing[@]})); then
    echo "gpucache: installing ${missing[*]}" >&2
    sudo_prefix=()
    [[ $(id -u) -eq 0 ]] || sudo_prefix=(sudo)
    "${sudo_prefix[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_prefix[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if [[ ! -e /usr/local/cuda/include/cuda.h && -z "${GPUCACHE_CUDA_ROOT:-}" ]]; then
    echo "gpucache: CUDA 13 headers not found at /usr/local/cuda/include; install the CUDA toolkit or set GPUCACHE_CUDA_ROOT=/path/to/cuda" >&2
    exit 1
fi
