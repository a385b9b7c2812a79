#!/usr/bin/env python3
"""End-to-end checks of the report writers through report_tool.

usage: report_test.py CASE REPORT_TOOL CHECKER GPUCACHE SHARED_TRACES"""
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile


def fail(message):
    print(f'FAIL: {message}')
    sys.exit(1)


def run(arguments, expect=0):
    result = subprocess.run(arguments, capture_output=True, text=True)
    if expect is not None and result.returncode != expect:
        fail(f'{" ".join(map(str, arguments))} exited {result.returncode}, expected {expect}\n'
             f'{result.stdout}{result.stderr}')
    return result


def reference_summary(stats, device, abbreviated):
    """PyTorch's memory_summary() formatting, written from its documented
    behaviour, applied to the stats JSON the C side wrote."""
    def format_size(size, reference):
        units = ['B  ', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB']
        unit = units[0]
        for next_unit in units[1:]:
            if reference < 768 * 1024:
                break
            unit = next_unit
            size //= 1024
            reference /= 1024
        return f'{size:6d} {unit}'

    def format_count(count, reference):
        units = [' ', 'K', 'M']
        unit = units[0]
        for next_unit in units[1:]:
            if reference < 750 * 1000:
                break
            unit = next_unit
            count //= 1000
            reference /= 1000
        return f'{count:7d} {unit} '

    metrics = [('allocated_bytes', 'Allocated memory', format_size),
               ('active_bytes', 'Active memory', format_size),
               ('requested_bytes', 'Requested memory', format_size),
               ('reserved_bytes', 'GPU reserved memory', format_size),
               ('inactive_split_bytes', 'Non-releasable memory', format_size),
               ('allocation', 'Allocations', format_count),
               ('active', 'Active allocs', format_count),
               ('segment', 'GPU reserved segments', format_count),
               ('inactive_split', 'Non-releasable allocs', format_count)]
    lines = ['=' * 75,
             ' ' * 18 + 'PyTorch CUDA memory summary, device ID ' + f'{device:<17d} ',
             '-' * 75,
             ' ' * 12 + f"CUDA OOMs: {stats['num_ooms']:<12d} | " + ' ' * 7 +
             f"cudaMalloc retries: {stats['num_alloc_retries']:<8d}  ",
             '=' * 75,
             '        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ']
    for key, name, formatter in metrics:
        lines.append('-' * 75)
        rows = [('all', name)]
        if not abbreviated:
            rows += [('large_pool', '      from large pool'), ('small_pool', '      from small pool')]
        reference = None
        for pool, row_name in rows:
            values = [stats[f'{key}.{pool}.{field}']
                      for field in ('current', 'peak', 'allocated', 'freed')]
            reference = reference or values
            cells = [formatter(value, ref) for value, ref in zip(values, reference)]
            lines.append(f' {row_name:<21} | ' + ' | '.join(cells) + ' ')
    for key, name in [('oversize_allocations', 'Oversize allocations'),
                      ('oversize_segments', 'Oversize GPU segments')]:
        lines.append('-' * 75)
        values = [stats[f'{key}.{field}'] for field in ('current', 'peak', 'allocated', 'freed')]
        cells = [format_count(value, value) for value in values]
        lines.append(f' {name:<21} | ' + ' | '.join(cells) + ' ')
    lines.append('=' * 75)
    return '|' + '|\n|'.join(lines) + '|\n'


def case_summary(tool, work, **_):
    for seed in range(1, 41):
        abbreviated = seed % 4 == 0
        stats_path, table_path = f'{work}/stats{seed}.json', f'{work}/summary{seed}.txt'
        run([tool, 'summary', str(seed), stats_path, table_path] + (['abbreviated'] * abbreviated))
        stats = json.load(open(stats_path))
        table = open(table_path).read()
        device = int(re.search(r'device ID (\d+)', table).group(1))
        expected = reference_summary(stats, device, abbreviated)
        if table != expected:
            for number, (got, want) in enumerate(zip(table.splitlines(), expected.splitlines())):
                if got != want:
                    fail(f'seed {seed} line {number + 1}:\n got  {got!r}\n want {want!r}')
            fail(f'seed {seed}: {len(table)} characters, expected {len(expected)}')


def normalise(value):
    if isinstance(value, (list, tuple)):
        return [normalise(item) for item in value]
    if isinstance(value, dict):
        return {key: normalise(item) for key, item in value.items()}
    return value


def write_snapshot(tool, work, scenario):
    json_path, pickle_path = f'{work}/{scenario}.json', f'{work}/{scenario}.pickle'
    run([tool, 'snapshot', scenario, json_path, pickle_path])
    from_json = json.load(open(json_path))
    with open(pickle_path, 'rb') as handle:
        data = handle.read()
    if data[:2] != b'\x80\x02':
        fail(f'{pickle_path} does not start with PROTO 2')

    class Refuse(pickle.Unpickler):
        def find_class(self, module, name):
            fail(f'{pickle_path} names {module}.{name}')

    import io
    from_pickle = Refuse(io.BytesIO(data)).load()
    if normalise(from_pickle) != from_json:
        fail(f'{scenario}: the pickle and the JSON differ')
    return from_json, json_path, pickle_path


def case_snapshot_native(tool, checker, work, gpucache, **_):
    snapshot, json_path, pickle_path = write_snapshot(tool, work, 'native')
    run([sys.executable, checker, '--strict-opcodes', json_path, pickle_path])
    segments = snapshot['segments']
    if [s['address'] for s in segments] != sorted(s['address'] for s in segments):
        fail('segments are not sorted by address')
    small = segments[0]
    if (small['segment_type'], small['total_size'], small['allocated_size'],
            small['requested_size']) != ('small', 2 << 20, 1024, 1000):
        fail(f'small segment fields: {small}')
    large = segments[1]
    if (large['active_size'], large['allocated_size']) != (12 << 20, 8 << 20):
        fail(f'large segment active/allocated: {large}')
    states = [b['state'] for b in large['blocks']]
    if states != ['active_allocated', 'active_pending_free', 'inactive']:
        fail(f'block states {states}')
    if [b['address'] for b in large['blocks']] != [large['address'], large['address'] + (8 << 20),
                                                    large['address'] + (12 << 20)]:
        fail('block addresses do not follow the sizes')
    trace = snapshot['device_traces'][0]
    ooms = [e for e in trace if e['action'] == 'oom']
    expected = [(3 << 20, 64 << 20), (255, 256), (65535, 65536), (2 ** 31 - 1, 2 ** 31),
                (2 ** 40, 2 ** 53 - 1)]
    if [(e['device_free'], e['size']) for e in ooms] != expected or any('addr' in e for e in ooms):
        fail(f'oom entries {ooms}')
    first = trace[0]
    if first != {'action': 'segment_alloc', 'addr': small['address'], 'size': 2 << 20,
                 'stream': 0, 'time_us': 1700000000 * 1000000 + 1, 'frames': []}:
        fail(f'first trace entry {first}')
    settings = snapshot['allocator_settings']
    if (settings['PYTORCH_CUDA_ALLOC_CONF'], settings['max_split_size'],
            settings['expandable_segments'], settings['roundup_power2_divisions']['32768'],
            len(settings['roundup_power2_divisions'])) != ('max_split_size_mb:128', -1, False, 0, 16):
        fail(f'allocator_settings {settings}')
    # gpucache replay reads both encodings back.
    for path in (json_path, pickle_path):
        result = run([gpucache, 'replay', '--json', path])
        report = json.loads(result.stdout)
        text = json.dumps(report)
        if '"completed": true' not in text and '"completed":true' not in text:
            fail(f'replay of {path}: {result.stdout}')


def case_snapshot_expandable(tool, checker, work, **_):
    snapshot, json_path, pickle_path = write_snapshot(tool, work, 'expandable')
    run([sys.executable, checker, '--strict-opcodes', json_path, pickle_path])
    segment, = snapshot['segments']
    if not segment['is_expandable'] or segment['stream'] != 7 or segment['total_size'] != 40 << 20:
        fail(f'expandable segment {segment}')
    if not snapshot['allocator_settings']['expandable_segments']:
        fail('allocator_settings.expandable_segments is not True')


def case_checker_refuses(tool, checker, work, **_):
    """The checker must fail on each way a snapshot can contradict itself."""
    _, json_path, pickle_path = write_snapshot(tool, work, 'broken')
    for path in (json_path, pickle_path):
        result = run([sys.executable, checker, path], expect=1)
        if 'free_requested of' not in result.stdout:
            fail(f'checker on {path}: {result.stdout}')
    good, _, _ = write_snapshot(tool, work, 'native')

    def mutated(name, change, expected):
        snapshot = json.loads(json.dumps(good))
        change(snapshot)
        path = f'{work}/{name}.json'
        json.dump(snapshot, open(path, 'w'))
        result = run([sys.executable, checker, path], expect=1)
        if expected not in result.stdout:
            fail(f'{name}: checker said {result.stdout!r}, expected {expected!r}')

    def drop_last_block(s):
        s['segments'][0]['blocks'].pop()
    mutated('untiled', drop_last_block, 'blocks cover')

    def alloc_size(s):
        next(e for e in s['device_traces'][0] if e['action'] == 'alloc')['size'] += 1
    mutated('alloc-size', alloc_size, 'but the block holds')

    def segment_gone(s):
        s['device_traces'][0] = [e for e in s['device_traces'][0]
                                 if not (e['action'] == 'segment_free')]
    mutated('segment-twice', segment_gone, 'no segment starts there')

    def block_outside(s):
        for entry in s['device_traces'][0]:
            if entry['action'].startswith('free') and entry['addr'] == s['segments'][0]['address']:
                entry['addr'] = 0x100
    mutated('outside', block_outside, 'outside every segment')

    def bad_state(s):
        s['segments'][0]['blocks'][0]['state'] = 'active_awaiting_free'
    mutated('state', bad_state, 'state')

    def inexact(s):
        s['device_traces'][0][0]['addr'] = 2 ** 60
    mutated('inexact', inexact, 'not exact in JavaScript')

    # A pickle that calls something is refused, and unknown opcodes in strict mode.
    evil = f'{work}/evil.pickle'
    with open(evil, 'wb') as handle:
        handle.write(b'\x80\x02cos\nsystem\nq\x00X\x04\x00\x00\x00trueq\x01\x85q\x02Rq\x03.')
    result = run([sys.executable, checker, evil], expect=1)
    if 'os.system' not in result.stdout:
        fail(f'checker on a pickle that imports: {result.stdout}')
    protocol5 = f'{work}/protocol5.pickle'
    with open(protocol5, 'wb') as handle:
        pickle.dump(good, handle, protocol=5)
    result = run([sys.executable, checker, '--strict-opcodes', protocol5], expect=1)
    if 'protocol 5' not in result.stdout:
        fail(f'checker on protocol 5: {result.stdout}')


def case_pytorch_snapshots(checker, shared, **_):
    directory = os.path.join(shared, 'pytorch-snapshots')
    if not os.path.isdir(directory):
        print('SKIP: no shared PyTorch snapshots')
        sys.exit(77)
    paths = sorted(os.path.join(directory, name) for name in os.listdir(directory)
                   if name.endswith('.pickle'))
    run([sys.executable, checker] + paths)


def case_traces(tool, work, gpucache, **_):
    compact, csv = f'{work}/trace.txt', f'{work}/trace.csv'
    run([tool, 'trace', compact, csv])
    lines = open(compact).read().splitlines()
    header = lines[0].split()
    if header[:2] != ['gpucache-trace', '2'] or header[4:] != ['events', '7']:
        fail(f'compact header {lines[0]!r}')
    start = int(header[3])
    rows = [line.split() for line in lines[1:]]
    if [r[1] for r in rows] != ['sa', 'a', 'a', 'fr', 'fc', 'oom', 'fr']:
        fail(f'compact actions {[r[1] for r in rows]}')
    times = [start]
    for row in rows:
        times.append(times[-1] + int(row[0]))
    if times[1] != start or times[-1] - times[1] != 6 * 1500:
        fail(f'compact times {times}')
    if rows[2][3:] != ['7f0000000200', '700', '5555aaaa0000', '4242', '1024', '0'] or rows[5][3] != '3039':
        fail(f'compact fields {rows[2]} {rows[5]}')
    # The reader gives the same events back, and refuses what is not a trace.
    events = run([tool, 'read-trace', compact]).stdout.splitlines()
    first_time = 1700006400 * 10 ** 9 - 5000 + 1500
    expected = [f'segment_alloc 0 0x7f0000000000 {2 << 20} 0x0 4242 {first_time} 0',
                f'alloc 0 0x7f0000000200 700 0x5555aaaa0000 4242 {first_time + 3000} 1024',
                f'oom 0 0x3039 {1 << 30} 0x0 4242 {first_time + 7500} 0']
    if [events[0], events[2], events[5]] != expected or len(events) != 7:
        fail(f'read back {events}')
    # A version-1 file (no block size column) still reads.
    version1 = f'{work}/version1.txt'
    open(version1, 'w').write(
        lines[0].replace('gpucache-trace 2', 'gpucache-trace 1').replace('events 7', 'events 1') +
        '\n0 a 0 7f0000000200 700 5555aaaa0000 4242\n')
    old = run([tool, 'read-trace', version1]).stdout.splitlines()
    if old != [f'alloc 0 0x7f0000000200 700 0x5555aaaa0000 4242 {first_time} 0']:
        fail(f'version 1 read back {old}')
    for name, text, problem in [('not-trace', 'hello\n', 'line 1: not a gpucache trace'),
                                ('bad-line', lines[0] + '\n0 zz 0 0 0 0 0 0 0\n', 'line 2: expected'),
                                ('version1-line', lines[0] + '\n0 a 0 0 0 0 0\n', 'line 2: expected'),
                                ('version9', lines[0].replace(' 2 ', ' 9 ', 1) + '\n',
                                 'version 9 (this build reads versions 1 and 2)'),
                                ('short', lines[0] + '\n' + lines[1] + '\n', 'the header says 7')]:
        path = f'{work}/{name}.txt'
        open(path, 'w').write(text)
        result = run([tool, 'read-trace', path], expect=1)
        if problem not in result.stdout:
            fail(f'{name}: {result.stdout!r}')
    csv_lines = open(csv).read().splitlines()
    if csv_lines[0] != 'Thread,Time,Action,Pointer,Size,Stream':
        fail(f'CSV header {csv_lines[0]!r}')
    actions = [line.split(',')[2] for line in csv_lines[1:]]
    if actions != ['allocate', 'allocate', 'free', 'allocate failure', 'free']:
        fail(f'CSV actions {actions}')
    second = csv_lines[2].split(',')
    if second != ['4242', '23:59:59.999999', 'allocate', '0x7f0000000200', '700', '0x5555aaaa0000']:
        fail(f'CSV row {second}')
    # The run crosses an hour boundary: hours keep counting, order is kept.
    if csv_lines[-1].split(',')[1] != '24:00:00.000005':
        fail(f'CSV time past midnight {csv_lines[-1]}')
    result = run([gpucache, 'replay', '--json', csv])
    if '"completed": true' not in result.stdout:
        fail(f'gpucache replay of the CSV: {result.stdout}{result.stderr}')


def case_svg(tool, work, **_):
    if not shutil.which('xmllint'):
        print('SKIP: xmllint not installed')
        sys.exit(77)
    path = f'{work}/chart.svg'
    run([tool, 'svg', path, 'default', 'expandable_segments:True', 'a<b&"c"'])
    run(['xmllint', '--noout', path])
    text = open(path).read()
    for expected in ('a&lt;b&amp;&quot;c&quot;', 'expandable_segments:True', 'seconds',
                     'memory (MiB)', 'solid: reserved, dashed: allocated', 'stroke-dasharray',
                     'memory of test &lt;program&gt; &amp; friends'):
        if expected not in text:
            fail(f'SVG lacks {expected!r}')
    if text.count('<polyline') != 6:
        fail(f'{text.count("<polyline")} curves, expected 6')
    # Every point lies inside the plot area (x 100-960, y 56-490; the legend
    # is below it).
    for points in re.findall(r'points="([^"]*)"', text):
        for pair in points.split():
            x, y = map(float, pair.split(','))
            if not (100 <= x <= 960 and 56 <= y <= 490):
                fail(f'point {pair} outside the plot')
    # Rendered, nothing falls outside the picture.
    fits = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__),
                                                        'check_svg_fits.py'), path],
                          capture_output=True, text=True)
    if fits.returncode != 0:
        fail(f'the chart does not fit: {fits.stdout}{fits.stderr}')


