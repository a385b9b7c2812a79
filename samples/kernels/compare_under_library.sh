#!/bin/sh
# Runs a sample natively on the simulated device, then under
# LD_PRELOAD=libgpucache.so with each allocator configuration, and fails
# unless every run exits the same way and prints the same output.
# Usage: compare_under_library.sh PRELOAD PROGRAM
# PRELOAD is the LD_PRELOAD value for the library runs (the library,
# preceded by a sanitizer runtime in sanitized builds).
set -u
preload=$1
program=$2
native_output=$("$program")
native_status=$?
printf 'native (exit %d): %s\n' "$native_status" "$native_output"
if [ "$native_status" -ne 0 ]; then
    echo "the sample fails natively" >&2
    exit 1
fi
for configuration in "" "expandable_segments:True"; do
    output=$(GPUCACHE_ALLOC_CONF=$configuration LD_PRELOAD=$preload "$program")
    status=$?
    printf "GPUCACHE_ALLOC_CONF='%s' (exit %d): %s\n" "$configuration" "$status" "$output"
    if [ "$status" -ne "$native_status" ] || [ "$output" != "$native_output" ]; then
        echo "differs from the native run under GPUCACHE_ALLOC_CONF='$configuration'" >&2
        exit 1
    fi
done
