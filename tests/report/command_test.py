#!/usr/bin/env python3
"""`gpucache run`, `gpucache ab` and the library's own report files, on a CUDA
program (ab_program) running on the simulated device.

usage: command_test.py CASE GPUCACHE AB_PROGRAM CHECKER LIBRARY
(GPUCACHE_LIBRARY and LD_LIBRARY_PATH come from the test environment)"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile


def fail(message):
    print(f'FAIL: {message}')
    sys.exit(1)


# The sanitizer runtime of a sanitizer build, preloaded first into every
# command the tests start (ahead of the library, as it must be).
SANITIZER_RUNTIME = os.environ.get('GPUCACHE_TEST_SANITIZER_RUNTIME', '')


def run(arguments, expect=0, env=None, cwd=None):
    environment = dict(os.environ)
    if SANITIZER_RUNTIME and arguments[0] != sys.executable:
        environment['LD_PRELOAD'] = SANITIZER_RUNTIME
    environment.update(env or {})
    result = subprocess.run(arguments, capture_output=True, text=True, env=environment, cwd=cwd,
                            timeout=100)
    if expect is not None and result.returncode != expect:
        fail(f'{" ".join(map(str, arguments))} exited {result.returncode}, expected {expect}\n'
             f'stdout: {result.stdout}\nstderr: {result.stderr}')
    return result


def table(text):
    """The ab table as {row: [cells]}: cells are separated by two or more spaces."""
    rows = {}
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(' '))
    rows['labels'] = re.split(r'\s{2,}', lines[start].strip())
    for line in lines[start + 1:]:
        if not line.strip():
            break
        parts = re.split(r'\s{2,}', line.strip())
        rows[parts[0]] = parts[1:]
    return rows


def format_bytes(count):
    """replay_format_bytes's rendering."""
    units = ['B', 'KiB', 'MiB', 'GiB', 'TiB']
    value, unit = float(count), 0
    while value >= 1024 and unit + 1 < len(units):
        value /= 1024
        unit += 1
    return f'{count} B' if unit == 0 else f'{value:.2f} {units[unit]}'


def preload_env(library, configuration):
    """The environment that puts the library in front of a program directly."""
    return {'LD_PRELOAD': (SANITIZER_RUNTIME + ':' if SANITIZER_RUNTIME else '') + library,
            'GPUCACHE_ALLOC_CONF': configuration}


def check_snapshots(checker, paths):
    run([sys.executable, checker, '--strict-opcodes'] + paths)


def case_run(gpucache, program, work, **_):
    result = run([gpucache, 'run', '--conf', 'max_split_size_mb:64', '--', program, 'churn'])
    for expected in ('PyTorch CUDA memory summary, device ID 0', 'Allocated memory',
                     'calls passed to the driver untouched: none',
                     "exit 0 after", "configuration 'max_split_size_mb:64'"):
        if expected not in result.stderr:
            fail(f'gpucache run output lacks {expected!r}:\n{result.stderr}')
    if result.stderr.count('PyTorch CUDA memory summary') != 1:
        fail('one device, one table expected')
    # Keys without effect are named only when the user set them.
    if 'have no effect' in result.stderr:
        fail(f'keys without effect listed though none was set:\n{result.stderr}')
    pinned = run([gpucache, 'run', '--conf', 'pinned_use_background_threads:True', '--', program,
                  'churn'])
    if 'keys you set that have no effect here: pinned_use_background_threads\n' not in pinned.stderr:
        fail(f'the key set without effect is not named alone:\n{pinned.stderr}')
    # The program's status is the command's.
    run([gpucache, 'run', '--', program, 'exit3'], expect=3)
    crashed = run([gpucache, 'run', '--', program, 'crash'], expect=128 + 11)
    if 'SIGSEGV' not in crashed.stderr:
        fail(f'crash not named: {crashed.stderr}')
    # Pass-through calls are counted by reason.
    baseline = run([gpucache, 'run', '--conf', 'passthrough:True', '--', program, 'churn'])
    match = re.search(r'calls passed to the driver untouched: configured (\d+)', baseline.stderr)
    if not match or int(match.group(1)) < 400:
        fail(f'pass-through counts: {baseline.stderr}')
    refused = run([gpucache, 'run', '--conf', 'report:x.json', '--', program], expect=2)
    if 'sets report, which the command sets itself' not in refused.stderr:
        fail(f'report key: {refused.stderr}')
    bad = run([gpucache, 'run', '--conf', 'max_split_size_mb', '--', program], expect=2)
    if bad.stderr.count('\n') != 1 or 'max_split_size_mb' not in bad.stderr:
        fail(f'bad configuration: {bad.stderr!r}')
    missing = run([gpucache, 'run', '--', f'{work}/no-such-program'], expect=127)
    if 'no-such-program' not in missing.stderr:
        fail(f'missing program: {missing.stderr}')
    lost = run([gpucache, 'run', '--', program], expect=127,
               env={'GPUCACHE_LIBRARY': f'{work}/none.so'})
    if 'GPUCACHE_LIBRARY' not in lost.stderr:
        fail(f'missing library: {lost.stderr}')