def case_report_files(tool, work, **_):
    path = f'{work}/report-%p.json'
    run([tool, 'report', path])
    written = f'{work}/report-77.json'
    report = json.load(open(written))
    if report['pid'] != 77 or report['passthrough_calls']['foreign_pointer'] != 3 \
            or report['passthrough_calls']['graph_capture'] != 2:
        fail(f'report header {report}')
    if 'pinned_num_register_threads' not in report['configuration']['ignored']:
        fail(f'ignored keys {report["configuration"]["ignored"]}')
    if report['configuration']['keys']['max_split_size_mb']['source'] != 'string':
        fail(f'configuration {report["configuration"]["keys"]["max_split_size_mb"]}')
    first, second = report['devices']
    if (first['stats']['allocated_bytes.all.peak'], first['stats']['num_ooms'],
            first['events']) != (123456789, 2, {'recorded': 10, 'dropped': 0}):
        fail(f'device 0 {first}')
    if second['stats']['reserved_bytes.large_pool.current'] != 20 << 20:
        fail(f'device 1 {second}')
    # An existing file is never overwritten.
    before = open(written).read()
    result = run([tool, 'report', path], expect=3)
    if open(written).read() != before or 'file exists' not in result.stderr:
        fail(f'existing file: {result.stderr!r}')
    if result.stderr.count('\n') != 1:
        fail(f'more than one line: {result.stderr!r}')
    # Nor written through a symbolic link.
    target = f'{work}/target'
    open(target, 'w').write('keep')
    os.symlink(target, f'{work}/link')
    result = run([tool, 'report', f'{work}/link'], expect=3)
    if open(target).read() != 'keep' or 'symbolic link' not in result.stderr:
        fail(f'symlink: {result.stderr!r}')
    result = run([tool, 'report', f'{work}/no/such/dir/report.json'], expect=3)
    if 'No such file or directory' not in result.stderr:
        fail(f'missing directory: {result.stderr!r}')
    result = run([tool, 'report', 'stderr'])
    if json.loads(result.stderr)['pid'] != 77:
        fail('report to stderr')


