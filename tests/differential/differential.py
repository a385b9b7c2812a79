#!/usr/bin/env python3
"""Seeded differential testing of libgpucache.so against the simulated driver.

A case is a CUDA program written as an operation list (the format the C
interpreter reads; README.md in this folder). The generator only writes
programs that are correct by CUDA's ordering rules: a happens-before tracker
(vector clocks over streams, events and host threads) knows, for every
buffer, which stream operations touched it and whether the stream or host
about to use it is ordered after them, and inserts the event record/wait or
synchronisation CUDA requires where it is not. The same tracker validates a
list read from a file, so the shrinker only ever tries correct programs.

Each case runs natively and under the library in every configuration of
CONFIGURATIONS; it passes when every run prints the same results (outside
names tainted by an out-of-memory failure), exits with the same status,
reports no race, and leaves the same device memory at exit.

  differential.py generate --seed N            print case N
  differential.py run --seeds A:B [--hours H]  run seeds, shrink failures
  differential.py replay FILE|DIR...           run saved cases
  differential.py shrink FILE --conf CONF      minimise a failing case
"""

import argparse
import concurrent.futures
import json
import os
import random
import subprocess
import sys
import tempfile
import time

CONFIGURATIONS = [
    "",
    "expandable_segments:True",
    "reuse:conservative",
    "backend:cudaMallocAsync",
    "garbage_collection_threshold:0.6,per_process_memory_fraction:0.5",
    "roundup_power2_divisions:4",
]

# cudaErrorMemoryAllocation and CUDA_ERROR_OUT_OF_MEMORY share the value 2.
OUT_OF_MEMORY = 2
ALLOCATIONS = ("malloc", "malloc_async", "cu_alloc")
SPECIAL_STREAMS = ("legacy0", "legacy", "pts")


class InvalidProgram(Exception):
    """The list breaks CUDA's rules or names an object it may not use."""


# ---------------------------------------------------------------- tracker

def joined(clock, other):
    result = dict(clock)
    for key, value in other.items():
        if value > result.get(key, 0):
            result[key] = value
    return result


def ordered_before(point, clock):
    """True when stream operation `point` (stream key, number) happens before
    whatever holds `clock`."""
    return point is None or clock.get(point[0], 0) >= point[1]


class Stream:
    def __init__(self, key, owner):
        self.key = key
        self.owner = owner
        self.clock = {}
        self.count = 0
        self.alive = True


class Buffer:
    def __init__(self, size, how, owner):
        self.size = size
        self.how = how
        self.owner = owner
        self.filled = False
        self.last_write = None
        self.reads = []


