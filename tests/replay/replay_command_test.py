#!/usr/bin/env python3
"""End-to-end checks of `gpucache replay`: traces written here (RMM CSV and
PyTorch snapshot pickles), run through the real command, results compared
with what PyTorch's allocator rules give by hand.

usage: replay_command_test.py CASE GPUCACHE [TRACES_DIR]
Exit status 0 pass, 1 fail, 77 skip (meson's convention)."""

import json
import os
import pickle
import pickletools
import subprocess
import sys
import tempfile

from snapshot_writer import MiB, SnapshotWriter
import variable_shape_trace

SKIP = 77
HEADER = "Thread,Time,Action,Pointer,Size,Stream"


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def run(tool, *arguments):
    return subprocess.run([tool, "replay", *arguments], capture_output=True, text=True,
                          check=False)


def replay_json(tool, trace, *arguments):
    result = run(tool, "--json", *arguments, trace)
    check(result.returncode == 0,
          f"exit {result.returncode} for {trace}: {result.stderr.strip()}")
    check(result.stderr == "", f"stderr not empty without a terminal: {result.stderr!r}")
    return json.loads(result.stdout)


def expect_error(tool, trace, message, *arguments):
    result = run(tool, *arguments, trace)
    check(result.returncode == 2, f"exit {result.returncode}, expected 2 for {trace}")
    check(result.stdout == "", f"stdout not empty on error: {result.stdout!r}")
    check(result.stderr == message + "\n",
          f"stderr\n  {result.stderr!r}\nexpected\n  {message + chr(10)!r}")


def stat(configuration, name):
    return configuration["stats"][name]


class CsvTrace:
    """An RMM replay log, one row per call, as logging_resource_adaptor writes."""

    def __init__(self):
        self.rows = [HEADER]

    def allocate(self, pointer, size, stream=0):
        self.rows.append(f"140573312345856,10:00:00.000001,allocate,{pointer:#x},{size},{stream:#x}")
        return self

    def free(self, pointer, size, stream=0):
        self.rows.append(f"140573312345856,10:00:00.000002,free,{pointer:#x},{size},{stream:#x}")
        return self

    def write(self, path):
        with open(path, "w", encoding="ascii") as out:
            out.write("\n".join(self.rows) + "\n")
        return path


def write_text(path, text):
    with open(path, "w", encoding="ascii") as out:
        out.write(text)
    return path


def example_1_trace(small_first):
    """DESIGN.md section 6, example 1: 8 x 16 MiB then 4 x 32 MiB, or the
    other way round, freeing everything in between."""
    trace, base = CsvTrace(), 0x7F0000000000
    first, second = ((8, 16), (4, 32)) if small_first else ((4, 32), (8, 16))
    for count, size in (first, second):
        pointers = [base + index * size * MiB for index in range(count)]
        for pointer in pointers:
            trace.allocate(pointer, size * MiB)
        if (count, size) == first:
            for pointer in pointers:
                trace.free(pointer, size * MiB)
        base += 1 << 32
    return trace


WORKED_EXAMPLE_BASE = 0x7F0000000000


def example_3_trace():
    """8 x 16 MiB, all freed, then 4 x 32 MiB at other addresses."""
    base, trace = WORKED_EXAMPLE_BASE, CsvTrace()
    for index in range(8):
        trace.allocate(base + index * 16 * MiB, 16 * MiB)
    for index in range(8):
        trace.free(base + index * 16 * MiB, 16 * MiB)
    for index in range(4):
        trace.allocate(base + (1 << 32) + index * 32 * MiB, 32 * MiB)
    return trace


def example_4_trace():
    """4 x 16 MiB, the first and third freed, then one 32 MiB."""
    base, trace = WORKED_EXAMPLE_BASE, CsvTrace()
    for index in range(4):
        trace.allocate(base + index * 16 * MiB, 16 * MiB)
    return trace.free(base, 16 * MiB).free(base + 32 * MiB, 16 * MiB).allocate(base + (1 << 32),
                                                                               32 * MiB)


def case_unmodelled(tool, workdir, _traces):
    """Keys and options the replay cannot model are refused with one line."""
    path = example_1_trace(True).write(os.path.join(workdir, "example1.csv"))
    for configuration, key in (("report:/tmp/r.json", "report"), ("meminfo:raw", "meminfo"),
                               ("expandable_segments:True,snapshot:/tmp/s.json", "snapshot")):
        result = subprocess.run([tool, "replay", "--conf", configuration, path],
                                capture_output=True, text=True)
        check(result.returncode == 2 and result.stderr.count("\n") == 1 and
              f"the replay cannot model {key} " in result.stderr,
              f"--conf {configuration}: exit {result.returncode}, {result.stderr!r}")
    result = subprocess.run([tool, "replay", "--device", "1", path], capture_output=True, text=True)
    check(result.returncode == 2 and "holds the trace of one device" in result.stderr,
          f"--device on a CSV trace: exit {result.returncode}, {result.stderr!r}")
    # What the replay does model, reuse across streams included, runs.
    result = subprocess.run([tool, "replay", "--conf", "reuse:conservative", path],
                            capture_output=True, text=True)
    check(result.returncode == 0, f"reuse:conservative: exit {result.returncode} {result.stderr}")
    return 0


def case_example_1(tool, workdir, _traces):
    small_first = example_1_trace(True).write(os.path.join(workdir, "small_first.csv"))
    large_first = example_1_trace(False).write(os.path.join(workdir, "large_first.csv"))
    grows = replay_json(tool, small_first)["configurations"][0]
    check(grows["completed"], "8 x 16 then 4 x 32 did not complete")
    check(stat(grows, "allocated_bytes.all.peak") == 128 * MiB,
          f"peak allocated {stat(grows, 'allocated_bytes.all.peak')}, expected 128 MiB")
    check(stat(grows, "reserved_bytes.all.peak") == 256 * MiB,
          f"8 x 16 then 4 x 32: peak reserved {stat(grows, 'reserved_bytes.all.peak')}, "
          "expected 256 MiB (reserved grows from 128 to 256)")
    check(stat(grows, "num_device_alloc") == 12, "expected 8 + 4 segments")
    final = sorted((segment["total_size"], [b["state"] for b in segment["blocks"]])
                   for segment in grows["segments"])
    check(final == [(16 * MiB, ["inactive"])] * 8 + [(32 * MiB, ["active_allocated"])] * 4,
          f"final segments {final}")
    check(abs(grows["utilisation"] - 0.5) < 1e-9 and abs(grows["fragmentation"] - 0.5) < 1e-9,
          "utilisation and fragmentation should both be 0.5")
    stays = replay_json(tool, large_first)["configurations"][0]
    check(stat(stays, "reserved_bytes.all.peak") == 128 * MiB,
          f"4 x 32 then 8 x 16: peak reserved {stat(stays, 'reserved_bytes.all.peak')}, "
          "expected 128 MiB (the 32 MiB blocks are split)")
    check(stat(stays, "num_device_alloc") == 4, "expected the 4 segments of 32 MiB only")
    table = run(tool, small_first).stdout.splitlines()
    check("peak reserved       256.00 MiB" in table, f"table row missing:\n" + "\n".join(table))
    check("fragmentation           50.00%" in table, "fragmentation row missing")