def case_ab_counters(gpucache, program, work, **_):
    """Each column's figures against the simulator's own counts of the same run."""
    for configuration, label in (('', 'default'), ('reuse:conservative', 'reuse:conservative'),
                                 ('expandable_segments:True', 'expandable_segments:True'),
                                 (None, 'baseline')):
        stats_path = f'{work}/sim-{label}.json'
        arguments = [gpucache, 'ab'] + (['--baseline'] if configuration is None
                                        else ['--conf', configuration])
        result = run(arguments + ['--', program, 'churn'], env={'GPUSIM_STATS': stats_path})
        if configuration is None:
            # --baseline alone still runs the default column: the last
            # run wrote the simulator's file, so compare with it.
            pass
        rows = table(result.stdout)
        column = rows['labels'].index(label) if configuration is not None else -1
        sim = json.load(open(stats_path))
        calls = sim['calls']
        cell = {name: rows[name][column] for name in rows if name != 'labels'}
        if configuration is None:
            # The last run is the default column's; the baseline's own
            # figures are checked against the program's own count instead.
            baseline = {name: rows[name][0] for name in rows if name != 'labels'}
            if baseline['driver allocations'] != '490' or baseline['driver frees'] != '490':
                fail(f'baseline driver calls: {baseline}')
            if baseline['utilisation'] != '100.00%' or baseline['synchronizations'] != '0':
                fail(f'baseline: {baseline}')
        if cell['peak reserved'] != format_bytes(sim['peak_physical_bytes']):
            fail(f'{label}: peak reserved {cell["peak reserved"]}, the simulator held at most '
                 f'{format_bytes(sim["peak_physical_bytes"])}')
        if 'cuMemCreate' not in calls:
            if cell['driver allocations'] != str(calls.get('cuMemAlloc_v2', 0)):
                fail(f'{label}: driver allocations {cell["driver allocations"]}, simulator '
                     f'cuMemAlloc_v2 {calls.get("cuMemAlloc_v2")}')
            if cell['driver frees'] != str(calls.get('cuMemFree_v2', 0)):
                fail(f'{label}: driver frees {cell["driver frees"]}, simulator '
                     f'cuMemFree_v2 {calls.get("cuMemFree_v2", 0)}')
        # The program synchronizes its stream once itself.
        ours = int(cell['synchronizations'])
        if configuration == 'reuse:conservative':
            if ours != calls.get('cuCtxSynchronize', 0) or ours + 1 != sim['synchronizations']:
                fail(f'{label}: {ours} synchronizations, simulator {sim["synchronizations"]}')
        elif ours > sim['synchronizations'] - 1:
            fail(f'{label}: {ours} synchronizations, more than the simulator saw')
        if cell['OOMs'] != '0' or cell['retries'] != '0' or cell['exit status'] != '0':
            fail(f'{label}: {cell}')