class Tracker:
    """CUDA's happens-before relation for one case, built operation by
    operation. `requirements` says what must already be ordered before an
    operation; `apply` checks the operation against the objects' state and
    records its effect."""

    def __init__(self, busy_destroy=False):
        self.busy_destroy = busy_destroy
        self.streams = {}       # key -> Stream; created streams are keyed by name
        self.events = {}        # name -> [owner, clock or None]
        self.buffers = {}       # name -> Buffer (live ones only)
        self.read_backs = {}    # name -> [owner, point, checksummed]
        self.host = {}          # thread -> clock
        self.phase = -1
        self.enqueued_before_phase = {}
        self.thread_count = 0
        self.used_names = set()

    # -- phases and streams
    def start_phase(self, thread_count):
        everything = {}
        for clock in self.host.values():
            everything = joined(everything, clock)
        self.phase += 1
        self.thread_count = thread_count
        # Threads of a phase start after every thread of the last one ended.
        self.host = {t: dict(everything) for t in range(thread_count)}
        # All work enqueued so far: any cudaDeviceSynchronize of this phase
        # waits for it, whichever thread enqueued it.
        self.enqueued_before_phase = {}
        for stream in self.streams.values():
            self.enqueued_before_phase = joined(self.enqueued_before_phase, stream.clock)
        if thread_count == 1:
            # A lone thread may adopt every object: the joins order it after
            # every earlier thread. The legacy and per-thread streams stay
            # per-thread views.
            adopted = [s for s in self.streams.values() if isinstance(s.key, str)]
            for obj in adopted + list(self.buffers.values()):
                obj.owner = 0
            for event in self.events.values():
                event[0] = 0
            for read_back in self.read_backs.values():
                read_back[0] = 0

    def stream_key(self, thread, name):
        if name in ("legacy0", "legacy"):
            # Each thread sees the legacy stream through its own
            # operations: another thread's legacy work is never assumed.
            return ("legacy", thread)
        if name == "pts":
            return ("pts", self.phase, thread)
        return name

    def stream(self, thread, name, must_live=True):
        key = self.stream_key(thread, name)
        if key not in self.streams:
            if name not in SPECIAL_STREAMS:
                raise InvalidProgram(f"stream {name} was never created")
            self.streams[key] = Stream(key, thread)
        stream = self.streams[key]
        if must_live and not stream.alive:
            raise InvalidProgram(f"stream {name} was destroyed")
        if stream.owner != thread:
            raise InvalidProgram(f"stream {name} belongs to thread {stream.owner}")
        return stream

    def enqueue(self, thread, stream):
        """One more operation on `stream`; returns its point."""
        stream.count += 1
        stream.clock = joined(stream.clock, self.host[thread])
        stream.clock[stream.key] = stream.count
        return (stream.key, stream.count)

    def buffer(self, thread, name):
        buffer = self.buffers.get(name)
        if buffer is None:
            raise InvalidProgram(f"buffer {name} is not allocated")
        if buffer.owner != thread:
            raise InvalidProgram(f"buffer {name} belongs to thread {buffer.owner}")
        return buffer

    def check_range(self, buffer, name, offset, length):
        if offset < 0 or length < 1 or offset + length > buffer.size:
            raise InvalidProgram(f"range {offset}+{length} outside {name} ({buffer.size})")

    # -- what must be ordered before an operation
    def requirements(self, thread, op):
        """[(point, where)] that must hold before `op`: where is "host" or
        a stream key; raises InvalidProgram for a structurally bad op."""
        name, args = op[0], op[1:]
        needs = []

        def access(buffer_name, stream_name, writes):
            buffer = self.buffer(thread, buffer_name)
            if not buffer.filled and not writes:
                raise InvalidProgram(f"{buffer_name} read before it was filled")
            key = self.stream(thread, stream_name).key
            needs.append((buffer.last_write, key))
            if writes:
                needs.extend((read, key) for read in buffer.reads)

        if name in ("memset", "htod", "kernel_set"):
            buffer = self.buffer(thread, args[0])
            self.check_range(buffer, args[0], int(args[1]), int(args[2]))
            # A write covering the whole buffer is the fill that makes it
            # readable; a partial one needs a fill first.
            whole = int(args[1]) == 0 and int(args[2]) == buffer.size
            if not buffer.filled and not whole:
                raise InvalidProgram(f"{args[0]} partly written before it was filled")
            access(args[0], args[4], True)
        elif name in ("dtod", "kernel_copy"):
            if args[0] == args[2]:
                raise InvalidProgram(f"{name} within one buffer")
            self.check_range(self.buffer(thread, args[0]), args[0], int(args[1]), int(args[4]))
            self.check_range(self.buffer(thread, args[2]), args[2], int(args[3]), int(args[4]))
            if not self.buffer(thread, args[0]).filled:
                raise InvalidProgram(f"{args[0]} written by {name} before it was filled")
            access(args[2], args[5], False)
            access(args[0], args[5], True)
        elif name == "dtoh":
            self.check_range(self.buffer(thread, args[0]), args[0], int(args[1]), int(args[2]))
            access(args[0], args[3], False)
        elif name == "checksum":
            read_back = self.read_backs.get(args[0])
            if read_back is None or read_back[0] != thread or read_back[2]:
                raise InvalidProgram(f"checksum of {args[0]}: no such read-back of this thread")
            needs.append((read_back[1], "host"))
        elif name == "free_async":
            buffer = self.buffer(thread, args[0])
            if buffer.how != "malloc_async":
                raise InvalidProgram(f"free_async of {args[0]} from {buffer.how}")
            key = self.stream(thread, args[1]).key
            needs.append((buffer.last_write, key))
            needs.extend((read, key) for read in buffer.reads)
        return needs

    # -- effects
    def apply(self, thread, op):
        """Checks `op` against CUDA's rules and the objects' state, then
        records its effect; raises InvalidProgram."""
        for point, where in self.requirements(thread, op):
            clock = self.host[thread] if where == "host" else \
                joined(self.streams[where].clock, self.host[thread])
            if not ordered_before(point, clock):
                raise InvalidProgram(f"{' '.join(op)}: not ordered after {point}")
        name, args = op[0], op[1:]
        host = self.host[thread]

        def fresh(object_name):
            if object_name in self.used_names:
                raise InvalidProgram(f"{object_name} named twice")
            self.used_names.add(object_name)

        if name == "stream_create":
            fresh(args[0])
            self.streams[args[0]] = Stream(args[0], thread)
        elif name == "stream_destroy":
            if args[0] in SPECIAL_STREAMS:
                raise InvalidProgram(f"{args[0]} cannot be destroyed")
            stream = self.stream(thread, args[0])
            if not self.busy_destroy and not ordered_before((stream.key, stream.count), host):
                raise InvalidProgram(f"{args[0]} destroyed with work queued, "
                                     "but the case has no '# option busy-destroy'")
            stream.alive = False
        elif name == "stream_sync":
            self.host[thread] = joined(host, self.stream(thread, args[0]).clock)
        elif name == "stream_query":
            self.stream(thread, args[0])
        elif name == "stream_wait":
            stream = self.stream(thread, args[0])
            event = self.event(thread, args[1])
            if event[1] is not None:
                stream.clock = joined(stream.clock, event[1])
        elif name == "event_create":
            fresh(args[0])
            self.events[args[0]] = [thread, None]
        elif name == "event_destroy":
            self.event(thread, args[0])
            del self.events[args[0]]
        elif name == "event_record":
            event = self.event(thread, args[0])
            stream = self.stream(thread, args[1])
            self.enqueue(thread, stream)
            event[1] = dict(stream.clock)
        elif name == "event_sync":
            event = self.event(thread, args[0])
            if event[1] is not None:
                self.host[thread] = joined(host, event[1])
        elif name == "event_query":
            self.event(thread, args[0])
        elif name in ("device_sync", "ctx_sync"):
            # Among other threads, a thread knows only that its own work and
            # the work of earlier phases is done: the others' clocks may
            # include what they enqueue after this call.
            self.host[thread] = joined(host, self.enqueued_before_phase)
            for stream in self.streams.values():
                if self.thread_count == 1 or stream.owner == thread:
                    self.host[thread] = joined(self.host[thread], stream.clock)
        elif name == "device_reset":
            if self.thread_count != 1:
                raise InvalidProgram("device_reset in a phase of several threads")
            self.apply(thread, ("device_sync",))
            for stream in self.streams.values():
                if stream.key not in SPECIAL_STREAMS and not isinstance(stream.key, tuple):
                    stream.alive = False
            self.events.clear()
            self.buffers.clear()
            self.read_backs = {k: v for k, v in self.read_backs.items() if v[2]}
        elif name in ALLOCATIONS:
            fresh(args[0])
            size = int(args[1])
            if size < 1:
                raise InvalidProgram("empty allocation")
            buffer = Buffer(size, name, thread)
            if name == "malloc_async":
                # The allocation is a stream operation: other streams must be
                # ordered after it before they touch the memory.
                buffer.last_write = self.enqueue(thread, self.stream(thread, args[2]))
            self.buffers[args[0]] = buffer
        elif name in ("free", "cu_free"):
            buffer = self.buffer(thread, args[0])
            expected = {"free": ("malloc", "malloc_async"), "cu_free": ("cu_alloc",)}[name]
            if buffer.how not in expected:
                raise InvalidProgram(f"{name} of {args[0]} from {buffer.how}")
            # cudaFree and cuMemFree wait for work in flight on the memory,
            # so pending stream work is allowed here.
            del self.buffers[args[0]]
        elif name == "free_async":
            self.enqueue(thread, self.stream(thread, args[1]))
            del self.buffers[args[0]]
        elif name in ("memset", "htod", "kernel_set"):
            buffer = self.buffer(thread, args[0])
            buffer.last_write = self.enqueue(thread, self.stream(thread, args[4]))
            buffer.reads = []
            buffer.filled = True
        elif name in ("dtod", "kernel_copy"):
            point = self.enqueue(thread, self.stream(thread, args[5]))
            self.buffer(thread, args[2]).reads.append(point)
            target = self.buffer(thread, args[0])
            target.last_write = point
            target.reads = []
        elif name == "dtoh":
            fresh(args[4])
            point = self.enqueue(thread, self.stream(thread, args[3]))
            self.buffer(thread, args[0]).reads.append(point)
            self.read_backs[args[4]] = [thread, point, False]
        elif name == "checksum":
            self.read_backs[args[0]][2] = True
        elif name == "host_func":
            self.enqueue(thread, self.stream(thread, args[0]))
        else:
            raise InvalidProgram(f"unknown operation {name}")

    def event(self, thread, name):
        event = self.events.get(name)
        if event is None:
            raise InvalidProgram(f"event {name} does not exist")
        if event[0] != thread:
            raise InvalidProgram(f"event {name} belongs to thread {event[0]}")
        return event


