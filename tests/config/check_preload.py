#!/usr/bin/env python3
"""Preloads a library whose constructor loads the configuration into
/bin/true: a bad string must stop it before main with exit status 2 and
exactly one line on stderr; a good one must leave no trace.

With a second library, one that also counts heap allocations during the
load, checks that loading a configuration does not allocate (skipped in
sanitizer builds, whose runtime owns malloc).

usage: check_preload.py LIBRARY [COUNTING_LIBRARY]"""
import os
import subprocess
import sys


def sanitizer_runtimes(library):
    """A sanitized build's runtime must come first in LD_PRELOAD, or ASan
    refuses to start inside an uninstrumented /bin/true."""
    listing = subprocess.run(["ldd", library], capture_output=True, text=True).stdout
    runtimes = []
    for line in listing.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] == "=>" and any(
                name in parts[0] for name in ("libasan", "libubsan", "libtsan")):
            runtimes.append(parts[2])
    return runtimes


def run(library, variables):
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("GPUCACHE_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF",
                                  "PYTORCH_ALLOC_CONF")}
    environment["LD_PRELOAD"] = ":".join(sanitizer_runtimes(library) + [library])
    environment.update(variables)
    return subprocess.run(["/bin/true"], env=environment, capture_output=True, text=True)


def expect(condition, message):
    if not condition:
        print("FAIL:", message)
        sys.exit(1)


def main():
    library = os.path.abspath(sys.argv[1])

    result = run(library, {"GPUCACHE_ALLOC_CONF": "expandable_segments:true"})
    expect(result.returncode == 2, f"bad string: exit status {result.returncode}, expected 2")
    expect(result.stdout == "", f"bad string wrote to stdout: {result.stdout!r}")
    expect(result.stderr == "gpucache: GPUCACHE_ALLOC_CONF: not a boolean in "
                            "'expandable_segments:true' (expected True or False)\n",
           f"bad string: stderr {result.stderr!r}")

    result = run(library, {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:abc"})
    expect(result.returncode == 2 and result.stderr.count("\n") == 1 and
           result.stderr.startswith("gpucache: PYTORCH_CUDA_ALLOC_CONF: not a number in "),
           f"bad PyTorch string: {result.returncode} {result.stderr!r}")

    for variables in ({"GPUCACHE_ALLOC_CONF": "expandable_segments:True,reuse:relaxed"},
                      {"PYTORCH_ALLOC_CONF": "roundup_power2_divisions:[256:1,512:2,>:8]"},
                      {"GPUCACHE_ALLOC_CONF": ""}, {}):
        result = run(library, variables)
        expect(result.returncode == 0, f"{variables}: exit status {result.returncode}")
        expect(result.stdout == "" and result.stderr == "",
               f"{variables}: output {result.stdout!r} {result.stderr!r}")

    result = run(library, {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
                           "PYTORCH_ALLOC_CONF": "expandable_segments:False"})
    expect(result.returncode == 0, "conflicting PyTorch variables stopped the program")
    expect(result.stderr == "gpucache: warning: PYTORCH_CUDA_ALLOC_CONF and PYTORCH_ALLOC_CONF "
                            "are both set and differ; using PYTORCH_CUDA_ALLOC_CONF, as PyTorch "
                            "does\n", f"conflict warning: {result.stderr!r}")
    if len(sys.argv) > 2:
        check_no_allocation(os.path.abspath(sys.argv[2]))
    print("preload checks passed")


def check_no_allocation(library):
    if sanitizer_runtimes(library):
        print("allocation check skipped: sanitizer runtime replaces malloc")
        return
    # A long string with every kind of value, and a warning line.
    text = ("expandable_segments:True,max_split_size_mb:128,garbage_collection_threshold:0.6,"
            "roundup_power2_divisions:[256:1,512:2,>:8],expandable_segments_reserve:1.5G,"
            "expandable_segments_reserve_by_class:[a:0.5],per_process_memory_fraction:0.5,"
            "reuse:conservative,meminfo:raw,report:/tmp/r-%p.json,snapshot:/tmp/s,"
            "snapshot_signal:SIGUSR1,backend:cudaMallocAsync")
    for variables in ({"GPUCACHE_ALLOC_CONF": text}, {},
                      {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
                       "PYTORCH_ALLOC_CONF": "max_split_size_mb:64"}):
        result = run(library, variables)
        expect(result.returncode == 0 and "allocated" not in result.stderr,
               f"{variables}: loading allocated or failed: {result.returncode} {result.stderr!r}")


if __name__ == "__main__":
    main()