def case_ab_failure(gpucache, program, **_):
    result = run([gpucache, 'ab', '--conf', '', '--conf', 'expandable_segments:True',
                  '--repeat', '2', '--', program, 'crash'], expect=1)
    rows = table(result.stdout)
    if rows['exit status'] != ['SIGSEGV SIGSEGV'] * 2 or rows['peak reserved'] != ['failed'] * 2:
        fail(f'crashing runs: {result.stdout}')
    if 'the output of a failed run ends with:\nab_program: about to crash' not in result.stdout:
        fail(f'failed run output: {result.stdout}')
    result = run([gpucache, 'ab', '--', program, 'exit3'], expect=1)
    if table(result.stdout)['exit status'] != ['3']:
        fail(f'exit status 3: {result.stdout}')
    # Progress goes to a terminal only: none on a pipe.
    if result.stderr:
        fail(f'stderr on a pipe: {result.stderr!r}')
    repeated = run([gpucache, 'ab', '--repeat', '3', '--', program, 'churn'])
    rows = table(repeated.stdout)
    low, high = re.match(r'([\d.]+)-([\d.]+) s', rows['wall time (range)'][0]).groups()
    median = float(rows['wall time (median)'][0].split()[0])
    if not float(low) <= median <= float(high) or rows['exit status'] != ['0 0 0']:
        fail(f'three runs: {repeated.stdout}')
    # On a terminal it shows progress on stderr, erased before the table.
    import pty
    leader, follower = pty.openpty()
    environment = dict(os.environ)
    if SANITIZER_RUNTIME:
        environment['LD_PRELOAD'] = SANITIZER_RUNTIME
    process = subprocess.Popen([gpucache, 'ab', '--repeat', '2', '--', program, 'churn'],
                               stdout=subprocess.PIPE, stderr=follower, env=environment)
    os.close(follower)
    shown = b''
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    process.wait(timeout=100)
    os.close(leader)
    if b'gpucache ab: run 2 of 2 (default)' not in shown or not shown.endswith(b'\r\x1b[K'):
        fail(f'progress on a terminal: {shown!r}')
    bad = run([gpucache, 'ab', '--repeat', '0', '--', program], expect=2)
    if '--repeat' not in bad.stderr:
        fail(f'--repeat 0: {bad.stderr}')


def case_ab_json(gpucache, program, **_):
    result = run([gpucache, 'ab', '--json', '--baseline', '--conf', 'expandable_segments:True',
                  '--repeat', '3', '--', program, 'churn'])
    report = json.loads(result.stdout)
    baseline, cached = report['configurations']
    if report['repeat'] != 3 or report['program'][1:] != ['churn']:
        fail(f'header: {report}')
    if not baseline['baseline'] or cached['label'] != 'expandable_segments:True':
        fail(f'columns: {[c["label"] for c in report["configurations"]]}')
    for column in (baseline, cached):
        if [r['status'] for r in column['runs']] != ['exit 0'] * 3 or column['succeeded'] != 3:
            fail(f'{column["label"]} runs: {column["runs"]}')
        for key, value in column['median'].items():
            values = sorted(r['figures'][key] for r in column['runs'])
            if value != values[1]:
                fail(f'{column["label"]} median {key} {value}, runs {values}')
    if baseline['median']['driver_allocations'] != 490 or baseline['median']['passthrough_calls'] < 490:
        fail(f'baseline: {baseline["median"]}')
    crashed = json.loads(run([gpucache, 'ab', '--json', '--', program, 'crash'], expect=1).stdout)
    column, = crashed['configurations']
    if column['median'] is not None or column['runs'][0]['status'] != 'SIGSEGV':
        fail(f'crashed run: {column}')