def allocator_snapshot(tool, checker, work, mode, conf, capacity_mib):
    """Runs allocator_snapshots and checks both encodings with the checker."""
    name = f'{mode}-{len(os.listdir(work))}'
    json_path, pickle_path, stats_path = (f'{work}/{name}.json', f'{work}/{name}.pickle',
                                          f'{work}/{name}-stats.json')
    run([tool, mode, conf, str(capacity_mib), json_path, pickle_path, stats_path])
    result = run([sys.executable, checker, '--strict-opcodes', json_path, pickle_path])
    print(result.stdout, end='')
    snapshot = json.load(open(json_path))
    stats = json.load(open(stats_path))
    return snapshot, stats, json_path, pickle_path


def actions(snapshot):
    return [entry['action'] for trace in snapshot['device_traces'] for entry in trace]


def case_allocator_mixed(tool, checker, work, **_):
    snapshot, stats, _, _ = allocator_snapshot(tool, checker, work, 'mixed', '', 4096)
    states = {b['state'] for s in snapshot['segments'] for b in s['blocks']}
    if states != {'active_allocated', 'active_pending_free', 'inactive'}:
        fail(f'the mixed run should end with every block state, has {states}')
    seen = set(actions(snapshot))
    for action in ('alloc', 'free_requested', 'free_completed', 'segment_alloc', 'segment_free'):
        if action not in seen:
            fail(f'no {action} event in {sorted(seen)}')
    reserved = sum(s['total_size'] for s in snapshot['segments'])
    if reserved != stats['reserved_bytes.all.current']:
        fail(f'segments hold {reserved}, stats say {stats["reserved_bytes.all.current"]}')
    allocated = sum(s['allocated_size'] for s in snapshot['segments'])
    if allocated != stats['allocated_bytes.all.current']:
        fail(f'blocks hold {allocated}, stats say {stats["allocated_bytes.all.current"]}')