# ---------------------------------------------------------------- case text

class Case:
    """Phases of per-thread operation lists plus the environment the case
    needs (a small device for out-of-memory cases)."""

    def __init__(self, phases, memory=None, comment="", busy_destroy=False):
        self.phases = phases    # [(thread_count, [(thread, op tuple)])]
        self.memory = memory
        self.comment = comment
        # Whether the case may destroy streams with work queued.
        self.busy_destroy = busy_destroy

    def text(self):
        lines = []
        if self.comment:
            lines.extend("# " + line for line in self.comment.splitlines())
        if self.memory:
            lines.append(f"# env GPUSIM_MEMORY={self.memory}")
        if self.busy_destroy:
            lines.append("# option busy-destroy")
        for thread_count, ops in self.phases:
            lines.append(f"phase {thread_count}")
            lines.extend(f"{thread} {' '.join(op)}" for thread, op in ops)
        return "\n".join(lines) + "\n"

    def operation_count(self):
        return sum(len(ops) for _, ops in self.phases)

    @staticmethod
    def parse(text):
        phases, memory, comment, busy_destroy = [], None, [], False
        for line in text.splitlines():
            stripped = line.strip()
            if stripped.startswith("# env GPUSIM_MEMORY="):
                memory = stripped.split("=", 1)[1]
            elif stripped == "# option busy-destroy":
                busy_destroy = True
            elif stripped.startswith("#"):
                comment.append(stripped[1:].strip())
                continue
            # As in the interpreter, "#" starts a comment anywhere on a line.
            stripped = stripped.split("#", 1)[0].strip()
            if stripped.startswith("phase "):
                phases.append((int(stripped.split()[1]), []))
            elif stripped:
                fields = stripped.split()
                phases[-1][1].append((int(fields[0]), tuple(fields[1:])))
        return Case(phases, memory, "\n".join(comment), busy_destroy)


def validate(case):
    """Raises InvalidProgram unless `case` is correct by CUDA's rules."""
    tracker = Tracker(case.busy_destroy)
    for thread_count, ops in case.phases:
        tracker.start_phase(thread_count)
        for thread, op in ops:
            if thread >= thread_count:
                raise InvalidProgram(f"thread {thread} in a phase of {thread_count}")
            tracker.apply(thread, op)
        for thread in range(thread_count):
            pts = tracker.streams.get(("pts", tracker.phase, thread))
            if pts and not ordered_before((pts.key, pts.count), tracker.host[thread]):
                raise InvalidProgram(f"thread {thread} ends phase {tracker.phase} "
                                     "with per-thread stream work unsynchronised")
    if tracker.buffers:
        raise InvalidProgram(f"buffers never freed: {sorted(tracker.buffers)}")


# ---------------------------------------------------------------- generator