def case_ab_charts(gpucache, program, checker, work, **_):
    svg, snapshot = f'{work}/chart.svg', f'{work}/snapshot.json'
    run([gpucache, 'ab', '--baseline', '--conf', '', '--conf', 'expandable_segments:True',
         '--svg', svg, '--snapshot', snapshot, '--', program, 'churn'])
    if shutil.which('xmllint'):
        run(['xmllint', '--noout', svg])
    text = open(svg).read()
    for label in ('baseline', 'default', 'expandable_segments:True', 'seconds since the first'):
        if label not in text:
            fail(f'chart lacks {label!r}')
    if text.count('<polyline') != 6:
        fail(f'{text.count("<polyline")} curves for three configurations')
    # Rendered, the legend and labels stay inside the picture.
    fits = run([sys.executable, os.path.join(os.path.dirname(__file__), 'check_svg_fits.py'), svg],
               expect=None)
    if fits.returncode != 0:
        fail(f'the chart does not fit: {fits.stdout}{fits.stderr}')
    # The chart's peak allocated is the table's: the block sizes the
    # statistics count, not the requested bytes (churn's sizes round up).
    measured = f'{work}/measured.svg'
    table = json.loads(run([gpucache, 'ab', '--json', '--svg', measured, '--', program,
                            'churn']).stdout)
    peak = table['configurations'][0]['median']['peak_allocated']
    legend = re.search(r'peak ([0-9.]+ [KMG]?i?B) allocated', open(measured).read())
    if not legend or legend.group(1) != format_bytes(peak):
        fail(f'the chart says peak {legend and legend.group(1)} allocated, the table '
             f'{format_bytes(peak)}')
    snapshots = [f'{work}/snapshot-1.json', f'{work}/snapshot-2.json']
    check_snapshots(checker, snapshots)
    if not all(s['is_expandable'] for s in json.load(open(snapshots[1]))['segments']):
        fail('the second snapshot is not the expandable configuration')
    # allocator_settings holds the user's configuration, not the paths the
    # command added for its own reports.
    for path, expected in zip(snapshots, ['', 'expandable_segments:True']):
        settings = json.load(open(path))['allocator_settings']['PYTORCH_CUDA_ALLOC_CONF']
        if settings != expected:
            fail(f'{path}: allocator_settings records {settings!r}, expected {expected!r}')
    # One configuration: the file itself, as a pickle when named so.
    pickled = f'{work}/one.pickle'
    run([gpucache, 'ab', '--snapshot', pickled, '--', program, 'churn'])
    if open(pickled, 'rb').read(2) != b'\x80\x02':
        fail('--snapshot .pickle did not write a pickle')
    check_snapshots(checker, [pickled])
    # Existing files are not overwritten (case ab-refuses checks every path).
    before = open(svg).read()
    again = run([gpucache, 'ab', '--svg', svg, '--', program, 'churn'], expect=2)
    if open(svg).read() != before or 'file exists' not in again.stderr or again.stdout:
        fail(f'existing chart: {again.stderr}')


def case_library_files(program, checker, library, gpucache, work, **_):
    configuration = (f'report:{work}/report-%p.json,summary:{work}/summary.txt,'
                     f'trace:{work}/trace.txt,trace_csv:{work}/trace.csv,'
                     f'snapshot:{work}/snapshot.pickle')
    result = run([program, 'churn'], env=preload_env(library, configuration))
    reports = glob.glob(f'{work}/report-*.json')
    if len(reports) != 1:
        fail(f'reports: {reports} {result.stderr}')
    report = json.load(open(reports[0]))
    device, = report['devices']
    if device['stats']['num_device_alloc'] < 1 or device['events']['recorded'] < 100:
        fail(f'report: {device}')
    # Laid out for reading: two spaces a level, one statistic per line.
    lines = open(reports[0]).read().splitlines()
    if not any(line.startswith('        "num_device_alloc": ') for line in lines) or \
            max(len(line) for line in lines) > 120:
        fail(f'the report is not laid out one statistic per line: {lines[:8]}')
    if report['configuration']['keys']['trace']['source'] != 'string':
        fail('the configuration in the report is not the one given')
    if 'PyTorch CUDA memory summary, device ID 0' not in open(f'{work}/summary.txt').read():
        fail('summary file')
    if not open(f'{work}/trace.txt').read().startswith('gpucache-trace 2 start_ns '):
        fail('trace file')
    check_snapshots(checker, [f'{work}/snapshot.pickle'])
    replayed = run([gpucache, 'replay', '--json', f'{work}/trace.csv'])
    if not json.loads(replayed.stdout)['configurations'][0]['completed']:
        fail('the CSV trace does not replay')
    # The library's own trace replays too, exactly as its CSV twin does.
    compact = json.loads(run([gpucache, 'replay', '--json', f'{work}/trace.txt']).stdout)
    csv = json.loads(replayed.stdout)
    if compact['format'] != 'gpucache trace' or compact['events'] != csv['events']:
        fail(f"the trace: file replays as {compact['format']} with {compact['events']} events, "
             f"its CSV with {csv['events']}")
    def figures(report):
        """The figures without the timings, which differ from run to run."""
        def untimed(value):
            if isinstance(value, dict):
                return {key: untimed(item) for key, item in value.items() if 'seconds' not in key}
            return value
        return [untimed(entry) for entry in report['configurations']]
    if figures(compact) != figures(csv):
        fail('the trace: file and its CSV twin replay to different figures')