def expandable_run(tool, workdir, name, trace):
    """The one configuration of an expandable replay, with its final mapped
    blocks as (offset from the reservation, size, state). The worked examples
    are PyTorch's mechanism: one handle per growth, no handle moved."""
    path = trace.write(os.path.join(workdir, name + ".csv"))
    report = replay_json(tool, path, "--conf", "expandable_segments:True,"
                         "expandable_segments_stitch:False,expandable_segments_handles:growth")
    configuration = report["configurations"][0]
    check(configuration["completed"], f"{name}: did not complete")
    large = [s for s in configuration["segments"] if s["segment_type"] == "large"]
    check(len(large) == 1, f"{name}: {len(large)} large segments, expected one reservation")
    base = large[0]["address"]
    # Blocks up to the peak reserved bytes; what lies beyond is unmapped.
    mapped = stat(configuration, "reserved_bytes.all.current")
    blocks = [(b["address"] - base, b["size"], b["state"]) for b in large[0]["blocks"]
              if b["address"] - base < mapped]
    return configuration, blocks


def case_expandable_examples(tool, workdir, _traces):
    """DESIGN.md section 6, examples 2-5, through `gpucache replay` with
    expandable segments as PyTorch has them (growths of at least 20 MiB, as
    the 20 MiB pages of the examples)."""
    base = 0x7F0000000000
    # 2: alloc 16 maps 20 MiB; a second 16 maps the next 20 MiB and the free
    # 4 + 20 merge: [16 | 16 | 8 free], reserved 40.
    trace = CsvTrace().allocate(base, 16 * MiB).allocate(base + (1 << 32), 16 * MiB)
    configuration, blocks = expandable_run(tool, workdir, "example_2", trace)
    check(stat(configuration, "reserved_bytes.all.peak") == 40 * MiB,
          f"example 2: reserved {stat(configuration, 'reserved_bytes.all.peak')}, expected 40 MiB")
    check(blocks == [(0, 16 * MiB, "active_allocated"), (16 * MiB, 16 * MiB, "active_allocated"),
                     (32 * MiB, 8 * MiB, "inactive")],
          f"example 2: blocks {blocks}, expected [16 | 16 | 8 free]")
    check(stat(configuration, "num_device_alloc") == 2, "example 2: expected two maps")
    # Granularity and device size, the reservation, then per growth one
    # handle: a create, a map and an access grant.
    check(configuration["driver_calls"] == 2 + 1 + 2 * 3,
          f"example 2: {configuration['driver_calls']} driver calls, expected 9")
    # 3: 8 x 16 (7 growths of 20 MiB), free all, 4 x 32: no new physical
    # memory.
    configuration, blocks = expandable_run(tool, workdir, "example_3", example_3_trace())
    check(stat(configuration, "reserved_bytes.all.peak") == 140 * MiB,
          f"example 3: reserved {stat(configuration, 'reserved_bytes.all.peak')}, expected 140 MiB")
    check(stat(configuration, "num_device_alloc") == 7,
          f"example 3: {stat(configuration, 'num_device_alloc')} maps, expected the 7 of the "
          "16 MiB requests and none for the 32 MiB ones")
    check(blocks[:4] == [(i * 32 * MiB, 32 * MiB, "active_allocated") for i in range(4)],
          f"example 3: blocks {blocks}")
    # 4: 4 x 16, free #0 and #2: the largest free block is 16, so a 32 maps
    # new pages at the segment's end.
    configuration, blocks = expandable_run(tool, workdir, "example_4", example_4_trace())
    check(stat(configuration, "reserved_bytes.all.peak") == 100 * MiB,
          f"example 4: reserved {stat(configuration, 'reserved_bytes.all.peak')}, expected 100 MiB")
    check((64 * MiB, 32 * MiB, "active_allocated") in blocks,
          f"example 4: blocks {blocks}, expected the 32 MiB block after the last 16")
    check(stat(configuration, "num_device_alloc") == 5, "example 4: expected 4 + 1 maps")
    # 5: alloc 40, free, alloc 60: the same pointer, reserved 60.
    trace = CsvTrace().allocate(base, 40 * MiB).free(base, 40 * MiB).allocate(base, 60 * MiB)
    configuration, blocks = expandable_run(tool, workdir, "example_5", trace)
    check(blocks == [(0, 60 * MiB, "active_allocated")],
          f"example 5: blocks {blocks}, expected the 60 MiB block where the 40 was")
    check(stat(configuration, "reserved_bytes.all.peak") == 60 * MiB,
          f"example 5: reserved {stat(configuration, 'reserved_bytes.all.peak')}, expected 60 MiB")
    return 0


def case_variable_shape(tool, workdir, _traces):
    """The workload expandable segments are for: sequence lengths that change
    every step. Expandable segments reserve less than plain ones and keep
    utilisation at 95 % or more; garbage collection under a memory fraction
    replays it too."""
    path = os.path.join(workdir, "variable_shape.csv")
    with open(path, "w", encoding="ascii") as out:
        out.write("\n".join(variable_shape_trace.generate(40, 1)) + "\n")
    report = replay_json(tool, path, "--device-memory", "3GiB", "--conf", "",
                         "--conf", "expandable_segments:True",
                         "--conf", "expandable_segments:True,"
                                   "per_process_memory_fraction:0.99,"
                                   "garbage_collection_threshold:0.5")
    native, expandable, collected = report["configurations"]
    check(all(c["completed"] for c in report["configurations"]), "a configuration failed")
    check(stat(expandable, "reserved_bytes.all.peak") < stat(native, "reserved_bytes.all.peak"),
          f"expandable reserved {stat(expandable, 'reserved_bytes.all.peak')}, plain "
          f"{stat(native, 'reserved_bytes.all.peak')}")
    check(expandable["utilisation"] >= 0.95,
          f"expandable utilisation {expandable['utilisation']}, expected at least 0.95")
    check(stat(collected, "allocated_bytes.all.peak") == stat(expandable, "allocated_bytes.all.peak"),
          "garbage collection changed what was allocated")
    return 0