SIZES = [512, 4096, 65536, 1 << 20, (2 << 20) + 512, 3 << 20, 8 << 20]
SIZE_WEIGHTS = [3, 3, 2, 4, 2, 3, 1]
SLEEPS_US = [2000, 10000, 30000]
MAX_SLEEPS = 8
# The most bytes a kernel_set or kernel_copy touches (one thread per byte).
KERNEL_BYTES = 1 << 16
# Destroying a stream with work still queued is correct CUDA (the work
# completes). Half the destructions do it; --no-busy-destroy synchronises
# every stream first. (Before the race detector kept a destroyed stream's
# clock, a later cudaDeviceSynchronize did not order the host after it:
# regressions/detector-destroyed-stream-device-sync.txt.)
BUSY_DESTROY = True
# The library's known bug (a block freed by cudaFreeAsync on the legacy
# stream is handed to cudaMalloc and used on another stream before the
# legacy stream's work is done) makes most cases fail while it is there;
# --no-legacy-free-async keeps such frees out to look past it.
LEGACY_FREE_ASYNC = True
# cudaDeviceReset phases; --no-reset leaves them out to look past the reset
# bugs in regressions/.
DEVICE_RESETS = True
# Host threads a phase may have; --single-thread sets 1 to look past the
# cross-thread synchronisation bug in regressions/.
THREAD_CHOICES = [1, 1, 2, 3]
# Whole-device synchronisations (cudaDeviceSynchronize, cuCtxSynchronize, a
# legacy-stream synchronize) while other threads run; --no-shared-sync
# keeps them to one-thread phases, to look past the bug where such a
# synchronize readies other threads' frees.
SHARED_SYNC = True


