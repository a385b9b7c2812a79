#!/usr/bin/env python3
"""Every documented configuration key changes what the preloaded library does.

Each row runs configuration_probe PATTERN twice on the simulated device:
with a baseline configuration and with the baseline plus the key. Both runs
must show the value the row expects, so a key the live library ignores
makes its row fail. usage: check_configuration_keys.py PROBE
(LD_LIBRARY_PATH comes from the test's environment, and the library to
preload into each probe from GPUCACHE_TEST_PRELOAD)."""
import json
import os
import subprocess
import sys
import tempfile

probe = sys.argv[1]
work = tempfile.mkdtemp(prefix="gpucache-keys-")


def path(name):
    return os.path.join(work, name)


# (key, pattern, device memory, baseline, with the key, what to check)
# The check is (field, expected with the baseline, expected with the key),
# or a function of the run's directory that returns the same two answers.
def is_json(name):
    try:
        with open(path(name)) as stream:
            json.load(stream)
        return True
    except ValueError:
        return False


def has_text(name):
    return os.path.getsize(path(name)) > 0


def has_frames(name):
    with open(path(name)) as stream:
        snapshot = json.load(stream)
    return any(entry.get("frames") for trace in snapshot["device_traces"] for entry in trace)


def is_csv(name):
    with open(path(name)) as stream:
        return "," in stream.readline()


# A file row counts the files whose name starts with the prefix and whose
# content passes the check.
def files_named(prefix, valid):
    return lambda: [n for n in os.listdir(work) if n.startswith(prefix) and valid(n)]


ROWS = [
    # 30 MiB: 15 pages, a handle each (expandable_segments_handles:page).
    ("expandable_segments", "one", None, "", "expandable_segments:True",
     ("cuMemCreate", "0", "15")),
    ("max_split_size_mb", "split", None, "", "max_split_size_mb:40",
     ("cuMemAlloc_v2", "0", "1")),
    ("max_non_split_rounding_mb", "unsplit_rounding", None, "max_split_size_mb:40",
     "max_split_size_mb:40,max_non_split_rounding_mb:40", ("cuMemAlloc_v2", "1", "0")),
    ("roundup_power2_divisions", "keep_1100", None, "", "roundup_power2_divisions:4",
     ("physical_mib", "1100", "1280")),
    # Without stitching, which would move the idle tail into the growth itself.
    ("garbage_collection_threshold", "collect_tail", "1GiB",
     "expandable_segments:True,expandable_segments_stitch:False,per_process_memory_fraction:0.9",
     "expandable_segments:True,expandable_segments_stitch:False,per_process_memory_fraction:0.9,"
     "garbage_collection_threshold:0.3",
     ("physical_mib", "640", "340")),
    ("large_segment_size_mb", "keep_three", None, "", "large_segment_size_mb:40",
     ("physical_mib", "20", "40")),
    ("expandable_segments_size_class_mb", "size_classes", None, "expandable_segments:True",
     "expandable_segments:True,expandable_segments_size_class_mb:256",
     ("cuMemAddressReserve", "1", "2")),
    ("expandable_segments_stitch", "stitch", None, "expandable_segments:True",
     "expandable_segments:True,expandable_segments_stitch:False", ("physical_mib", "100", "140")),
    # 60 MiB: 30 pages, a handle each by default, cut 10 + 20 by doubling
    # from large_segment_size_mb.
    ("expandable_segments_handles", "sixty", None, "expandable_segments:True",
     "expandable_segments:True,expandable_segments_handles:growth", ("cuMemCreate", "30", "1")),
    ("expandable_segments_handles:doubling", "sixty", None, "expandable_segments:True",
     "expandable_segments:True,expandable_segments_handles:doubling", ("cuMemCreate", "30", "2")),
    ("expandable_segments_reserve", "keep_600", "1GiB", "expandable_segments:True",
     "expandable_segments:True,expandable_segments_reserve:0.5", ("error", "0", "2")),
    ("per_process_memory_fraction", "fill", "4GiB", "", "per_process_memory_fraction:0.25",
     ("blocks", "40", "10")),
    ("per_process_memory_fraction (expandable)", "fill", "4GiB", "expandable_segments:True",
     "expandable_segments:True,per_process_memory_fraction:0.25", ("blocks", "40", "10")),
    ("throw_on_cudamalloc_oom", "over_the_cap", "4GiB", "per_process_memory_fraction:0.25",
     "per_process_memory_fraction:0.25,throw_on_cudamalloc_oom:True", ("error", "0", "2")),
    ("backend", "one", None, "", "backend:cudaMallocAsync", ("cuMemAllocAsync", "0", "1")),
    ("reuse:conservative", "free_then_reuse", None, "", "reuse:conservative",
     ("cuCtxSynchronize", "0", "1")),
    ("reuse:relaxed", "free_then_reuse", None, "", "reuse:relaxed",
     ("cuEventRecord", "1", "0")),
    ("passthrough", "pairs", None, "", "passthrough:True", ("cuMemAlloc_v2", "1", "100")),
    ("meminfo", "memory_info", None, "", "meminfo:raw", ("missing_mib", "0", "100")),
    ("oom_message", "fill", "4GiB", "per_process_memory_fraction:0.25",
     "per_process_memory_fraction:0.25,oom_message:False", ("oom_lines", "1", "0")),
    ("report", "one", None, "", "report:" + path("report-%p.json"),
     files_named("report-", is_json)),
    ("summary", "one", None, "", "summary:" + path("summary-%p.txt"),
     files_named("summary-", has_text)),
    ("trace", "one", None, "", "trace:" + path("trace-%p.bin"), files_named("trace-", has_text)),
    ("trace_csv", "one", None, "", "trace_csv:" + path("replay-%p.csv"),
     files_named("replay-", is_csv)),
    ("snapshot", "one", None, "", "snapshot:" + path("snap-%p.json"), files_named("snap-", is_json)),
    ("stacks", "one", None, "snapshot:" + path("stk-%p.json") + ",stacks:0",
     "snapshot:" + path("stk-%p.json") + ",stacks:8", files_named("stk-", has_frames)),
    ("snapshot_signal", "signal", None, "snapshot:" + path("sig-%p.json"),
     "snapshot:" + path("sig-%p.json") + ",snapshot_signal:SIGUSR1",
     lambda: [n for n in os.listdir(work) if "-signal-" in n and is_json(n)]),
]