def case_size_classes(tool, workdir, _traces):
    """expandable_segments_size_class_mb and expandable_segments_stitch: 512
    MiB tensors freed and allocated again while small ones come and go (the
    pattern of a recorded training step). In PyTorch's single class the
    small tensors settle in the freed 512 MiB slots and each new 512 MiB
    request grows the segment; with large requests in segments of their own
    (256 or 64 MiB and up) the slots are reused whole; with the defaults (one
    class, stitching, a handle per page) the small tensors pin only the pages
    they lie on, and the next 512 MiB growth moves the other pages of the
    freed slot in: no more than two classes reserve, for more handles."""
    trace = CsvTrace()
    big = [0x7F0000000000 + i * 0x40000000 for i in range(4)]
    small = [0x7F8000000000 + i * 0x1000000 for i in range(8)]
    trace.allocate(big[0], 512 * MiB).allocate(big[1], 512 * MiB)
    for step in range(3):
        trace.free(big[0], 512 * MiB).allocate(small[step], 8 * MiB)
        trace.allocate(big[0], 512 * MiB)
    path = trace.write(os.path.join(workdir, "size_classes.csv"))
    pytorch = "expandable_segments:True,expandable_segments_stitch:False," \
              "expandable_segments_handles:growth"
    report = replay_json(tool, path,
                         "--conf", pytorch,
                         "--conf", pytorch + ",expandable_segments_size_class_mb:256",
                         "--conf", pytorch + ",expandable_segments_size_class_mb:64",
                         "--conf", "expandable_segments:True")
    one_class, two_classes, threshold_64, defaults = report["configurations"]
    check(all(entry["completed"] for entry in report["configurations"]),
          "a configuration failed")
    check(stat(one_class, "reserved_bytes.all.peak") >= 3 * 512 * MiB,
          f"one class: reserved {stat(one_class, 'reserved_bytes.all.peak')}, expected a third "
          "slot because the small tensors cut the freed one")
    # Three 8 MiB tensors stay live: two growths of large_segment_size_mb.
    for name, result in (("256 MiB", two_classes), ("64 MiB", threshold_64)):
        check(stat(result, "reserved_bytes.all.peak") == 2 * 512 * MiB + 40 * MiB,
              f"{name}: reserved {stat(result, 'reserved_bytes.all.peak')}, "
              "expected two 512 MiB slots and two growths of 20 MiB")
    check(stat(defaults, "reserved_bytes.all.peak") <= 2 * 512 * MiB + 40 * MiB,
          f"defaults: reserved {stat(defaults, 'reserved_bytes.all.peak')}, expected no more "
          "than two classes")
    check(stat(defaults, "num_device_alloc") > stat(two_classes, "num_device_alloc"),
          "a handle per page costs more driver allocations")
    check(stat(two_classes, "allocated_bytes.all.peak") ==
          stat(one_class, "allocated_bytes.all.peak") ==
          stat(defaults, "allocated_bytes.all.peak"), "the policies changed what was allocated")
    return 0