class Generator:
    def __init__(self, seed):
        self.random = random.Random(seed)
        self.seed = seed
        self.tracker = Tracker(BUSY_DESTROY)
        self.counters = {"s": 0, "e": 0, "b": 0, "r": 0}
        self.out = None
        self.sleeps = 0
        self.tight = self.random.random() < 0.25
        # On a small device 8 MiB buffers run it out of memory.
        self.memory = "40MiB" if self.tight else None

    def name(self, letter):
        self.counters[letter] += 1
        return f"{letter}{self.counters[letter]}"

    def emit(self, thread, *op):
        op = tuple(str(field) for field in op)
        self.tracker.apply(thread, op)
        self.out.append((thread, op))

    def own(self, collection, thread):
        return sorted(name for name, item in collection.items()
                      if (item.owner if hasattr(item, "owner") else item[0]) == thread)

    def live_streams(self, thread):
        return [name for name, stream in sorted(self.tracker.streams.items(), key=str)
                if isinstance(name, str) and stream.alive and stream.owner == thread]

    def pick_stream(self, thread):
        created = self.live_streams(thread)
        choices = created * 3 + ["legacy0", "legacy", "legacy", "pts"]
        return self.random.choice(choices)

    def event_for(self, thread):
        events = self.own(self.tracker.events, thread)
        if events and self.random.random() < 0.6:
            return self.random.choice(events)
        name = self.name("e")
        self.emit(thread, "event_create", name, self.random.choice([0, 1]))
        return name

    def order(self, thread, point, where):
        """Emits what makes stream point `point` happen before `where`
        ("host", or a stream name of `thread`)."""
        if point is None:
            return
        if where == "host":
            clock = self.tracker.host[thread]
        else:
            key = self.tracker.stream_key(thread, where)
            clock = joined(self.tracker.streams[key].clock, self.tracker.host[thread])
        if ordered_before(point, clock):
            return
        source = self.tracker.streams[point[0]]
        source_name = self.name_of(thread, source)
        choice = self.random.random()
        if not self.whole_device_sync_allowed() and source_name is not None:
            choice = max(choice, 0.1)
            if choice >= 0.85 and source_name.startswith("legacy"):
                choice = 0.8
        if source_name is None or choice < 0.1:
            self.emit(thread, "device_sync")
        elif where != "host" and choice < 0.75:
            event = self.event_for(thread)
            self.emit(thread, "event_record", event, source_name)
            if self.random.random() < 0.2:
                self.emit(thread, "event_query", event)
            self.emit(thread, "stream_wait", where, event)
        elif choice < 0.85:
            event = self.event_for(thread)
            self.emit(thread, "event_record", event, source_name)
            self.emit(thread, "event_sync", event)
        else:
            self.emit(thread, "stream_sync", source_name)

    def whole_device_sync_allowed(self):
        return SHARED_SYNC or self.tracker.thread_count == 1

    def name_of(self, thread, stream):
        """The name `thread` can use for `stream`, or None when it has none
        (destroyed, or another thread's view of a special stream)."""
        if not stream.alive or stream.owner != thread:
            return None
        if isinstance(stream.key, str):
            return stream.key
        if stream.key[0] == "legacy":
            return self.random.choice(["legacy0", "legacy"]) if stream.key[1] == thread else None
        if stream.key == ("pts", self.tracker.phase, thread):
            return "pts"
        return None

    def satisfy(self, thread, op):
        for point, where in self.tracker.requirements(thread, op):
            if where == "host":
                self.order(thread, point, "host")
            else:
                stream = self.tracker.streams[where]
                self.order(thread, point, self.name_of(thread, stream))

    def operation(self, thread, *op):
        op = tuple(str(field) for field in op)
        self.satisfy(thread, op)
        self.emit(thread, *op)

    def fill(self, thread, buffer_name, stream):
        size = self.tracker.buffers[buffer_name].size
        if size <= (1 << 20) and self.random.random() < 0.5:
            self.operation(thread, "htod", buffer_name, 0, size, self.random.randrange(256), stream)
        else:
            self.operation(thread, "memset", buffer_name, 0, size, self.random.randrange(256),
                           stream)

    def span(self, size):
        offset = self.random.randrange(0, size, 256) if size > 256 else 0
        length = self.random.randint(1, min(size - offset, 1 << 20))
        return offset, length

    def step(self, thread, pending_reads):
        tracker = self.tracker
        buffers = self.own(tracker.buffers, thread)
        streams = self.live_streams(thread)
        r = self.random.random()
        if r < 0.06 and len(streams) < 4:
            flag = self.random.choice(["blocking", "nonblocking", "nonblocking", "priority0",
                                       "priority-1", "nbpriority-2", "nbpriority0"])
            self.emit(thread, "stream_create", self.name("s"), flag)
        elif r < 0.08 and streams:
            stream = self.random.choice(streams)
            if not BUSY_DESTROY or self.random.random() < 0.5:
                self.emit(thread, "stream_sync", stream)
            self.emit(thread, "stream_destroy", stream)
        elif r < 0.26 or not buffers:
            how = self.random.choice(["malloc", "malloc", "malloc_async", "malloc_async",
                                      "cu_alloc"])
            size = self.random.choices(SIZES, SIZE_WEIGHTS)[0]
            name = self.name("b")
            stream = self.pick_stream(thread)
            if how == "malloc_async":
                self.emit(thread, how, name, size, stream)
            else:
                self.emit(thread, how, name, size)
            self.fill(thread, name, self.pick_stream(thread) if self.random.random() < 0.4
                      else stream)
        elif r < 0.40:
            name = self.random.choice(buffers)
            buffer = tracker.buffers[name]
            # Now and then check a read-back of the buffer first, so checksums
            # interleave with frees (cudaFree would wait for the read anyway).
            for read_back, buffer_name in list(pending_reads):
                if buffer_name == name and self.random.random() < 0.5:
                    self.checksum(thread, read_back, pending_reads)
            if buffer.how == "cu_alloc":
                self.emit(thread, "cu_free", name)
            elif buffer.how == "malloc_async" and self.random.random() < 0.8:
                stream = self.pick_stream(thread)
                while not LEGACY_FREE_ASYNC and stream.startswith("legacy"):
                    stream = self.pick_stream(thread)
                self.operation(thread, "free_async", name, stream)
            else:
                self.emit(thread, "free", name)
        elif r < 0.52:
            name = self.random.choice(buffers)
            offset, length = self.span(tracker.buffers[name].size)
            kind = self.random.choice(["memset", "htod", "kernel_set"])
            if kind == "kernel_set" and length > KERNEL_BYTES:
                # One thread per byte: megabytes would dominate the run.
                length = self.random.randint(1, KERNEL_BYTES)
            self.operation(thread, kind, name, offset, length, self.random.randrange(256),
                           self.pick_stream(thread))
        elif r < 0.60 and len(buffers) >= 2:
            target, source = self.random.sample(buffers, 2)
            kind = "kernel_copy" if self.random.random() < 0.35 else "dtod"
            length = self.random.randint(1, min(tracker.buffers[target].size,
                                                tracker.buffers[source].size,
                                                KERNEL_BYTES if kind == "kernel_copy" else 1 << 20))
            self.operation(thread, kind, target,
                           self.random.randint(0, tracker.buffers[target].size - length), source,
                           self.random.randint(0, tracker.buffers[source].size - length), length,
                           self.pick_stream(thread))
        elif r < 0.74:
            name = self.random.choice(buffers)
            offset, length = self.span(tracker.buffers[name].size)
            read_back = self.name("r")
            self.operation(thread, "dtoh", name, offset, length, self.pick_stream(thread),
                           read_back)
            pending_reads.append((read_back, name))
            if self.random.random() < 0.5:
                self.checksum(thread, read_back, pending_reads)
        elif r < 0.84:
            if self.sleeps < MAX_SLEEPS:
                self.sleeps += 1
                # Legacy-stream delays make later work on other streams run
                # while the legacy stream still holds memory.
                stream = self.random.choice([self.pick_stream(thread), "legacy0", "legacy"])
                self.emit(thread, "host_func", stream, self.random.choice(SLEEPS_US))
        elif r < 0.90 and pending_reads:
            self.checksum(thread, self.random.choice(pending_reads)[0], pending_reads)
        else:
            self.synchronise(thread)

    def synchronise(self, thread):
        streams = self.live_streams(thread) + ["legacy0", "legacy", "pts"]
        choice = self.random.randrange(6)
        if not self.whole_device_sync_allowed():
            choice = self.random.randrange(1, 6)
            if choice == 1:
                streams = self.live_streams(thread) + ["pts"]
        if choice == 0:
            # The runtime's and the driver's whole-device synchronize.
            self.emit(thread, self.random.choice(["device_sync", "device_sync", "ctx_sync"]))
        elif choice == 1:
            self.emit(thread, "stream_sync", self.random.choice(streams))
        elif choice == 2:
            self.emit(thread, "stream_query", self.random.choice(streams))
        else:
            event = self.event_for(thread)
            self.emit(thread, "event_record", event, self.random.choice(streams))
            follow = self.random.randrange(3)
            if follow == 0:
                self.emit(thread, "event_sync", event)
            elif follow == 1:
                self.emit(thread, "event_query", event)
            else:
                self.emit(thread, "stream_wait", self.random.choice(streams), event)

    def checksum(self, thread, read_back, pending_reads):
        self.operation(thread, "checksum", read_back)
        pending_reads[:] = [entry for entry in pending_reads if entry[0] != read_back]

    def end_thread(self, thread, pending_reads):
        for read_back, _ in list(pending_reads):
            self.checksum(thread, read_back, pending_reads)
        pts = self.tracker.streams.get(("pts", self.tracker.phase, thread))
        if pts and not ordered_before((pts.key, pts.count), self.tracker.host[thread]):
            self.emit(thread, "stream_sync", "pts")

    def phase(self, thread_count, steps):
        self.tracker.start_phase(thread_count)
        self.out = []
        for thread in range(thread_count):
            pending_reads = []
            for _ in range(self.random.choice([0, 1, 1, 2])):
                self.emit(thread, "stream_create", self.name("s"), self.random.choice(
                    ["blocking", "nonblocking", "nonblocking", "priority-1", "nbpriority0"]))
            for _ in range(steps):
                self.step(thread, pending_reads)
            self.end_thread(thread, pending_reads)
        return (thread_count, self.out)

    def cleanup(self):
        """The last phase: one thread frees everything, some of it while
        work may still be in flight (cudaFree waits for it)."""
        self.tracker.start_phase(1)
        self.out = []
        for name in sorted(self.tracker.buffers):
            how = self.tracker.buffers[name].how
            self.emit(0, "cu_free" if how == "cu_alloc" else "free", name)
        self.emit(0, "device_sync")
        for name in self.live_streams(0):
            self.emit(0, "stream_destroy", name)
        for name in sorted(self.tracker.events):
            self.emit(0, "event_destroy", name)
        return (1, self.out)

    def generate(self):
        phases = []
        for _ in range(self.random.randint(1, 4)):
            if self.random.random() < 0.08 and phases and DEVICE_RESETS:
                self.tracker.start_phase(1)
                self.out = []
                self.emit(0, "device_sync")
                self.emit(0, "device_reset")
                phases.append((1, self.out))
            threads = self.random.choice(THREAD_CHOICES)
            phases.append(self.phase(threads, self.random.randint(8, 30)))
        phases.append(self.cleanup())
        return Case(phases, self.memory, f"differential case, seed {self.seed}", BUSY_DESTROY)