def case_allocator_expandable(tool, checker, work, **_):
    snapshot, stats, _, _ = allocator_snapshot(tool, checker, work, 'mixed',
                                               'expandable_segments:True', 4096)
    if not snapshot['segments'] or not all(s['is_expandable'] for s in snapshot['segments']):
        fail('expandable run without expandable segments')
    seen = set(actions(snapshot))
    if not {'segment_map', 'segment_unmap'} <= seen or 'segment_alloc' in seen:
        fail(f'expandable run actions {sorted(seen)}')
    reserved = sum(s['total_size'] for s in snapshot['segments'])
    if reserved != stats['reserved_bytes.all.current']:
        fail(f'mapped ranges hold {reserved}, stats say {stats["reserved_bytes.all.current"]}')


def check_oom(tool, checker, work, conf):
    snapshot, stats, _, _ = allocator_snapshot(tool, checker, work, 'oom', conf, 256)
    trace = snapshot['device_traces'][0]
    if trace[-1]['action'] != 'oom' or stats['num_ooms'] != 1:
        fail(f'the snapshot at OOM ends with {trace[-1]}, num_ooms {stats["num_ooms"]}')
    if trace[-1]['device_free'] > 256 << 20:
        fail(f'device_free {trace[-1]["device_free"]}')


def case_allocator_oom(tool, checker, work, **_):
    check_oom(tool, checker, work, '')