def case_library_devices(program, checker, library, gpucache, work, **_):
    """Two devices: one snapshot with both devices' segments and traces, and
    a trace whose replay takes one device at a time."""
    env = preload_env(library, f'snapshot:{work}/snap.json,report:{work}/report.json,'
                               f'trace:{work}/trace.txt')
    env['GPUSIM_DEVICES'] = '2'
    run([program, 'devices'], env=env)
    check_snapshots(checker, [f'{work}/snap.json'])
    snapshot = json.load(open(f'{work}/snap.json'))
    if len(snapshot['device_traces']) != 2 or not all(snapshot['device_traces']):
        fail(f'device traces: {[len(t) for t in snapshot["device_traces"]]}')
    if {s['device'] for s in snapshot['segments']} != {0, 1}:
        fail('segments of both devices expected')
    report = json.load(open(f'{work}/report.json'))
    if [d['device'] for d in report['devices']] != [0, 1]:
        fail(f'report devices: {report["devices"]}')
    both = run([gpucache, 'replay', f'{work}/trace.txt'], expect=2)
    if 'the trace holds devices 0 and 1 (choose one with --device)' not in both.stderr:
        fail(f'replay of a two-device trace: {both.stderr!r}')
    one = json.loads(run([gpucache, 'replay', '--json', '--device', '1', f'{work}/trace.txt']).stdout)
    if one['format'] != 'gpucache trace' or not one['configurations'][0]['completed']:
        fail(f'replay of device 1: {one["format"]}')


def case_library_threads(program, checker, library, work, **_):
    """Four threads allocate at once while the snapshot signal arrives: the
    snapshots (at the signal, at exit) and the trace stay consistent."""
    conf = (f'snapshot:{work}/snap.json,snapshot_signal:SIGUSR1,trace:{work}/trace.txt,'
            f'expandable_segments:True')
    run([program, 'threads'], env=preload_env(library, conf))
    check_snapshots(checker, [f'{work}/snap-signal-1.json', f'{work}/snap.json'])
    header = open(f'{work}/trace.txt').readline().split()
    final = json.load(open(f'{work}/snap.json'))
    if int(header[5]) != len(final['device_traces'][0]):
        fail(f'the trace has {header[5]} events, the final snapshot '
             f'{len(final["device_traces"][0])}')
    # The threads' allocations carry their stacks from the program's CUDA call
    # outwards, with none of the library's frames (under TSan too, where the
    # library unwinds with glibc's backtrace()).
    allocs = [e for e in final['device_traces'][0] if e['action'] == 'alloc']
    unnamed = [e for e in allocs if not e['frames'] or
               'sim/runtime/' not in e['frames'][0]['filename'] or
               'thread_work' not in [f['name'] for f in e['frames']]]
    if not allocs or unnamed:
        fail(f'{len(unnamed)} of {len(allocs)} allocations lack the thread_work frame: '
             f'{unnamed[0]["frames"] if unnamed else ""}')


def case_library_oom(program, checker, library, work, **_):
    for configuration in ('', 'expandable_segments:True'):
        directory = tempfile.mkdtemp(dir=work)
        conf = ','.join(filter(None, [configuration, f'snapshot:{directory}/snap-%p.json']))
        env = preload_env(library, conf)
        env['GPUSIM_MEMORY'] = '200MiB'
        result = run([program, 'oom'], env=env)
        oom = glob.glob(f'{directory}/snap-*-oom-1.json')
        final = [p for p in glob.glob(f'{directory}/snap-*.json') if '-oom-' not in p]
        if len(oom) != 1 or len(final) != 1:
            fail(f'{configuration or "default"}: snapshots {os.listdir(directory)} {result.stderr}')
        check_snapshots(checker, oom + final)
        at_oom = json.load(open(oom[0]))
        trace = at_oom['device_traces'][0]
        if trace[-1]['action'] != 'oom':
            fail(f'the OOM snapshot ends with {trace[-1]}')
        held = sum(s['allocated_size'] for s in at_oom['segments'])
        if held < 100 << 20:
            fail(f'the OOM snapshot holds {held} bytes: written after frees?')