def case_example_6(tool, workdir, _traces):
    """DESIGN.md section 6, example 6: a freed 2 MiB block (large pool) cannot
    serve a 0.5 MiB request (small pool), so reserved grows by a 2 MiB small
    segment; a second 2 MiB request reuses the block instead."""
    loophole = (CsvTrace().allocate(0x7F0000000000, 2 * MiB).free(0x7F0000000000, 2 * MiB)
                .allocate(0x7F1000000000, MiB // 2).write(os.path.join(workdir, "loophole.csv")))
    control = (CsvTrace().allocate(0x7F0000000000, 2 * MiB).free(0x7F0000000000, 2 * MiB)
               .allocate(0x7F0000000000, 2 * MiB).write(os.path.join(workdir, "control.csv")))
    result = replay_json(tool, loophole)["configurations"][0]
    check(stat(result, "reserved_bytes.all.peak") == 22 * MiB,
          f"peak reserved {stat(result, 'reserved_bytes.all.peak')}, expected 20 + 2 MiB")
    check(stat(result, "reserved_bytes.small_pool.peak") == 2 * MiB, "no small segment")
    check(stat(result, "allocated_bytes.all.peak") == 2 * MiB, "peak allocated should be 2 MiB")
    check(stat(result, "num_device_alloc") == 2, "expected two segments")
    result = replay_json(tool, control)["configurations"][0]
    check(stat(result, "reserved_bytes.all.peak") == 20 * MiB, "the 2 MiB block was not reused")
    check(stat(result, "num_device_alloc") == 1, "the control needs one segment")


def case_csv_errors(tool, workdir, _traces):
    path = os.path.join(workdir, "bad.csv")
    prefix = f"gpucache replay: {path}: "
    write_text(path, "Thread,Time,Action,Pointer,Bytes,Stream\n")
    expect_error(tool, path, prefix + "line 1: header is 'Thread,Time,Action,Pointer,Bytes,Stream' "
                 "(expected 'Thread,Time,Action,Pointer,Size,Stream')")
    write_text(path, HEADER + "\n1,10:00:00.0,allocate,0x1000,512,0x0\n1,10:00:00.0,reuse,0x1000,512,0x0\n")
    expect_error(tool, path, prefix + "line 3: unknown action 'reuse' (expected allocate, free, "
                 "deallocate or allocate failure)")
    write_text(path, HEADER + "\n1,10:00:00.0,allocate,0x1000,-512,0x0\n")
    expect_error(tool, path, prefix + "line 2: Size '-512' is not a number of bytes (expected a "
                 "decimal integer)")
    CsvTrace().allocate(0x1000, 512).allocate(0x2000, 512).allocate(0x1000, 1024).write(path)
    expect_error(tool, path, prefix + "line 4: allocation at 0x1000, which is still live "
                 "(allocated at line 2)")


def case_csv_preexisting(tool, workdir, _traces):
    """A free of a pointer the log never allocated: the allocation predates
    the log, so it is made first and counts towards the peaks."""
    path = (CsvTrace().allocate(0x7F0000000000, 16 * MiB).free(0x7E0000000000, 32 * MiB)
            .free(0x7F0000000000, 16 * MiB).write(os.path.join(workdir, "preexisting.csv")))
    report = replay_json(tool, path)
    check(report["inferred_allocations"] == 1, "the unknown pointer was not inferred")
    check(report["events"] == 4, "3 rows + 1 inferred allocation")
    result = report["configurations"][0]
    check(stat(result, "allocated_bytes.all.peak") == 48 * MiB, "both were live at once")
    table = run(tool, path).stdout
    check("1 allocation alive before the recording (inferred)" in table, table)


def case_oom(tool, workdir, _traces):
    path = example_1_trace(True).write(os.path.join(workdir, "example1.csv"))
    report = replay_json(tool, path, "--device-memory", "100MiB")
    result = report["configurations"][0]
    check(not result["completed"], "8 x 16 MiB cannot fit in 100 MiB")
    check(result["failed_request"] == {"event": 6, "position": "line 8", "action": "alloc",
                                       "inferred": False, "size": 16 * MiB, "stream": 0,
                                       "result": 2, "out_of_memory": True},
          f"failed request {result['failed_request']}")
    check(stat(result, "num_ooms") == 1, "one OOM")
    check(stat(result, "allocated_bytes.all.current") == 96 * MiB, "6 blocks live at the OOM")
    table = run(tool, "--device-memory", "100MiB", path)
    check(table.returncode == 0, "running out of memory is a result, not an error")
    lines = table.stdout.splitlines()
    check("completed           no, at event 6" in lines, table.stdout)
    check("default: out of memory at event 6 (line 8): 16777216 bytes (16.00 MiB) on stream 0x0, "
          "with 96.00 MiB allocated and 96.00 MiB reserved" in lines, table.stdout)
    check("         then 6 segments, 0 B free in the cache, the largest free block 0 B" in lines,
          table.stdout)
    check(len(result["segments"]) == 6 and all(
        [b["state"] for b in segment["blocks"]] == ["active_allocated"]
        for segment in result["segments"]), "the state at the OOM: six full 16 MiB segments")
    # With room for the 8 blocks, the 32 MiB requests succeed after the
    # retry releases the cached 16 MiB segments.
    result = replay_json(tool, path, "--device-memory", "200MiB")["configurations"][0]
    check(result["completed"], "200 MiB is enough after a retry")
    check(stat(result, "num_alloc_retries") >= 1, "expected the retry chain to free the cache")


def case_min_device(tool, workdir, _traces):
    path = example_1_trace(True).write(os.path.join(workdir, "example1.csv"))
    results = replay_json(tool, path, "--min-device", "--conf", "",
                          "--conf", "max_split_size_mb:20")["configurations"]
    for result in results:
        check(result["smallest_device_memory"] == 128 * MiB,
              f"{result['configuration']!r}: smallest device {result['smallest_device_memory']}, "
              "expected 128 MiB (8 x 16 MiB live at once)")
    table = run(tool, "--min-device", "--device-memory", "1GiB", path).stdout
    check("smallest device     128.00 MiB" in table.splitlines(), table)
    # A 2 MiB block kept alive pins its 20 MiB segment, so the 32 MiB request
    # needs 52 MiB although at most 34 MiB are live: starting below, the
    # search has to grow the device before it bisects.
    pinned = CsvTrace()
    pointers = [0x7F0000000000 + index * 2 * MiB for index in range(10)]
    for pointer in pointers:
        pinned.allocate(pointer, 2 * MiB)
    for pointer in pointers[1:]:
        pinned.free(pointer, 2 * MiB)
    pinned.allocate(0x7F1000000000, 32 * MiB)
    path = pinned.write(os.path.join(workdir, "pinned.csv"))
    report = replay_json(tool, path, "--min-device", "--device-memory", "34MiB")
    check(report["peak_live_bytes"] == 34 * MiB, "34 MiB live at most")
    check(not report["configurations"][0]["completed"], "34 MiB is not enough")
    check(report["configurations"][0]["smallest_device_memory"] == 52 * MiB,
          f"smallest device {report['configurations'][0]['smallest_device_memory']}, "
          "expected 20 + 32 MiB")
    check(report["configurations"][0]["largest_free_block"] == 18 * MiB,
          "the pinned segment keeps 18 MiB free")
    lines = run(tool, "--device-memory", "34MiB", path).stdout.splitlines()
    check("         then 1 segment, 18.00 MiB free in the cache, the largest free block "
          "18.00 MiB" in lines, "\n".join(lines))


def case_streams(tool, workdir, _traces):
    """Two streams in the trace are two stream handles: a block freed on one
    stream is not reused for a request on the other."""
    two = (CsvTrace().allocate(0x7F0000000000, 16 * MiB, stream=0).free(0x7F0000000000, 16 * MiB)
           .allocate(0x7F1000000000, 16 * MiB, stream=0x55D0C0A0)
           .write(os.path.join(workdir, "two_streams.csv")))
    one = (CsvTrace().allocate(0x7F0000000000, 16 * MiB).free(0x7F0000000000, 16 * MiB)
           .allocate(0x7F1000000000, 16 * MiB).write(os.path.join(workdir, "one_stream.csv")))
    report = replay_json(tool, two)
    check(report["streams"] == 2, "two streams expected")
    check(stat(report["configurations"][0], "reserved_bytes.all.peak") == 32 * MiB,
          "the second stream must get its own segment")
    report = replay_json(tool, one)
    check(stat(report["configurations"][0], "reserved_bytes.all.peak") == 16 * MiB,
          "one stream reuses its block")


def case_options(tool, workdir, _traces):
    path = example_1_trace(True).write(os.path.join(workdir, "example1.csv"))
    result = run(tool, "--help")
    check(result.returncode == 0 and result.stdout.startswith("usage: gpucache replay"), "help")
    result = run(tool, "--conf", "expandable_segments:maybe", path)
    check(result.returncode == 2, "a bad --conf exits 2")
    check(result.stderr.startswith("gpucache: --conf: ") and result.stderr.count("\n") == 1,
          f"a bad --conf prints the parser's one line: {result.stderr!r}")
    for conf, what in (("backend:cudaMallocAsync", "backend:cudaMallocAsync hands every request "
                        "to the driver's pool"),
                       ("passthrough:True", "passthrough:True hands every request to the driver")):
        expect_error(tool, path, f"gpucache replay: --conf '{conf}': {what}, which the replay "
                     "cannot simulate (it replays the caching allocator)", "--conf", conf)
    expect_error(tool, path, "gpucache replay: --device-memory: '80GB' is not a size (expected a "
                 "number with an optional unit B, KiB, MiB, GiB or TiB, such as 80GiB) "
                 "(see gpucache replay --help)", "--device-memory", "80GB")
    expect_error(tool, os.path.join(workdir, "absent.csv"),
                 f"gpucache replay: {os.path.join(workdir, 'absent.csv')}: cannot open: "
                 "No such file or directory")
    report = replay_json(tool, path, "--device-memory", "1.5GiB", "--conf", "",
                         "--conf", "max_split_size_mb:64")
    check(report["device_memory"] == 3 * 512 * MiB, "1.5GiB")
    check([c["configuration"] for c in report["configurations"]] == ["", "max_split_size_mb:64"],
          "one column per --conf, in order")
    header = run(tool, "--conf", "", "--conf", "max_split_size_mb:64", path).stdout.splitlines()
    check(header[4].split() == ["default", "max_split_size_mb:64"], f"column headers: {header[4]!r}")


# The weights' requested size is not a multiple of 512: the replay must
# request what the program asked for. The allocator rounds it to 30 MiB - 512
# in a 30 MiB segment, and a 512-byte remainder is too small to split off a
# large block, so the whole 30 MiB counts as allocated.
WEIGHTS_REQUESTED = 30 * MiB - 1000
WEIGHTS_ALLOCATED = 30 * MiB


def case_progress(tool, workdir, _traces):
    """Progress goes to stderr only when it is a terminal, and is erased
    before the results; stdout carries the table alone."""
    import pty
    path = example_1_trace(True).write(os.path.join(workdir, "example1.csv"))
    leader, follower = pty.openpty()
    try:
        result = subprocess.run([tool, "replay", "--conf", "", "--conf", "max_split_size_mb:64",
                                 path], stdout=subprocess.PIPE, stderr=follower, check=False)
        os.close(follower)
        follower = -1
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO once the terminal's other side is closed
                break
            if not chunk:
                break
            shown += chunk
    finally:
        if follower >= 0:
            os.close(follower)
        os.close(leader)
    check(result.returncode == 0, f"exit {result.returncode}")
    check(b"\r\x1b[Kgpucache replay: default 100% | max_split_size_mb:64 100%" in shown,
          f"no progress line for both configurations: {shown!r}")
    check(shown.endswith(b"\r\x1b[K"), f"progress line not erased: {shown!r}")
    check(result.stdout.startswith(b"trace   ") and b"\x1b" not in result.stdout,
          "stdout must hold the table only")


def case_svg(tool, workdir, _traces):
    """--svg draws each configuration's reserved and allocated curves; the
    image is well-formed XML and its curves follow the replay."""
    import xml.etree.ElementTree as ElementTree
    namespace = "{http://www.w3.org/2000/svg}"
    path = example_1_trace(True).write(os.path.join(workdir, "example1.csv"))
    image = os.path.join(workdir, "curves.svg")
    result = run(tool, "--svg", image, "--conf", "", "--conf", "max_split_size_mb:40", path)
    check(result.returncode == 0, f"exit {result.returncode}: {result.stderr}")
    root = ElementTree.parse(image).getroot()
    check(root.tag == namespace + "svg", f"root element {root.tag}")
    curves = {}
    for polyline in root.iter(namespace + "polyline"):
        title = polyline.find(namespace + "title").text
        heights = [float(point.split(",")[1]) for point in polyline.get("points").split()]
        curves[title] = heights
    check(sorted(curves) == ["default: allocated, peak 128.00 MiB",
                             "default: reserved, peak 256.00 MiB",
                             "max_split_size_mb:40: allocated, peak 128.00 MiB",
                             "max_split_size_mb:40: reserved, peak 256.00 MiB"],
          f"curves: {sorted(curves)}")
    reserved = curves["default: reserved, peak 256.00 MiB"]
    allocated = curves["default: allocated, peak 128.00 MiB"]
    # Smaller y is higher: reserved ends at its peak, above allocated's peak,
    # and allocated falls back to the axis when everything is freed.
    check(reserved[-1] == min(reserved) < min(allocated), "reserved must end at its peak")
    check(max(allocated) > allocated[len(allocated) // 2 - 1], "allocated must fall to 0")
    check(not list(root.iter(namespace + "path")), "no failure mark when all completed")
    # Rendered, nothing falls outside the picture, however long a label.
    long_label = ("expandable_segments:True,garbage_collection_threshold:0.6,"
                  "max_split_size_mb:256,roundup_power2_divisions:[256:1,512:2,>:8],"
                  "expandable_segments_size_class_mb:0")
    wide = os.path.join(workdir, "wide.svg")
    result = run(tool, "--svg", wide, "--conf", "", "--conf", long_label, path)
    check(result.returncode == 0, f"exit {result.returncode}: {result.stderr}")
    fits = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "..", "report",
                                                        "check_svg_fits.py"), wide],
                          capture_output=True, text=True)
    check(fits.returncode == 0, f"the chart does not fit: {fits.stdout}{fits.stderr}")
    stopped = os.path.join(workdir, "stopped.svg")
    result = run(tool, "--svg", stopped, "--device-memory", "100MiB", path)
    marks = [mark.find(namespace + "title").text
             for mark in ElementTree.parse(stopped).getroot().iter(namespace + "path")]
    check(marks == ["default: stopped at event 6"], f"failure marks {marks}")
    unwritable = os.path.join(workdir, "absent", "curves.svg")
    expect_error(tool, path, f"gpucache: cannot write the chart to {unwritable}: No such file "
                 "or directory", "--svg", unwritable)


EXISTS = "the file exists (gpucache never overwrites a file; remove it or put %p in the path)"
LINK = "the path is a symbolic link (gpucache never follows one)"


def refused_paths(workdir, name):
    """An existing file, a symlink to an existing file and a dangling
    symlink, each with what must still be there afterwards."""
    folder = tempfile.mkdtemp(dir=workdir)
    existing = os.path.join(folder, name)
    with open(existing, "w") as out:
        out.write("mine")
    target = os.path.join(folder, "target")
    with open(target, "w") as out:
        out.write("theirs")
    linked = os.path.join(folder, "linked-" + name)
    os.symlink(target, linked)
    dangling = os.path.join(folder, "dangling-" + name)
    os.symlink(os.path.join(folder, "nowhere"), dangling)
    return [(existing, EXISTS, lambda: open(existing).read() == "mine"),
            (linked, LINK, lambda: open(target).read() == "theirs"),
            (dangling, LINK, lambda: not os.path.exists(os.path.join(folder, "nowhere")))]


def case_output_files(tool, workdir, _traces):
    """--svg and --snapshot never write over an existing file nor through a
    symlink, and say so before replaying: one line naming the path."""
    path = example_1_trace(True).write(os.path.join(workdir, "example1.csv"))
    for option, what, name in (("--svg", "chart", "curves.svg"),
                               ("--snapshot", "snapshot", "final.pickle")):
        for target, reason, untouched in refused_paths(workdir, name):
            expect_error(tool, path, f"gpucache: cannot write the {what} to {target}: {reason}",
                         option, target)
            check(untouched(), f"{option} {target}: overwritten")
    # With several configurations every FILE-N.ext is checked before the
    # first replay: the second one existing stops everything, the first is
    # not written.
    for target, reason, untouched in refused_paths(workdir, "final-2.json"):
        wanted = target[:-len("-2.json")] + ".json"
        first = target[:-len("-2.json")] + "-1.json"
        expect_error(tool, path, f"gpucache: cannot write the snapshot to {target}: {reason}",
                     "--conf", "", "--conf", "max_split_size_mb:40", "--snapshot", wanted)
        check(untouched() and not os.path.exists(first), f"{target}: written")


def random_trace(path, events, seed):
    """RMM's random_allocations pattern on two streams, sizes up to 8 MiB."""
    import random
    generator = random.Random(seed)
    trace, live, next_pointer = CsvTrace(), [], 0x7F0000000000
    for _ in range(events):
        if live and (generator.random() > 0.73 or len(live) >= 200):
            pointer, size, stream = live.pop(generator.randrange(len(live)))
            trace.free(pointer, size, stream)
        else:
            size, stream = generator.randint(1, 8 * MiB), generator.choice((0, 0x55D0C0A0))
            trace.allocate(next_pointer, size, stream)
            live.append((next_pointer, size, stream))
            next_pointer += (size + 0xFFFFF) & ~0xFFFFF
    return trace.write(path)


def case_parallel(tool, workdir, _traces):
    """Configurations replayed side by side on several threads give exactly
    what each gives alone."""
    path = random_trace(os.path.join(workdir, "random.csv"), 5000, 7)
    confs = ["", "max_split_size_mb:40", "roundup_power2_divisions:4",
             "garbage_collection_threshold:0.5"]
    arguments = ["--min-device", "--device-memory", "2GiB"]
    together = replay_json(tool, path, *arguments,
                           *[word for conf in confs for word in ("--conf", conf)])
    for index, conf in enumerate(confs):
        alone = replay_json(tool, path, *arguments, "--conf", conf)["configurations"][0]
        both = together["configurations"][index]
        for result in (alone, both):
            del result["replay_seconds"]
            del result["stats"]["gpucache.driver_nanoseconds"]
        check(alone == both, f"{conf or 'default'}: results differ when run beside others")


def snapshot_scenario(free_completed=True, device=0):
    """A snapshot whose trace starts after two allocations were made: one
    freed during the trace (a free without alloc) and one still alive at the
    end (only in the final state). Then DESIGN example 1's first order."""
    writer = SnapshotWriter(device=device, free_completed=free_completed)
    weights, early = 0x7F0000000000, 0x7F1000000000
    writer.free(early, 8 * MiB)
    small = [0x7F2000000000 + index * 16 * MiB for index in range(8)]
    for pointer in small:
        writer.alloc(pointer, 16 * MiB)
    for pointer in small:
        writer.free(pointer, 16 * MiB)
    large = [0x7F3000000000 + index * 32 * MiB for index in range(4)]
    for pointer in large:
        writer.segment_alloc(pointer, 32 * MiB)
        writer.alloc(pointer, 32 * MiB)
    writer.segment(weights, [(30 * MiB, "active_allocated", WEIGHTS_REQUESTED)])
    writer.segment(early, [(20 * MiB, "inactive", 8 * MiB)])
    for pointer in small:
        writer.segment(pointer, [(16 * MiB, "inactive", 16 * MiB)])
    for pointer in large:
        writer.segment(pointer, [(32 * MiB, "active_allocated", 32 * MiB)])
    return writer


def check_snapshot_result(report, label):
    # Inferred first, by address: the weights (a 30 MiB segment) and the
    # early 8 MiB block (a 20 MiB segment). Its free leaves the 20 MiB free;
    # the first 16 MiB request splits it, 7 more need segments; after the
    # frees no cached block fits 32 MiB, so 4 more segments.
    check(report["inferred_allocations"] == 2, f"{label}: inferred {report['inferred_allocations']}")
    check(report["allocations"] == 12 and report["frees"] == 9, f"{label}: counts {report}")
    result = report["configurations"][0]
    check(result["completed"], f"{label}: did not complete")
    expected = {
        "allocated_bytes.all.peak": WEIGHTS_ALLOCATED + 128 * MiB,
        "requested_bytes.all.peak": WEIGHTS_REQUESTED + 128 * MiB,
        "reserved_bytes.all.peak": (30 + 20 + 7 * 16 + 4 * 32) * MiB,
        "num_device_alloc": 13,
        "allocation.all.current": 5,
    }
    for name, value in expected.items():
        check(stat(result, name) == value, f"{label}: {name} is {stat(result, name)}, expected {value}")


def case_snapshot(tool, workdir, _traces):
    for protocol in (2, 3, 4, 5):
        path = os.path.join(workdir, f"snapshot_p{protocol}.pickle")
        snapshot_scenario().write(path, protocol)
        check_snapshot_result(replay_json(tool, path), f"protocol {protocol}")
    path = os.path.join(workdir, "snapshot.json")
    snapshot_scenario().write_json(path)
    check_snapshot_result(replay_json(tool, path), "JSON")
    # Recorded with skip_actions=['free_completed']: the frees are the
    # free_requested entries instead.
    path = os.path.join(workdir, "snapshot_requested_only.pickle")
    snapshot_scenario(free_completed=False).write(path, 4)
    check_snapshot_result(replay_json(tool, path), "free_requested only")
    # A second GPU: its trace is found without --device, and named with it.
    path = os.path.join(workdir, "snapshot_device1.pickle")
    snapshot_scenario(device=1).write(path, 4)
    report = replay_json(tool, path)
    check(report["device"] == 1, f"picked device {report['device']}, expected the one with entries")
    check_snapshot_result(report, "device 1")
    check_snapshot_result(replay_json(tool, path, "--device", "1"), "--device 1")
    empty = replay_json(tool, path, "--device", "0")
    check(empty["events"] == 0 and empty["configurations"][0]["completed"], "device 0 is empty")
    expect_error(tool, path, f"gpucache replay: {path}: device_traces: no trace for device 2 (the "
                 "snapshot has 2 devices)", "--device", "2")


def case_snapshot_errors(tool, workdir, _traces):
    path = os.path.join(workdir, "bad.pickle")
    prefix = f"gpucache replay: {path}: "
    writer = snapshot_scenario()
    del writer.entries[3]["addr"]
    writer.write(path, 4)
    expect_error(tool, path, prefix + "device_traces[0][3]: 'addr' is missing")
    writer = snapshot_scenario()
    writer.entries[2]["action"] = "relocate"
    writer.write(path, 2)
    expect_error(tool, path, prefix + "device_traces[0][2]: unknown action 'relocate' (expected "
                 "alloc, free_requested, free_completed, segment_alloc, segment_free, segment_map, "
                 "segment_unmap, oom, snapshot or annotate)")
    # The final state claims a block the trace freed: the two disagree.
    writer = snapshot_scenario()
    writer.segments[2]["blocks"][0]["state"] = "active_allocated"
    writer.write(path, 4)
    expect_error(tool, path, prefix + "segments[2].blocks[0]: block 0x7f2000000000 is allocated "
                 "in the final state, but device_traces[0][11] freed it and the trace never "
                 "allocated it again")
    with open(path, "wb") as out:
        out.write(b"\x80\x02}q\x00.")  # a valid pickle of {}
    expect_error(tool, path, prefix + "top level: 'device_traces' is missing")
    path = write_text(os.path.join(workdir, "bad.json"),
                      '{"device_traces": [[{"action": "alloc", "addr": 4096, "size": 512,}]]}')
    expect_error(tool, path, f"gpucache replay: {path}: byte 66: expected a string key in an "
                 "object")


def case_wide_integers(tool, workdir, _traces):
    """Integers of any size are accepted where the replay does not read them
    (a real snapshot's frame line is 2**64 - 1, a LONG1 of 9 bytes), and
    refused, with the position, in the fields it does read."""
    huge = [2 ** 64 - 1, -(2 ** 70), 10 ** 40, -1]
    snapshot = snapshot_scenario().snapshot()
    for index, entry in enumerate(snapshot["device_traces"][0]):
        entry["frames"] = [{"name": "f", "filename": "f.py", "line": huge[index % len(huge)]}]
    snapshot["segments"][0]["frames"] = [{"line": 2 ** 64 - 1}]
    path = os.path.join(workdir, "wide.pickle")
    data = pickle.dumps(snapshot, protocol=4)
    lengths = {len(argument) for opcode, argument, _ in pickletools.genops(data)
               if opcode.name == "LONG1" and isinstance(argument, int)
               for argument in [argument.to_bytes((argument.bit_length() + 8) // 8, "little",
                                                  signed=True)]}
    check(9 in lengths and max(lengths) > 9, f"the test pickle has LONG1 lengths {lengths}")
    with open(path, "wb") as out:
        out.write(data)
    check_snapshot_result(replay_json(tool, path), "huge frame lines (pickle)")
    path = os.path.join(workdir, "wide.json")
    with open(path, "w") as out:
        json.dump(snapshot, out)
    check_snapshot_result(replay_json(tool, path), "huge frame lines (JSON)")
    # Where the value matters it must fit: 'size' and 'addr' of a trace
    # entry, 'address' of a segment.
    for where, place, key in (("device_traces[0][3]", lambda s: s["device_traces"][0][3], "size"),
                              ("device_traces[0][4]", lambda s: s["device_traces"][0][4], "addr"),
                              ("segments[1]", lambda s: s["segments"][1], "address")):
        for value in (2 ** 64, -(2 ** 80)):
            broken = snapshot_scenario().snapshot()
            place(broken)[key] = value
            path = os.path.join(workdir, "too_wide.pickle")
            with open(path, "wb") as out:
                pickle.dump(broken, out, protocol=2)
            expect_error(tool, path, f"gpucache replay: {path}: {where}: '{key}' does not fit in "
                         "64 bits (expected an int from -2^63 to 2^63 - 1)")


def aliasing_pickle(segment_references, block_references):
    """A snapshot whose memo makes one segment dict stand for many, and its
    block list one block many times: pickle writes each object once and a
    BINGET for every further reference."""
    block = {"address": 0, "size": 512, "requested_size": 512, "state": "inactive", "frames": []}
    segment = {"device": 0, "address": 1 << 40, "total_size": 512 * block_references,
               "stream": 0, "segment_type": "small", "blocks": [block] * block_references}
    return pickle.dumps({"segments": [segment] * segment_references, "device_traces": [[]]},
                        protocol=4)


def case_memo_expansion(tool, workdir, _traces):
    """A 220 KB pickle that expands to 10**9 blocks through its memo is
    refused after a number of visits bounded by its size (the message names
    that number), not replayed for minutes."""
    data = aliasing_pickle(100000, 10000)
    check(200_000 < len(data) < 240_000, f"the aliasing pickle has {len(data)} bytes")
    path = os.path.join(workdir, "aliasing.pickle")
    with open(path, "wb") as out:
        out.write(data)
    limit = 4 * len(data)
    # Each segment and block is charged one visit, and one per key: the
    # refusal comes at the first block beyond the limit, not after 10**9.
    charged_per_segment = 1 + 6 + 10000 * (1 + 5)
    segment, rest = divmod(limit, charged_per_segment)
    block = (rest - 7) // 6
    result = subprocess.run([tool, "replay", path], capture_output=True, text=True, timeout=10,
                            check=False)
    check(result.returncode == 2 and result.stdout == "",
          f"exit {result.returncode}: {result.stderr!r}")
    check(result.stderr == f"gpucache replay: {path}: segments[{segment}].blocks[{block}]: the "
          f"snapshot expands to more than {limit} values (4 per byte of the file): its memo "
          "repeats the same segments, blocks or trace entries (expected each once)\n",
          f"stderr {result.stderr!r}")
    # A few repeats stay well within the bound and replay.
    path = os.path.join(workdir, "few.pickle")
    with open(path, "wb") as out:
        out.write(aliasing_pickle(3, 4))
    replay_json(tool, path)


def first_opcode_offset(data, names):
    for opcode, _argument, position in pickletools.genops(data):
        if opcode.name in names:
            return opcode.name, position
    raise Failure(f"no {names} in the test pickle")


def case_pickle_refusal(tool, workdir, _traces):
    """Snapshots holding objects (which a general unpickler would import and
    call) are refused at the first such opcode, never executed."""
    path = os.path.join(workdir, "object.pickle")
    prefix = f"gpucache replay: {path}: "
    reason = ("refused: it would import or call Python code, and a memory snapshot holds only "
              "dicts, lists, tuples, numbers and strings")
    snapshot = snapshot_scenario().snapshot()
    snapshot["allocator_settings"] = os.stat_result((0,) * 10)
    for protocol, expected in ((2, "GLOBAL"), (4, "STACK_GLOBAL")):
        data = pickle.dumps(snapshot, protocol=protocol)
        name, offset = first_opcode_offset(data, {"GLOBAL", "STACK_GLOBAL"})
        check(name == expected, f"protocol {protocol} wrote {name}")
        with open(path, "wb") as out:
            out.write(data)
        code = 0x63 if name == "GLOBAL" else 0x93
        expect_error(tool, path, prefix + f"byte {offset}: opcode {name} (0x{code:02x}) {reason}")
    with open(path, "wb") as out:
        out.write(b"\x80\x02N)R.")  # REDUCE without any GLOBAL before it
    expect_error(tool, path, prefix + f"byte 4: opcode REDUCE (0x52) {reason}")


def case_corrupt_input(tool, workdir, _traces):
    """Truncated and bit-flipped snapshots and logs: every run ends with exit
    0 (still a valid trace) or 2 and one line naming the problem, never a
    crash. Fixed seed, so a failure reproduces."""
    import random
    generator = random.Random(20261130)
    path = os.path.join(workdir, "corrupt")
    originals = [pickle.dumps(snapshot_scenario().snapshot(), protocol=protocol)
                 for protocol in (2, 4)]
    originals.append(json.dumps(snapshot_scenario().snapshot()).encode("utf-8"))
    originals.append("\n".join(example_1_trace(True).rows).encode("ascii") + b"\n")
    for attempt in range(320):
        data = bytearray(originals[attempt % len(originals)])
        if attempt % 2:
            del data[generator.randrange(1, len(data)):]
        else:
            for _ in range(generator.randrange(1, 4)):
                data[generator.randrange(len(data))] = generator.randrange(256)
        with open(path, "wb") as out:
            out.write(data)
        result = subprocess.run([tool, "replay", "--json", path], capture_output=True,
                                check=False)
        check(result.returncode in (0, 2),
              f"attempt {attempt}: exit {result.returncode}: {result.stderr[-400:]!r}")
        if result.returncode == 2:
            check(result.stdout == b"" and result.stderr.count(b"\n") == 1 and
                  result.stderr.startswith(f"gpucache replay: {path}: ".encode()),
                  f"attempt {attempt}: not one line: {result.stderr[:400]!r}")
            check(all(32 <= byte < 127 for byte in result.stderr[:-1]),
                  f"attempt {attempt}: unprintable bytes in {result.stderr!r}")


class RestrictedUnpickler(pickle.Unpickler):
    """Loads only data: never imports anything from a third-party file."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}")


def recording_start(snapshot, device):
    """The state PyTorch's allocator was in when the recording began: the
    final segments minus those the trace created, and the blocks live then
    (the final ones, less what the trace allocated, plus what it freed
    without allocating), found by walking the trace backwards."""
    trace = snapshot["device_traces"][device]
    segments = [s for s in snapshot["segments"] if s["device"] == device]
    live = {}
    for segment in segments:
        address = segment["address"]
        for block in segment["blocks"]:
            if block["state"] != "inactive":
                live[address] = block["size"]
            address += block["size"]
    created = 0
    for entry in reversed(trace):
        if entry["action"] == "alloc":
            live.pop(entry["addr"], None)
        elif entry["action"] == "free_completed":
            live[entry["addr"]] = entry["size"]
        elif entry["action"] in ("segment_alloc", "segment_map"):
            created += entry["size"]
    return sum(s["total_size"] for s in segments) - created, sum(live.values())


def allocated_requests(segments):
    return sorted(b["requested_size"] for s in segments for b in s["blocks"]
                  if b["state"] == "active_allocated")


def case_shared_traces(tool, _workdir, traces):
    folder = os.path.join(traces, "pytorch-snapshots")
    if not os.path.isdir(folder):
        print(f"skipped: no shared traces at {folder}")
        return SKIP
    names = sorted(name for name in os.listdir(folder) if name.endswith(".pickle"))
    check(names, f"no .pickle files in {folder}")
    for name in names:
        path = os.path.join(folder, name)
        with open(path, "rb") as source:
            snapshot = RestrictedUnpickler(source).load()
        # The replay's first column runs with the configuration PyTorch
        # recorded under, so its figures are comparable with PyTorch's.
        settings = snapshot.get("allocator_settings", {})
        recorded_conf = settings.get("PYTORCH_CUDA_ALLOC_CONF", "")
        check(not settings.get("expandable_segments", False) or "expandable_segments:True"
              in recorded_conf.replace(" ", ""),
              f"{name}: recorded with expandable segments set outside PYTORCH_CUDA_ALLOC_CONF")
        report = replay_json(tool, path, "--conf", recorded_conf,
                             "--conf", "expandable_segments:True")
        check(report["events"] > 0, f"{name}: no events")
        default = report["configurations"][0]
        check(all(c["completed"] for c in report["configurations"]), f"{name}: did not complete")
        device = report["device"]
        segments = [s for s in snapshot["segments"] if s["device"] == device]
        total = sum(s["total_size"] for s in segments)
        check(report["peak_live_bytes"] <= stat(default, "allocated_bytes.all.peak"),
              f"{name}: rounded peak below requested peak")
        # Whatever came before the recording, the blocks live at its end are
        # the trace's and the inferred ones: the same requests as PyTorch's.
        check(allocated_requests(default["segments"]) == allocated_requests(segments),
              f"{name}: the final allocated blocks differ from PyTorch's")
        reserved_at_start, live_at_start = recording_start(snapshot, device)
        figures = (f"{name}: {report['events']} events, {report['inferred_allocations']} "
                   f"inferred; PyTorch {len(segments)} segments, {total} bytes "
                   f"({reserved_at_start} reserved and {live_at_start} live when the "
                   "recording began); replay " +
                   ", ".join(f"{c['configuration'] or 'default'}: "
                             f"{stat(c, 'num_device_alloc')} segments, peak reserved "
                             f"{stat(c, 'reserved_bytes.all.peak')}, peak allocated "
                             f"{stat(c, 'allocated_bytes.all.peak')}"
                             for c in report["configurations"]))
        print(figures)
        if reserved_at_start > 0 or report["inferred_allocations"] > 0:
            # PyTorch's segments are the product of a history the trace does
            # not hold (the segments existed, partly free, when the recording
            # began, with 14-39 % of it free on the shared snapshots), so a
            # replay from an empty device cannot be required to end with
            # them; the counts are printed above, not compared.
            check(stat(default, "reserved_bytes.all.peak") >= live_at_start,
                  f"{name}: peak reserved below the bytes live when the recording began")
            continue
        # The trace holds the allocator's whole life (every segment's
        # creation, no earlier allocation), so the replay must end exactly
        # where PyTorch did: same segments, every block where PyTorch put it.
        check(stat(default, "num_device_alloc") == len(segments),
              f"{name}: {stat(default, 'num_device_alloc')} segments, PyTorch had {len(segments)}")
        check(stat(default, "reserved_bytes.all.peak") == total,
              f"{name}: peak reserved {stat(default, 'reserved_bytes.all.peak')}, PyTorch "
              f"reserved {total}")

        def layout(segment_list):
            return sorted((s["total_size"], s["segment_type"],
                           [(b["size"], b["state"]) for b in s["blocks"]])
                          for s in segment_list)
        check(layout(default["segments"]) == layout(segments),
              f"{name}: final blocks differ from PyTorch's")
    return 0


CASES = {
    "unmodelled": case_unmodelled,
    "example-1": case_example_1,
    "expandable-examples": case_expandable_examples,
    "variable-shape": case_variable_shape,
    "size-classes": case_size_classes,
    "example-6": case_example_6,
    "csv-errors": case_csv_errors,
    "csv-preexisting": case_csv_preexisting,
    "oom": case_oom,
    "min-device": case_min_device,
    "streams": case_streams,
    "options": case_options,
    "progress": case_progress,
    "parallel": case_parallel,
    "svg": case_svg,
    "snapshot": case_snapshot,
    "snapshot-errors": case_snapshot_errors,
    "pickle-refusal": case_pickle_refusal,
    "corrupt-input": case_corrupt_input,
    "shared-traces": case_shared_traces,
    "output-files": case_output_files,
    "wide-integers": case_wide_integers,
    "memo-expansion": case_memo_expansion,
}


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in CASES:
        print(f"usage: {sys.argv[0]} {{{','.join(CASES)}}} GPUCACHE [TRACES_DIR]", file=sys.stderr)
        return 2
    case, tool = sys.argv[1], sys.argv[2]
    traces = sys.argv[3] if len(sys.argv) > 3 else ""
    with tempfile.TemporaryDirectory(prefix="gpucache-replay-") as workdir:
        try:
            return CASES[case](tool, workdir, traces) or 0
        except Failure as failure:
            print(f"FAIL {case}: {failure}", file=sys.stderr)
            return 1


if __name__ == "__main__":
    sys.exit(main())