def generate(seed):
    case = Generator(seed).generate()
    validate(case)  # the generator and the validator must agree
    return case


# ---------------------------------------------------------------- running

class Paths:
    def __init__(self, interpreter, library, timeout):
        self.interpreter = interpreter
        self.library = library
        self.timeout = timeout


def run_case(paths, case_file, memory, configuration):
    """Runs the case natively (configuration None) or under the library;
    returns a dict with the outcome."""
    with tempfile.TemporaryDirectory(prefix="differential-") as scratch:
        stats = os.path.join(scratch, "stats.json")
        env = dict(os.environ)
        env["GPUSIM_RACECHECK"] = "1"
        env["GPUSIM_STATS"] = stats
        env.pop("GPUCACHE_ALLOC_CONF", None)
        env.pop("LD_PRELOAD", None)
        if memory:
            env["GPUSIM_MEMORY"] = memory
        if configuration is not None:
            env["LD_PRELOAD"] = paths.library
            env["GPUCACHE_ALLOC_CONF"] = configuration
        try:
            process = subprocess.run([paths.interpreter, "--replay", case_file], env=env,
                                     capture_output=True, text=True, timeout=paths.timeout)
            status, stdout, stderr = process.returncode, process.stdout, process.stderr
        except subprocess.TimeoutExpired:
            status, stdout, stderr = "timeout", "", ""
        except OSError as error:
            status, stdout, stderr = f"not started ({error})", "", ""
        physical = None
        try:
            with open(stats) as file:
                physical = json.load(file)["current_physical_bytes"]
        except (OSError, ValueError, KeyError):
            pass
    return {"status": status, "stdout": stdout, "stderr": stderr, "physical": physical}


def tainted_names(outcome):
    return {line.split()[1] for line in outcome["stdout"].splitlines()
            if line.startswith("taint ")}


def comparable_lines(outcome, tainted):
    """The lines that must agree: those not naming a tainted object."""
    lines = []
    for line in outcome["stdout"].splitlines():
        if line.startswith("taint "):
            continue
        if tainted.intersection(line.split()):
            continue
        lines.append(line)
    return lines


def allocation_problem(outcome, tainted):
    """An allocation that failed with anything but out-of-memory."""
    for line in outcome["stdout"].splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[1] in ALLOCATIONS and fields[2] in tainted:
            code = int(fields[-1]) if fields[-2] == "=" else 0
            if code not in (0, OUT_OF_MEMORY):
                return line
    return None


def races(outcome):
    return [line for line in outcome["stderr"].splitlines() if line.startswith("gpusim: race")]


def judge(native, library):
    """None when `library` agrees with `native`, else (kind, detail). Kinds
    are stable words the shrinker keeps constant."""
    if races(native):
        return ("native-race", races(native)[0])
    if native["status"] != 0:
        return ("native-status", f"native exit {native['status']}: {native['stderr'][-300:]}")
    if races(library):
        return ("race", races(library)[0])
    if library["status"] != native["status"]:
        return ("status", f"exit {library['status']} (native {native['status']}): "
                          f"{library['stderr'][-300:].strip()}")
    tainted = tainted_names(native) | tainted_names(library)
    for outcome in (native, library):
        problem = allocation_problem(outcome, tainted)
        if problem:
            return ("allocation-error", problem)
    native_lines = comparable_lines(native, tainted)
    library_lines = comparable_lines(library, tainted)
    if native_lines != library_lines:
        for index, (want, got) in enumerate(zip(native_lines, library_lines)):
            if want != got:
                return ("output", f"line {index}: native '{want}', library '{got}'")
        return ("output", f"{len(native_lines)} lines natively, {len(library_lines)} under "
                          "the library")
    if native["physical"] is None or library["physical"] is None:
        return ("stats", "no GPUSIM_STATS document at exit")
    if native["physical"] != library["physical"]:
        return ("leak", f"{library['physical']} device bytes held at exit "
                        f"(native {native['physical']})")
    return None