def case_library_signal(program, checker, library, work, **_):
    conf = f'snapshot:{work}/snap.json,snapshot_signal:SIGUSR1'
    run([program, 'signal'], env=preload_env(library, conf))
    signalled = f'{work}/snap-signal-1.json'
    if not os.path.exists(signalled):
        fail(f'no snapshot after the signal: {os.listdir(work)}')
    check_snapshots(checker, [signalled, f'{work}/snap.json'])
    at_signal = json.load(open(signalled))
    if sum(s['allocated_size'] for s in at_signal['segments']) < 1 << 20:
        fail('the signal snapshot does not hold the first buffer')


def case_library_round_trip(program, library, gpucache, work, **_):
    """A snapshot the library wrote, replayed offline, gives the same peaks.
    Stitching is off for the expandable run: which handles a growth may move
    depends on which fences have completed, which on the simulated device is
    a matter of timing, while the replay completes every fence when asked."""
    for configuration in ('', 'expandable_segments:True,expandable_segments_stitch:False'):
        directory = tempfile.mkdtemp(dir=work)
        conf = ','.join(filter(None, [configuration, f'snapshot:{directory}/snap.json',
                                      f'report:{directory}/report.json']))
        run([program, 'ordered'], env=preload_env(library, conf))
        recorded = json.load(open(f'{directory}/report.json'))['devices'][0]['stats']
        replayed = run([gpucache, 'replay', '--json', '--conf', configuration,
                        f'{directory}/snap.json'])
        stats = json.loads(replayed.stdout)['configurations'][0]['stats']
        for key in ('allocated_bytes.all.peak', 'reserved_bytes.all.peak',
                    'requested_bytes.all.peak'):
            if stats[key] != recorded[key]:
                fail(f'{configuration or "default"}: {key} replayed {stats[key]}, '
                     f'recorded {recorded[key]}')


EXISTS = 'the file exists (gpucache never overwrites a file; remove it or put %p in the path)'
LINK = 'the path is a symbolic link (gpucache never follows one)'


def refused_paths(work, name):
    """An existing file, a symlink to an existing file and a dangling
    symlink named `name` (each in a folder of its own), with the reason each
    must be refused for and a check that nothing was written."""
    cases = []
    for kind in ('existing', 'linked', 'dangling'):
        folder = tempfile.mkdtemp(dir=work)
        path, target = f'{folder}/{name}', f'{folder}/target'
        if kind == 'existing':
            open(path, 'w').write('mine')
            cases.append((folder, path, EXISTS, lambda p=path: open(p).read() == 'mine'))
        elif kind == 'linked':
            open(target, 'w').write('theirs')
            os.symlink(target, path)
            cases.append((folder, path, LINK, lambda t=target: open(t).read() == 'theirs'))
        else:
            os.symlink(target, path)
            cases.append((folder, path, LINK, lambda t=target: not os.path.exists(t)))
    return cases


def one_line(stderr, expected, where):
    lines = [line for line in stderr.splitlines() if line.startswith('gpucache')]
    if lines != [expected]:
        fail(f'{where}: expected the one line {expected!r}, got {stderr!r}')


