#!/usr/bin/env python3
"""Call stacks in snapshots, through the live library: a snapshot of
allocation_stacks names, for its largest blocks, the program's functions
(alloc_weights for the 8 MiB blocks, alloc_activations for the 1 MiB ones)
with the source line of each cudaMalloc call, and its trace entries carry
the same frames; a stripped copy of the program gives module+offset frames
for its own code; stacks:0 records no frames.
With the training_loop sample as a second argument, its snapshot's largest
allocations name its own main and the line of their cudaMalloc call.
usage: check_allocation_stacks.py PROGRAM [TRAINING_LOOP [CPP_PROGRAM]] (GPUCACHE_TEST_PRELOAD names
the library)"""
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile

program = sys.argv[1]
work = tempfile.mkdtemp(prefix="gpucache-stacks-")
# Only the CUDA programs run under the library: the script, strip and the
# replay stay outside it.
program_env = dict(os.environ, LD_PRELOAD=os.environ["GPUCACHE_TEST_PRELOAD"])


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def snapshot_of(binary, configuration, name, arguments=()):
    path = os.path.join(work, name)
    env = dict(program_env, GPUCACHE_ALLOC_CONF=f"snapshot:{path}" +
               (f",{configuration}" if configuration else ""))
    done = subprocess.run([binary, *arguments], env=env, capture_output=True, text=True,
                          timeout=120)
    if done.returncode != 0:
        fail(f"{binary} '{configuration}': exit {done.returncode}\n{done.stdout}{done.stderr}")
    lines = dict(re.findall(r"(\w+_line)=(\d+)", done.stdout))
    return json.load(open(path)), {key: int(value) for key, value in lines.items()}


def live_blocks(snapshot):
    return [block for segment in snapshot["segments"] for block in segment["blocks"]
            if block["state"] == "active_allocated"]


def first_program_frame(frames, names):
    return next((frame for frame in frames if frame["name"] in names), None)


snapshot, lines = snapshot_of(program, "", "snapshot.json")
expected = {8 << 20: ("alloc_weights", lines["weights_line"]),
            1 << 20: ("alloc_activations", lines["activations_line"])}
blocks = live_blocks(snapshot)
if len(blocks) != 20:
    fail(f"{len(blocks)} live blocks, expected 20")
def check_blocks(blocks, where):
    for block in blocks:
        function, line = expected[block["size"]]
        frame = first_program_frame(block["frames"], {"alloc_weights", "alloc_activations"})
        if not frame or frame["name"] != function or frame["line"] != line or \
                not frame["filename"].endswith("allocation_stacks.c"):
            fail(f"{where}: a {block['size']}-byte block's frames do not name {function} at line "
                 f"{line}: {block['frames'][:4]}")
        if any(f["name"].startswith("gpucache_") or
               (re.search(r"(^|/)(interpose|allocator|report)/[^/]+\.c$", f["filename"]) and
                "tests/" not in f["filename"])
               for f in block["frames"]):
            fail(f"{where}: the library's own frames are in the stack: {block['frames']}")
        if not any(frame["name"] == "main" for frame in block["frames"]):
            fail(f"{where}: main is not in the stack: {block['frames']}")


check_blocks(blocks, "at exit")

# The pickle encoding carries the same frames.
pickled = os.path.join(work, "snapshot.pickle")
subprocess.run([program], env=dict(program_env, GPUCACHE_ALLOC_CONF=f"snapshot:{pickled}"),
               capture_output=True, timeout=120, check=True)
with open(pickled, "rb") as stream:
    check_blocks(live_blocks(pickle.load(stream)), "in the pickle")
allocs = [e for e in snapshot["device_traces"][0] if e["action"] == "alloc"]
if len(allocs) != 20 or not all(first_program_frame(e["frames"], {"alloc_weights",
                                                                  "alloc_activations"})
                                 for e in allocs):
    fail("the trace's alloc entries do not carry the program's frames")
print("ok: 20 live blocks and their alloc entries name alloc_weights / alloc_activations "
      f"at lines {lines['weights_line']} / {lines['activations_line']}")

# The snapshot at an out-of-memory failure shows what was alive, and who
# allocated it.
snapshot_of(program, "", "oom.json", ["oom"])
oom = json.load(open(os.path.join(work, "oom-oom-1.json")))
blocks = live_blocks(oom)
if len(blocks) != 20:
    fail(f"the out-of-memory snapshot holds {len(blocks)} live blocks, expected 20")
