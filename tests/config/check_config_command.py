#!/usr/bin/env python3
"""Checks `gpucache config` and the dispatcher: exit statuses, the one-line
errors, and JSON output parsed back with the standard library.

usage: check_config_command.py GPUCACHE_EXECUTABLE"""
import json
import os
import subprocess
import sys

VARIABLES = ("GPUCACHE_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")
KEYS = [
    "expandable_segments", "max_split_size_mb", "max_non_split_rounding_mb",
    "roundup_power2_divisions", "garbage_collection_threshold", "large_segment_size_mb",
    "expandable_segments_reserve", "expandable_segments_reserve_by_class",
    "per_process_memory_fraction", "throw_on_cudamalloc_oom", "release_lock_on_cudamalloc",
    "backend", "graph_capture_record_stream_reuse", "pinned_use_background_threads",
    "pinned_use_cuda_host_register", "pinned_num_register_threads",
    "pinned_reserve_segment_size_mb", "pinned_free_catch_all", "reuse", "passthrough",
    "meminfo", "oom_message", "stacks", "expandable_segments_size_class_mb",
    "expandable_segments_stitch", "expandable_segments_handles", "report", "summary", "trace",
    "trace_csv", "snapshot", "snapshot_signal",
]
failures = []


def run(executable, arguments, variables=None):
    environment = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    environment.update(variables or {})
    return subprocess.run([executable] + arguments, env=environment, capture_output=True,
                          text=True)


def expect(condition, message):
    if not condition:
        failures.append(message)


def expect_error(result, line, what):
    expect(result.returncode == 2, f"{what}: exit status {result.returncode}, expected 2")
    expect(result.stdout == "", f"{what}: wrote to stdout {result.stdout!r}")
    expect(result.stderr == line + "\n", f"{what}: stderr {result.stderr!r}, expected {line!r}")


def parsed(result, what):
    expect(result.returncode == 0, f"{what}: exit status {result.returncode} {result.stderr!r}")
    try:
        return json.loads(result.stdout)
    except json.JSONDecodeError as error:
        failures.append(f"{what}: not JSON ({error}): {result.stdout!r}")
        return None


def check_config(executable):
    defaults = parsed(run(executable, ["config"]), "defaults")
    if defaults:
        expect(defaults["variable"] is None, "defaults: variable should be null")
        expect(list(defaults["keys"]) == KEYS, f"keys: {list(defaults['keys'])}")
        expect(all(entry["source"] == "default" for entry in defaults["keys"].values()),
               "defaults: every source should be default")
        expect(defaults["keys"]["max_non_split_rounding_mb"]["value"] == 20, "default rounding")
        expect(defaults["keys"]["max_split_size_mb"]["value"] is None, "default max split")
        expect("pinned_free_catch_all" in defaults["ignored"], "pinned keys are ignored")
        expect("expandable_segments" not in defaults["ignored"], "ES is not ignored")

    text = ("expandable_segments:True, roundup_power2_divisions:[256:1,512:2,>:8],"
            "garbage_collection_threshold:0.6,report:/tmp/r-%p.json,trace:/tmp/a\"b")
    given = parsed(run(executable, ["config", text]), "string argument")
    if given:
        keys = given["keys"]
        expect(given["variable"] is None, "a STRING argument reads no variable")
        expect(keys["expandable_segments"] == {"value": True, "source": "string"}, "ES value")
        table = keys["roundup_power2_divisions"]["value"]
        expect([table[str(1 << i)] for i in range(16)] == [1] * 9 + [2] + [8] * 6,
               f"roundup table {table}")
        expect(keys["garbage_collection_threshold"]["value"] == 0.6, "threshold")
        expect(keys["report"]["value"] == "/tmp/r-%p.json", "report path")
        expect(keys["trace"]["value"] == "/tmp/a\"b", "escaped path")
        expect(keys["reuse"] == {"value": "async", "source": "default"}, "reuse default")

    from_environment = parsed(run(executable, ["config"], {
        "PYTORCH_ALLOC_CONF": "backend:cudaMallocAsync,max_split_size_mb:64"}), "environment")
    if from_environment:
        expect(from_environment["variable"] == "PYTORCH_ALLOC_CONF", "variable read")
        expect(from_environment["keys"]["max_split_size_mb"]["value"] == 64, "max split")
        expect("max_split_size_mb" in from_environment["ignored"], "cudaMallocAsync ignores it")

    warned = run(executable, ["config"], {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
                                          "PYTORCH_ALLOC_CONF": "expandable_segments:False"})
    parsed(warned, "conflicting variables")
    expect(warned.stderr == "gpucache: warning: PYTORCH_CUDA_ALLOC_CONF and PYTORCH_ALLOC_CONF "
                            "are both set and differ; using PYTORCH_CUDA_ALLOC_CONF, as PyTorch "
                            "does\n", f"conflict warning {warned.stderr!r}")

    expect_error(run(executable, ["config", "expandable_segments:true"]),
                 "gpucache: GPUCACHE_ALLOC_CONF: not a boolean in 'expandable_segments:true' "
                 "(expected True or False)", "bad string argument")
    expect_error(run(executable, ["config"], {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:1"}),
                 "gpucache: PYTORCH_CUDA_ALLOC_CONF: max_split_size_mb too small in "
                 "'max_split_size_mb:1' (expected at least large_segment_size_mb, 20)",
                 "bad variable")
    expect_error(run(executable, ["config", "a", "b"]),
                 "gpucache config: too many arguments (expected at most one configuration "
                 "STRING; quote it)", "two arguments")
    usage = run(executable, ["config", "--help"])
    expect(usage.returncode == 0 and usage.stdout.startswith("usage: gpucache config"),
           "config --help")
    # --keys: every key once, in the table's order, with what it accepts.
    listed = run(executable, ["config", "--keys"])
    names = [line.split()[0] for line in listed.stdout.splitlines() if line.strip()]
    expect(listed.returncode == 0 and names == KEYS, f"config --keys lists {names}")
    expect("expandable_segments                  True or False" in listed.stdout,
           f"config --keys gives what a key accepts: {listed.stdout[:200]!r}")
    expect("pinned_free_catch_all" in listed.stdout and "(no effect in this build)" in listed.stdout,
           "config --keys marks the keys without effect")


def check_dispatcher(executable):
    for word in ("help", "--help"):
        result = run(executable, [word])
        expect(result.returncode == 0, f"{word}: exit status {result.returncode}")
        expect("config [STRING]" in result.stdout, f"{word} lists config: {result.stdout!r}")
    # The commands the help lists, in its order (help first).
    names = ", ".join(line.split()[0] for line in run(executable, ["help"]).stdout.splitlines()
                      if line.startswith("  "))
    expect_error(run(executable, ["frobnicate"]),
                 f"gpucache: unknown command 'frobnicate' (expected one of {names})",
                 "unknown command")
    expect_error(run(executable, []),
                 f"gpucache: missing command (expected one of {names}; try 'gpucache help')",
                 "no command")


def main():
    executable = sys.argv[1]
    check_config(executable)
    check_dispatcher(executable)
    for failure in failures:
        print("FAIL:", failure)
    if failures:
        sys.exit(1)
    print("gpucache config checks passed")


if __name__ == "__main__":
    main()