def case_library_refuses(program, library, work, **_):
    """Every file the library writes (report, summary, both traces, the
    snapshot at exit, at a signal and at an OOM) is refused when its path
    exists or is a symlink; the program is not disturbed."""
    writers = [  # (key, file name, what, program mode, path the key names)
        ('report', 'report.json', 'report', 'churn', None),
        ('summary', 'summary.txt', 'summary', 'churn', None),
        ('trace', 'trace.txt', 'trace', 'churn', None),
        ('trace_csv', 'trace.csv', 'trace', 'churn', None),
        ('snapshot', 'snap.json', 'snapshot', 'churn', None),
        ('snapshot', 'snap-signal-1.json', 'snapshot', 'signal', 'snap.json'),
        ('snapshot', 'snap-oom-1.json', 'snapshot', 'oom', 'snap.json'),
    ]
    for key, name, what, mode, configured in writers:
        for folder, path, reason, untouched in refused_paths(work, name):
            conf = f'{key}:{folder}/{configured or name}'
            if mode == 'signal':
                conf += ',snapshot_signal:SIGUSR1'
            if mode == 'oom':
                conf += ',oom_message:False'  # the refusal must be the only line
            env = preload_env(library, conf)
            if mode == 'oom':
                env['GPUSIM_MEMORY'] = '200MiB'
            result = run([program, mode], env=env)
            if not untouched():
                fail(f'{key} {path}: written over')
            expected = f'gpucache: cannot write the {what} to {path}: {reason}'
            if configured:
                # The snapshot at exit is written beside it, as usual.
                if not os.path.exists(f'{folder}/{configured}'):
                    fail(f'{key}: no final snapshot beside the refused {name}')
            lines = [line for line in result.stderr.splitlines() if line.startswith('gpucache')]
            if expected not in lines or len(lines) != 1:
                fail(f'{key} {path}: expected the one line {expected!r}, got {result.stderr!r}')
    result = run([program, 'exit3'], expect=3,
                 env=preload_env(library, f'report:{work}/none/r.json'))
    one_line(result.stderr, f'gpucache: cannot write the report to {work}/none/r.json: No such '
             'file or directory', 'missing directory')


def case_ab_refuses(gpucache, program, work, **_):
    """ab refuses an --svg or --snapshot path (every FILE-N.ext with several
    configurations) that exists or is a symlink before the first run: the
    program never starts (it would leave a marker), nothing is written."""
    marker = f'{work}/started'
    command = ['/bin/sh', '-c', f'touch {marker}; exec {program} churn']
    for option, what, name, confs in (
            ('--svg', 'chart', 'chart.svg', []),
            ('--snapshot', 'snapshot', 'snap.pickle', []),
            ('--snapshot', 'snapshot', 'snap-2.json', ['--conf', '', '--conf',
                                                       'expandable_segments:True'])):
        for folder, path, reason, untouched in refused_paths(work, name):
            given = path.replace('-2.json', '.json')
            result = run([gpucache, 'ab', '--baseline', *confs, option, given, '--', *command],
                         expect=2)
            if os.path.exists(marker):
                fail(f'{option} {path}: the program ran before the path was refused')
            if not untouched() or os.path.exists(f'{folder}/snap-1.json'):
                fail(f'{option} {path}: written')
            one_line(result.stderr, f'gpucache: cannot write the {what} to {path}: {reason}',
                     f'ab {option} {path}')
            if result.stdout:
                fail(f'ab {option} {path}: printed {result.stdout!r}')
    # A path that is free is written, after the runs.
    run([gpucache, 'ab', '--svg', f'{work}/fresh.svg', '--', *command])
    if not os.path.exists(marker) or not os.path.exists(f'{work}/fresh.svg'):
        fail('ab with a free --svg path did not run or did not write it')


