#!/usr/bin/env python3
"""Checks a PyTorch-format memory snapshot (JSON or pickle) the way
pytorch.org/memory_viz uses it: the "Allocator State History" view replays
each device's trace backwards from the final segments and blocks, and any
event that does not fit that state makes the viewer throw or draw garbage.
This replays the same way and fails on the first inconsistency.

usage: check_snapshot.py [--strict-opcodes] FILE...
  --strict-opcodes  also require a pickle to use only protocol 2-4 and the
                    opcodes memory_viz's unpickler knows (for files we write)

Exit status 0 when every file passes, 1 otherwise (one line per failure)."""
import bisect
import json
import pickle
import pickletools
import sys

# The opcodes of MemoryViz.js's unpickler.
VIEWER_OPCODES = {
    'PROTO', 'FRAME', 'STOP', 'MARK', 'EMPTY_DICT', 'EMPTY_LIST', 'EMPTY_TUPLE', 'DICT',
    'LIST', 'TUPLE', 'TUPLE1', 'TUPLE2', 'TUPLE3', 'SETITEM', 'SETITEMS', 'APPEND',
    'APPENDS', 'BININT', 'BININT1', 'BININT2', 'LONG1', 'BINFLOAT', 'NONE', 'NEWTRUE',
    'NEWFALSE', 'SHORT_BINUNICODE', 'BINUNICODE', 'MEMOIZE', 'BINPUT', 'LONG_BINPUT',
    'BINGET', 'LONG_BINGET',
}
BLOCK_STATES = {'active_allocated', 'active_pending_free', 'inactive'}
JS_EXACT = 2 ** 53


class Inconsistent(Exception):
    pass


class DataOnlyUnpickler(pickle.Unpickler):
    """Never imports or calls anything named in the file."""

    def find_class(self, module, name):
        raise Inconsistent(f'pickle names {module}.{name}: a snapshot holds only data')


def load(path, strict_opcodes):
    with open(path, 'rb') as handle:
        data = handle.read()
    if data[:1] == b'\x80':
        if strict_opcodes:
            if data[1] not in (2, 3, 4):
                raise Inconsistent(f'pickle protocol {data[1]} (memory_viz reads 2, 3 and 4)')
            for opcode, _argument, position in pickletools.genops(data):
                if opcode.name not in VIEWER_OPCODES:
                    raise Inconsistent(f'byte {position}: opcode {opcode.name} is unknown to '
                                       'memory_viz')
        import io
        return DataOnlyUnpickler(io.BytesIO(data)).load()
    return json.loads(data.decode('utf-8'))


def need(condition, where, message):
    if not condition:
        raise Inconsistent(f'{where}: {message}')


def integer(value, where, key):
    need(key in value, where, f"'{key}' is missing")
    number = value[key]
    need(isinstance(number, int) and not isinstance(number, bool), where,
         f"'{key}' is {type(number).__name__} (expected an int)")
    need(abs(number) < JS_EXACT, where, f"'{key}' {number} is not exact in JavaScript")
    return number


class DeviceState:
    """The viewer's l_segments and l_block_map for one device."""

    def __init__(self, device):
        self.device = device
        self.segments = []  # [address, size, stream], sorted by address
        self.blocks = {}    # address -> [size, requested_size, free_requested]

    def segment_index(self, address):
        """Index of the segment containing address, or None."""
        position = bisect.bisect_right([s[0] for s in self.segments], address) - 1
        if position >= 0:
            start, size, _ = self.segments[position]
            if start <= address < start + size:
                return position
        return None

    def check_no_overlap(self, where, start, size):
        for other_start, other_size, _ in self.segments:
            need(start + size <= other_start or other_start + other_size <= start, where,
                 f'segment {start:#x}+{size} overlaps segment {other_start:#x}+{other_size}')

    def insert_segment(self, where, start, size, stream, merge):
        need(size > 0, where, 'a segment of 0 bytes')
        self.check_no_overlap(where, start, size)
        bisect.insort(self.segments, [start, size, stream])
        if not merge:
            return
        index = self.segments.index([start, size, stream])
        if index + 1 < len(self.segments):
            following = self.segments[index + 1]
            if start + size == following[0] and stream == following[2]:
                self.segments[index][1] += following[1]
                del self.segments[index + 1]
        if index > 0:
            previous = self.segments[index - 1]
            if previous[0] + previous[1] == start and previous[2] == stream:
                previous[1] += self.segments[index][1]
                del self.segments[index]

    def remove_segment(self, where, start, size, merge):
        if not merge:
            matches = [i for i, s in enumerate(self.segments) if s[0] == start]
            need(matches, where, f'segment_alloc of {start:#x}: no segment starts there')
            index = matches[0]
            need(self.segments[index][1] == size, where,
                 f'segment_alloc of {start:#x} has size {size} but the segment has '
                 f'{self.segments[index][1]}')
            del self.segments[index]
        else:
            index = self.segment_index(start)
            need(index is not None and start + size <= sum(self.segments[index][:2]), where,
                 f'segment_map of {start:#x}+{size}: no segment contains that range')
            existing = self.segments[index]
            existing_end = existing[0] + existing[1]
            if existing[0] == start:
                existing[0] += size
                existing[1] -= size
                if existing[1] == 0:
                    del self.segments[index]
            elif existing_end == start + size:
                existing[1] -= size
            else:
                existing[1] = start - existing[0]
                self.segments.insert(index + 1, [start + size, existing_end - start - size,
                                                 existing[2]])
        for address, block in self.blocks.items():
            need(address + block[0] <= start or start + size <= address, where,
                 f'the range {start:#x}+{size} goes away while block {address:#x} is live in it')

    def add_block(self, where, address, size, requested, free_requested):
        need(address not in self.blocks, where, f'block {address:#x} is already live')
        index = self.segment_index(address)
        need(index is not None, where, f'block {address:#x} lies outside every segment')
        start, segment_size, _ = self.segments[index]
        need(address + size <= start + segment_size, where,
             f'block {address:#x}+{size} runs past the end of its segment {start:#x}+{segment_size}')
        self.blocks[address] = [size, requested, free_requested]