def run(configuration, pattern, memory):
    env = dict(os.environ, GPUCACHE_ALLOC_CONF=configuration,
               LD_PRELOAD=os.environ["GPUCACHE_TEST_PRELOAD"])
    env.pop("GPUSIM_MEMORY", None)
    if memory:
        env["GPUSIM_MEMORY"] = memory
    done = subprocess.run([probe, pattern], env=env, capture_output=True, text=True,
                          timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"'{configuration}' {pattern}: exit {done.returncode}\n"
                           f"{done.stdout}{done.stderr}")
    values = dict(line.split("=", 1) for line in done.stdout.split() if "=" in line)
    values["oom_lines"] = str(sum(line.startswith("gpucache: out of memory on device ")
                                  for line in done.stderr.splitlines()))
    return values


def clear_work():
    for name in os.listdir(work):
        os.unlink(path(name))


failures = []
for key, pattern, memory, baseline, configured, check in ROWS:
    observed = []
    try:
        for configuration in (baseline, configured):
            clear_work()
            values = run(configuration, pattern, memory)
            if callable(check):
                observed.append(len(check()))
            else:
                observed.append(values.get(check[0]))
        if callable(check):
            expected = [0, 1]
            what = "files written"
        else:
            expected = [check[1], check[2]]
            what = check[0]
        ok = observed == expected
        line = f"{key}: {what} {observed[0]} -> {observed[1]} (expected {expected[0]} -> {expected[1]})"
        if key == "snapshot_signal" and ok:
            # The program's own handler still runs, under the library's.
            ok = values.get("own_handler_calls") == "1"
            line += f", program's handler ran {values.get('own_handler_calls')} time(s)"
    except (RuntimeError, subprocess.TimeoutExpired) as error:
        ok, line = False, f"{key}: {error}"
    print(("ok   " if ok else "FAIL ") + line)
    if not ok:
        failures.append(key)

clear_work()
os.rmdir(work)
if failures:
    print("keys without their effect: " + ", ".join(failures))
    sys.exit(1)