def case_check(gpucache, program, work, **_):
    """gpucache check: PASS when the program behaves the same under the
    library, FAIL (exit 1) with the first difference when it does not."""
    same = run([gpucache, 'check', '--', program, 'churn'])
    if same.stdout.count('PASS') != 2 or \
            'all 2 configurations behave as the program alone' not in same.stdout:
        fail(f'check on churn:\n{same.stdout}')
    match = re.search(r"PASS  '': exit 0, same output; driver allocations (\d+) -> (\d+)",
                      same.stdout)
    if not match or int(match.group(1)) < 400 or int(match.group(2)) >= int(match.group(1)):
        fail(f'driver allocation reduction missing or wrong:\n{same.stdout}')
    # Reading memory it never wrote: the simulated driver's fresh memory starts
    # 0xa5, a cached block holds whatever the segment held.
    stale = run([gpucache, 'check', '--conf', '', '--', program, 'stale'], expect=1)
    if not re.search(r"FAIL  '': output differs at compared line 2: \"first bytes [0-9a-f]{8}\" "
                     r"here, \"first bytes a5a5a5a5\" alone", stale.stdout) or \
            '1 of 2 runs failed' not in stale.stdout:
        fail(f'check on stale:\n{stale.stdout}')
    ignored = run([gpucache, 'check', '--conf', '', '--ignore', '^first bytes', '--', program,
                   'stale'])
    if "PASS  ''" not in ignored.stdout or '(2 compared)' not in ignored.stdout:
        fail(f'--ignore:\n{ignored.stdout}')
    # A different exit status is a failure too, with the program's last error line.
    status = run([gpucache, 'check', '--conf', 'max_split_size_mb:64', '--expect-failure', '--',
                  program, 'exit3'])
    if "PASS  'max_split_size_mb:64': exit 3" not in status.stdout:
        fail(f'same failing status must pass with --expect-failure:\n{status.stdout}')
    # Without it, a program that fails on its own fails the check.
    failing = run([gpucache, 'check', '--conf', '', '--', program, 'exit3'], expect=1)
    if 'FAIL  the program alone: exit 3' not in failing.stdout:
        fail(f'a failing program must fail the check:\n{failing.stdout}')
    bad = run([gpucache, 'check', '--ignore', '(', '--', program], expect=2)
    if bad.stderr.count('\n') != 1 or 'not an extended regular expression' not in bad.stderr:
        fail(f'bad pattern: {bad.stderr!r}')
    refused = run([gpucache, 'check', '--conf', 'report:x.json', '--', program], expect=2)
    if 'sets report, which the command sets itself' not in refused.stderr:
        fail(f'report key: {refused.stderr}')
    missing = run([gpucache, 'check', '--', f'{work}/no-such-program'], expect=127)
    if 'no-such-program' not in missing.stderr:
        fail(f'missing program: {missing.stderr}')


def case_sim_option(gpucache, program, work, **_):
    """--sim puts the program on this build's simulated device without the
    caller's LD_LIBRARY_PATH, with the race detector on."""
    bare = {'LD_LIBRARY_PATH': ''}
    checked = run([gpucache, 'check', '--sim', '--sim-memory', '256MiB', '--', program, 'churn'],
                  env=bare)
    if checked.stdout.count('PASS') != 2:
        fail(f'check --sim:\n{checked.stdout}')
    ran = run([gpucache, 'run', '--sim', '--', program, 'churn'], env=bare)
    if 'exit 0 after' not in ran.stderr:
        fail(f'run --sim:\n{ran.stderr}')
    compared = run([gpucache, 'ab', '--sim', '--', program, 'churn'], env=bare)
    if 'driver allocations' not in compared.stdout:
        fail(f'ab --sim:\n{compared.stdout}')
    # A race fails the run, the program's own too.
    racy = run([gpucache, 'check', '--sim', '--conf', '', '--', program, 'racy'], expect=1,
               env=bare)
    if racy.stdout.count('the race detector reported: race: cuMemsetD8Async') != 2 or \
            'FAIL  the program alone' not in racy.stdout:
        fail(f'check --sim on a race:\n{racy.stdout}')
    quiet = run([gpucache, 'check', '--sim', '--no-racecheck', '--conf', '', '--', program,
                 'racy'], env=bare)
    if "PASS  ''" not in quiet.stdout:
        fail(f'--no-racecheck:\n{quiet.stdout}')
    lost = run([gpucache, 'check', '--sim', '--', program], expect=127,
               env={'GPUCACHE_SIM': f'{work}/nowhere'})
    if lost.stderr.count('\n') != 1 or 'GPUCACHE_SIM' not in lost.stderr:
        fail(f'missing sim: {lost.stderr!r}')
    misplaced = run([gpucache, 'run', '--sim-memory', '1GiB', '--', program], expect=2)
    if 'apply only with --sim' not in misplaced.stderr:
        fail(f'--sim-memory without --sim: {misplaced.stderr!r}')


def main():
    case, gpucache, program, checker, library = sys.argv[1:6]
    with tempfile.TemporaryDirectory() as work:
        globals()['case_' + case.replace('-', '_')](gpucache=gpucache, program=program,
                                                    checker=checker, library=library, work=work)
    print(f'{case}: ok')


if __name__ == '__main__':
    main()