def check_case(paths, case, configurations, scratch, executor=None):
    """Runs `case` natively and in `configurations`; returns [(conf, kind,
    detail)] for the failures."""
    path = os.path.join(scratch, f"case-{os.getpid()}-{id(case)}-{time.monotonic_ns()}.txt")
    with open(path, "w") as file:
        file.write(case.text())
    try:
        native = run_case(paths, path, case.memory, None)
        if executor is None:
            outcomes = [run_case(paths, path, case.memory, c) for c in configurations]
        else:
            outcomes = list(executor.map(lambda c: run_case(paths, path, case.memory, c),
                                         configurations))
        failures = []
        for configuration, outcome in zip(configurations, outcomes):
            verdict = judge(native, outcome)
            if verdict:
                failures.append((configuration, verdict[0], verdict[1]))
                if verdict[0].startswith("native"):
                    break
        return failures
    finally:
        os.unlink(path)


# ---------------------------------------------------------------- shrinking

CREATING = {"stream_create": 0, "event_create": 0, "malloc": 0, "malloc_async": 0,
            "cu_alloc": 0, "dtoh": 4}


def without(case, removed):
    """`case` minus the operations whose flat indices are in `removed`, and
    minus every operation naming an object that a removed one created (a
    buffer's fill, uses and free go with its allocation)."""
    flat = [(p, thread, op) for p, (_, ops) in enumerate(case.phases) for thread, op in ops]
    gone = set()
    for index in removed:
        op = flat[index][2]
        if op[0] in CREATING:
            gone.add(op[1 + CREATING[op[0]]])
    phases = []
    for p, (thread_count, _) in enumerate(case.phases):
        kept = [(thread, op) for index, (q, thread, op) in enumerate(flat)
                if q == p and index not in removed and not gone.intersection(op[1:])]
        if kept:
            phases.append((thread_count, kept))
    return Case(phases, case.memory, case.comment, case.busy_destroy)