def case_allocator_oom_expandable(tool, checker, work, **_):
    check_oom(tool, checker, work, 'expandable_segments:True')


def case_allocator_abandon(tool, checker, work, **_):
    for conf in ('', 'expandable_segments:True'):
        allocator_snapshot(tool, checker, work, 'abandon', conf, 65536)


def case_allocator_round_trip(tool, checker, work, gpucache, **_):
    for conf in ('', 'expandable_segments:True', 'max_split_size_mb:20,roundup_power2_divisions:4'):
        _, stats, json_path, pickle_path = allocator_snapshot(tool, checker, work, 'sameStream',
                                                              conf, 4096)
        for path in (json_path, pickle_path):
            result = run([gpucache, 'replay', '--json', '--device-memory', '4GiB', '--conf', conf,
                          path])
            replayed = json.loads(result.stdout)['configurations'][0]
            for key in ('allocated_bytes.all.peak', 'reserved_bytes.all.peak',
                        'requested_bytes.all.peak', 'num_device_alloc', 'num_device_free'):
                if replayed['stats'][key] != stats[key]:
                    fail(f'{conf or "default"} {path}: replay {key} {replayed["stats"][key]}, '
                         f'recorded {stats[key]}')
            if not replayed['completed']:
                fail(f'replay of {path} did not complete')


