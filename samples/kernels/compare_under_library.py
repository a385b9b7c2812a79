#!/usr/bin/env python3
"""Runs a sample natively on the simulated device, then under
LD_PRELOAD=libgpucache.so in each main allocator configuration, every run
with the sim's race detector on. Fails unless every run exits the same way,
prints the same output and reports no race; prints how many device
allocations reached the driver in each run (the reduction the library is
for).

Usage: compare_under_library.py PRELOAD PROGRAM [ARGUMENT...]
PRELOAD is the LD_PRELOAD value for the library runs (the library, preceded
by a sanitizer runtime in sanitized builds)."""
import json
import os
import subprocess
import sys
import tempfile

CONFIGURATIONS = ["", "expandable_segments:True", "reuse:conservative",
                  "backend:cudaMallocAsync"]
# The driver calls that take device memory from the device.
DRIVER_ALLOCATIONS = ["cuMemAlloc", "cuMemAlloc_v2", "cuMemAllocAsync", "cuMemAllocAsync_ptsz",
                      "cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync_ptsz",
                      "cuMemAllocPitch", "cuMemAllocPitch_v2", "cuMemAllocManaged", "cuMemCreate"]
RACE_STATUS = 66


def run(command, configuration, preload, scratch):
    stats = os.path.join(scratch, "stats.json")
    if os.path.exists(stats):
        os.unlink(stats)
    env = dict(os.environ, GPUSIM_RACECHECK="1", GPUSIM_STATS=stats)
    env.pop("GPUCACHE_ALLOC_CONF", None)
    if configuration is not None:
        env["LD_PRELOAD"] = preload
        env["GPUCACHE_ALLOC_CONF"] = configuration
    process = subprocess.run(command, env=env, capture_output=True, text=True, timeout=240)
    allocations = races = None
    try:
        with open(stats) as file:
            data = json.load(file)
        allocations = sum(data["calls"].get(name, 0) for name in DRIVER_ALLOCATIONS)
        races = data["races"]
    except (OSError, ValueError, KeyError):
        pass
    return process, allocations, races


def describe(configuration):
    return "native" if configuration is None else f"GPUCACHE_ALLOC_CONF='{configuration}'"


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    preload, command = sys.argv[1], sys.argv[2:]
    failed = False
    with tempfile.TemporaryDirectory(prefix="sample-") as scratch:
        native = None
        for configuration in [None] + CONFIGURATIONS:
            process, allocations, races = run(command, configuration, preload, scratch)
            print(f"{describe(configuration)} (exit {process.returncode}, "
                  f"{allocations} driver allocations, {races} races):")
            sys.stdout.write(process.stdout)
            if process.stderr:
                sys.stdout.write("stderr: " + process.stderr)
            if process.returncode == RACE_STATUS or races:
                print(f"FAIL: the race detector reported a race under {describe(configuration)}")
                failed = True
            if configuration is None:
                native = process
                if process.returncode != 0:
                    print("FAIL: the sample fails natively")
                    return 1
            elif process.returncode != native.returncode or process.stdout != native.stdout:
                print(f"FAIL: differs from the native run under {describe(configuration)}")
                failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