def shrink(paths, case, configuration, kind, scratch, log=lambda message: None,
           attempts=2):
    """Delta debugging: drops chunks of operations, halving the chunk size,
    keeping a smaller list whenever it is still a valid program and still
    fails the same way under `configuration`."""

    def still_fails(candidate):
        try:
            validate(candidate)
        except InvalidProgram:
            return False
        # Timing-dependent failures may need a second try to show.
        for _ in range(attempts):
            failures = check_case(paths, candidate, [configuration], scratch)
            if any(failure[1] == kind for failure in failures):
                return True
            if any(failure[1].startswith("native") for failure in failures):
                return False
        return False

    chunk = max(1, case.operation_count() // 2)
    while True:
        index = 0
        changed = False
        while index < case.operation_count():
            removed = set(range(index, min(index + chunk, case.operation_count())))
            candidate = without(case, removed)
            if still_fails(candidate):
                case = candidate
                changed = True
                log(f"shrink: {case.operation_count()} operations")
            else:
                index += chunk
        if chunk == 1 and not changed:
            return case
        if not changed:
            chunk = max(1, chunk // 2)


# ---------------------------------------------------------------- commands

def paths_from(arguments):
    return Paths(os.path.abspath(arguments.interpreter), os.path.abspath(arguments.library),
                 arguments.timeout)


def seed_range(text, first_seed=0):
    """The seeds of --seeds: A:B as given, or N seeds from --first-seed."""
    if ":" in text:
        if first_seed:
            raise SystemExit(f"--seeds {text} names its first seed: --first-seed "
                             f"{first_seed} applies to --seeds N and --hours only")
        first, last = text.split(":")
        return range(int(first), int(last))
    return range(first_seed, first_seed + int(text))


def report_failure(label, failures):
    for configuration, kind, detail in failures:
        print(f"FAIL {label} [{configuration or 'default'}] {kind}: {detail}", flush=True)


def command_run(arguments):
    global BUSY_DESTROY, LEGACY_FREE_ASYNC, DEVICE_RESETS, SHARED_SYNC
    DEVICE_RESETS = not arguments.no_reset
    SHARED_SYNC = not arguments.no_shared_sync
    if arguments.single_thread:
        THREAD_CHOICES[:] = [1]
    BUSY_DESTROY = not arguments.no_busy_destroy
    LEGACY_FREE_ASYNC = not arguments.no_legacy_free_async
    paths = paths_from(arguments)
    configurations = arguments.conf if arguments.conf else CONFIGURATIONS
    deadline = time.monotonic() + arguments.hours * 3600 if arguments.hours else None
    seeds = iter(seed_range(arguments.seeds, arguments.first_seed)) if not deadline else \
        iter(range(arguments.first_seed, 1 << 62))
    lowest = highest = None
    passed = failed = operations = 0
    failing = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="differential-") as scratch, \
            concurrent.futures.ThreadPoolExecutor(arguments.jobs) as pool:
        def one(seed):
            case = generate(seed)
            return seed, case, check_case(paths, case, configurations, scratch)

        running = set()
        while True:
            while len(running) < arguments.jobs and (deadline is None or
                                                    time.monotonic() < deadline):
                seed = next(seeds, None)
                if seed is None:
                    break
                running.add(pool.submit(one, seed))
            if not running:
                break
            done, running = concurrent.futures.wait(
                running, return_when=concurrent.futures.FIRST_COMPLETED)
            for future in done:
                seed, case, failures = future.result()
                lowest = seed if lowest is None else min(lowest, seed)
                highest = seed if highest is None else max(highest, seed)
                operations += case.operation_count()
                if failures:
                    failed += 1
                    report_failure(f"seed {seed}", failures)
                    failing.append((seed, case, failures))
                else:
                    passed += 1
        elapsed = time.monotonic() - started
        if arguments.shrink_into and failing:
            os.makedirs(arguments.shrink_into, exist_ok=True)
            for seed, case, failures in failing[:arguments.max_shrinks]:
                configuration, kind, detail = failures[0]
                small = shrink(paths, case, configuration, kind, scratch)
                small.comment = (f"minimised from seed {seed}; fails under "
                                 f"GPUCACHE_ALLOC_CONF='{configuration}' with {kind}:\n"
                                 f"{detail}")
                target = os.path.join(arguments.shrink_into, f"seed-{seed}-{kind}.txt")
                with open(target, "w") as file:
                    file.write(small.text())
                print(f"minimised seed {seed} to {small.operation_count()} operations: "
                      f"{target}", flush=True)
    runs = (passed + failed) * (len(configurations) + 1)
    # The seeds that ran, so that a log says which part of the space it covers.
    covered = f" (seeds {lowest}-{highest})" if lowest is not None else ""
    print(f"{passed + failed} cases{covered}, {operations} operations, {runs} runs, "
          f"{elapsed:.1f} s", flush=True)
    print(f"{passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


def case_files(targets):
    for target in targets:
        if os.path.isdir(target):
            for name in sorted(os.listdir(target)):
                if name.endswith(".txt"):
                    yield os.path.join(target, name)
        else:
            yield target


def command_replay(arguments):
    paths = paths_from(arguments)
    configurations = arguments.conf if arguments.conf else CONFIGURATIONS
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="differential-") as scratch, \
            concurrent.futures.ThreadPoolExecutor(arguments.jobs) as pool:
        for path in case_files(arguments.cases):
            with open(path) as file:
                case = Case.parse(file.read())
            try:
                validate(case)
            except InvalidProgram as error:
                print(f"FAIL {path}: not a valid program: {error}")
                failed += 1
                continue
            failures = check_case(paths, case, configurations, scratch, pool)
            if failures:
                failed += 1
                report_failure(path, failures)
            else:
                passed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def command_shrink(arguments):
    paths = paths_from(arguments)
    with open(arguments.case) as file:
        case = Case.parse(file.read())
    validate(case)
    configuration = arguments.conf[0] if arguments.conf else ""
    with tempfile.TemporaryDirectory(prefix="differential-") as scratch:
        failures = check_case(paths, case, [configuration], scratch)
        if not failures:
            print("the case passes; nothing to shrink")
            return 1
        kind = failures[0][1]
        small = shrink(paths, case, configuration, kind, scratch,
                       log=lambda message: print(message, file=sys.stderr),
                       attempts=arguments.attempts)
    small.comment = (f"minimised; fails under GPUCACHE_ALLOC_CONF='{configuration}' with "
                     f"{kind}:\n{failures[0][2]}")
    sys.stdout.write(small.text())
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    generate_parser = commands.add_parser("generate", help="print the case of one seed")
    generate_parser.add_argument("--seed", type=int, required=True)
    for name in ("run", "replay", "shrink"):
        sub = commands.add_parser(name)
        sub.add_argument("--interpreter", required=True)
        sub.add_argument("--library", required=True)
        sub.add_argument("--conf", action="append",
                         help="a configuration to test (repeatable; default: all)")
        sub.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
        sub.add_argument("--timeout", type=float, default=60.0)
        if name == "run":
            sub.add_argument("--seeds", default="0:20", help="A:B or N")
            sub.add_argument("--hours", type=float, default=0.0)
            sub.add_argument("--first-seed", type=int, default=0)
            sub.add_argument("--shrink-into", help="folder for minimised failing cases")
            sub.add_argument("--max-shrinks", type=int, default=5)
            sub.add_argument("--no-busy-destroy", action="store_true",
                             help="synchronise every stream before destroying it")
            sub.add_argument("--no-shared-sync", action="store_true",
                             help="whole-device synchronisations only in one-thread phases")
            sub.add_argument("--single-thread", action="store_true",
                             help="one host thread in every phase")
            sub.add_argument("--no-reset", action="store_true",
                             help="no cudaDeviceReset phases")
            sub.add_argument("--no-legacy-free-async", action="store_true",
                             help="no cudaFreeAsync on the legacy stream (the known bug)")
        elif name == "replay":
            sub.add_argument("cases", nargs="+")
        else:
            sub.add_argument("case")
            sub.add_argument("--attempts", type=int, default=2,
                             help="runs per candidate (more for timing-dependent failures)")
    arguments = parser.parse_args()
    if arguments.command == "generate":
        sys.stdout.write(generate(arguments.seed).text())
        return 0
    return {"run": command_run, "replay": command_replay,
            "shrink": command_shrink}[arguments.command](arguments)


if __name__ == "__main__":
    sys.exit(main())