def case_replay_snapshot(tool, checker, work, gpucache, shared, **_):
    """gpucache replay --snapshot: the replayed allocator's final state and
    events, per configuration, consistent, and replaying to the same peaks."""
    _, _, recorded, _ = allocator_snapshot(tool, checker, work, 'sameStream', '', 4096)
    out = f'{work}/replayed.pickle'
    first = json.loads(run([gpucache, 'replay', '--json', '--conf', '', '--conf',
                            'expandable_segments:True', '--snapshot', out, recorded]).stdout)
    written = [f'{work}/replayed-1.pickle', f'{work}/replayed-2.pickle']
    run([sys.executable, checker, '--strict-opcodes'] + written)
    for index, path in enumerate(written):
        configuration = first['configurations'][index]['configuration']
        again = json.loads(run([gpucache, 'replay', '--json', '--conf', configuration,
                                path]).stdout)['configurations'][0]['stats']
        for key in ('allocated_bytes.all.peak', 'reserved_bytes.all.peak'):
            if again[key] != first['configurations'][index]['stats'][key]:
                fail(f'{path}: {key} {again[key]} after a second replay')
    # At an out-of-memory stop the snapshot shows the state then, ending in the oom.
    small = f'{work}/small.json'
    result = run([gpucache, 'replay', '--device-memory', '64MiB', '--snapshot', small, recorded])
    trace = json.load(open(small))['device_traces'][0]
    if trace[-1]['action'] != 'oom' or 'no, at event' not in result.stdout:
        fail(f'out-of-memory replay: {trace[-1]} {result.stdout}')
    run([sys.executable, checker, small])
    # Existing files are kept: the replay refuses the path before replaying.
    kept = run([gpucache, 'replay', '--snapshot', small, recorded], expect=2)
    if 'file exists' not in kept.stderr:
        fail(f'existing snapshot: {kept.stderr}')
    directory = os.path.join(shared, 'pytorch-snapshots')
    if os.path.isdir(directory):
        real = os.path.join(directory, 'memory_forward_bf16_128.pickle')
        run([gpucache, 'replay', '--snapshot', f'{work}/real.json', real])
        run([sys.executable, checker, f'{work}/real.json'])


def main():
    case, tool, checker, gpucache, shared = sys.argv[1:6]
    with tempfile.TemporaryDirectory() as work:
        globals()['case_' + case.replace('-', '_')](tool=tool, checker=checker, work=work,
                                                    gpucache=gpucache, shared=shared)
    print(f'{case}: ok')


if __name__ == '__main__':
    main()