def check_final_state(snapshot, states):
    segments = snapshot.get('segments')
    need(isinstance(segments, list), 'snapshot', "'segments' is missing or not a list")
    for s_index, segment in enumerate(segments):
        where = f'segments[{s_index}]'
        need(isinstance(segment, dict), where, 'not a dict')
        device = integer(segment, where, 'device')
        need(device in states, where, f'device {device} has no entry in device_traces')
        address = integer(segment, where, 'address')
        total = integer(segment, where, 'total_size')
        stream = integer(segment, where, 'stream')
        blocks = segment.get('blocks')
        need(isinstance(blocks, list), where, "'blocks' is missing or not a list")
        state = states[device]
        state.insert_segment(where, address, total, stream, merge=False)
        running = address
        for b_index, block in enumerate(blocks):
            block_where = f'{where}.blocks[{b_index}]'
            size = integer(block, block_where, 'size')
            need(size > 0, block_where, 'a block of 0 bytes')
            need(block.get('state') in BLOCK_STATES, block_where,
                 f"state {block.get('state')!r} (expected one of {sorted(BLOCK_STATES)})")
            if 'address' in block:
                need(block['address'] == running, block_where,
                     f"address {block['address']:#x} but the blocks before it end at {running:#x}")
            if block['state'] != 'inactive':
                requested = block.get('requested_size', size)
                state.blocks[running] = [size, requested,
                                         block['state'] == 'active_pending_free']
            running += size
        need(running == address + total, where,
             f'blocks cover {running - address} bytes of a {total}-byte segment')


def merged_trace(trace):
    """The viewer's annotate step: free_requested directly followed by the
    free_completed of the same address becomes one 'free'."""
    merged = []
    for index, entry in enumerate(trace):
        if (entry.get('action') == 'free_completed' and merged
                and merged[-1][1].get('action') == 'free_requested'
                and merged[-1][1].get('addr') == entry.get('addr')):
            merged[-1] = (merged[-1][0], dict(merged[-1][1], action='free'))
            continue
        merged.append((index, entry))
    return merged


def replay_backwards(device, trace, state):
    for index, entry in reversed(merged_trace(trace)):
        where = f'device_traces[{device}][{index}]'
        need(isinstance(entry, dict), where, 'not a dict')
        action = entry.get('action')
        need(isinstance(action, str), where, "'action' is missing")
        if action in ('oom', 'snapshot', 'annotate'):
            if action == 'oom':
                integer(entry, where, 'device_free')
            continue
        address = integer(entry, where, 'addr')
        size = integer(entry, where, 'size')
        integer(entry, where, 'stream')
        if action == 'free':
            state.add_block(where, address, size, size, False)
        elif action == 'free_completed':
            state.add_block(where, address, size, size, True)
        elif action == 'free_requested':
            block = state.blocks.get(address)
            need(block is not None, where,
                 f'free_requested of {address:#x}, which is neither in the final state nor '
                 'freed later')
            need(block[2], where, f'free_requested of {address:#x} twice')
            block[2] = False
        elif action == 'alloc':
            block = state.blocks.get(address)
            need(block is not None, where,
                 f'alloc of {address:#x}, which the later events and the final state do not hold')
            need(not block[2], where, f'alloc of {address:#x} while it is waiting to be freed')
            need(block[1] == size, where,
                 f'alloc of {address:#x} for {size} bytes, but the block holds {block[1]}')
            del state.blocks[address]
        elif action in ('segment_free', 'segment_unmap'):
            state.insert_segment(where, address, size, entry['stream'],
                                 merge=action == 'segment_unmap')
        elif action in ('segment_alloc', 'segment_map'):
            state.remove_segment(where, address, size, merge=action == 'segment_map')
        else:
            raise Inconsistent(f'{where}: unknown action {action!r}')


def check(path, strict_opcodes):
    snapshot = load(path, strict_opcodes)
    need(isinstance(snapshot, dict), 'snapshot', 'not a dict')
    traces = snapshot.get('device_traces')
    need(isinstance(traces, list) and all(isinstance(t, list) for t in traces), 'snapshot',
         "'device_traces' is missing or not a list of lists")
    states = {device: DeviceState(device) for device in range(len(traces))}
    check_final_state(snapshot, states)
    for device, trace in enumerate(traces):
        replay_backwards(device, trace, states[device])
    return sum(len(t) for t in traces), len(snapshot['segments'])


def main(arguments):
    strict = '--strict-opcodes' in arguments
    paths = [a for a in arguments if a != '--strict-opcodes']
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    failed = False
    for path in paths:
        try:
            events, segments = check(path, strict)
            print(f'{path}: consistent ({events} events, {segments} segments)')
        except (Inconsistent, OSError, ValueError, pickle.UnpicklingError) as error:
            print(f'{path}: {error}')
            failed = True
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