check_blocks(blocks, "at the out of memory")
print("ok: the out-of-memory snapshot names who allocated each live block")

# The library's own trace: the same stacks, by id, with their frames after
# the events; and it still replays.
trace = os.path.join(work, "trace.txt")
done = subprocess.run([program], env=dict(program_env, GPUCACHE_ALLOC_CONF=f"trace:{trace}"),
                      capture_output=True, text=True, timeout=120)
text = open(trace).read().splitlines()
events = [line.split() for line in text[1:] if not line.startswith(("stack ", "frame\t"))]
alloc_stacks = {fields[8] for fields in events if fields[1] == "a"}
stacks, current = {}, None
for line in text:
    if line.startswith("stack "):
        current = line.split()[1]
        stacks[current] = []
    elif line.startswith("frame\t"):
        stacks[current].append(line.split("\t")[1])
if "0" in alloc_stacks or not alloc_stacks <= set(stacks) or \
        not all({"alloc_weights", "alloc_activations"} & set(stacks[s]) for s in alloc_stacks):
    fail(f"the trace's alloc lines do not name stacks with the program's functions: "
         f"{sorted(alloc_stacks)} {stacks}")
gpucache = os.environ.get("GPUCACHE_TEST_GPUCACHE")
if gpucache:
    replayed = subprocess.run([gpucache, "replay", trace], capture_output=True, text=True)
    if replayed.returncode != 0:
        fail(f"the trace with stacks does not replay: {replayed.stdout}{replayed.stderr}")
print(f"ok: the trace names {len(alloc_stacks)} stacks for its allocations, with their frames")

stripped = os.path.join(work, "allocation_stacks_stripped")
subprocess.run(["strip", "-o", stripped, program], check=True)
snapshot, _ = snapshot_of(stripped, "", "stripped.json")
frames = live_blocks(snapshot)[0]["frames"]
own = [f for f in frames if f["name"].startswith("allocation_stacks_stripped+0x")]
if not own or any(f["line"] != 0 for f in own):
    fail(f"a stripped program's frames are not module+offset: {frames}")
print(f"ok: a stripped program gives {own[0]['name']}-style frames")

snapshot, _ = snapshot_of(program, "stacks:0", "off.json")
if any(block["frames"] for block in live_blocks(snapshot)) or \
        any(e["frames"] for e in snapshot["device_traces"][0]):
    fail("stacks:0 still records frames")
print("ok: stacks:0 records no frames")
if len(sys.argv) > 2:
    sample = sys.argv[2]
    snapshot, _ = snapshot_of(sample, "", "sample.json", ["20"])
    allocs = [e for e in snapshot["device_traces"][0] if e["action"] == "alloc"]
    largest = sorted(allocs, key=lambda e: -e["size"])[:10]
    source = open(os.path.join(os.path.dirname(__file__), "..", "..", "samples",
                               "training_loop.c")).read().splitlines()
    for entry in largest:
        frame = first_program_frame(entry["frames"], {"main"})
        if not frame or not frame["filename"].endswith("training_loop.c") or \
                "cudaMalloc" not in source[frame["line"] - 1]:
            fail(f"a {entry['size']}-byte allocation of training_loop does not name its "
                 f"cudaMalloc line in main: {entry['frames'][:3]}")
    lines = sorted({first_program_frame(e["frames"], {"main"})["line"] for e in largest})
    print(f"ok: training_loop's 10 largest allocations name main at training_loop.c lines {lines}")
if len(sys.argv) > 3:
    snapshot, lines = snapshot_of(sys.argv[3], "", "cpp.json")
    member = "model::Layer::allocate(unsigned long)"
    blocks = live_blocks(snapshot)
    if len(blocks) != 3:
        fail(f"the C++ program's snapshot holds {len(blocks)} live blocks, expected 3")
    for block in blocks:
        frame = first_program_frame(block["frames"], {member})
        if not frame or not frame["filename"].endswith("allocation_stacks_cpp.cpp") or \
                frame["line"] != lines["member_line"]:
            fail(f"a C++ allocation does not name {member} at line {lines['member_line']}: "
                 f"{block['frames'][:3]}")
    print(f"ok: C++ frames are demangled: {member} at line {lines['member_line']}")
shutil.rmtree(work)
