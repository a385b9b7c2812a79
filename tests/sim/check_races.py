#!/usr/bin/env python3
"""Runs program_races under GPUSIM_RACECHECK: one report line per race, exit
status 66 when a race was seen, abort() in abort mode, the race count in the
GPUSIM_STATS file, and the one-line refusal of a bad value."""
import json
import os
import signal
import subprocess
import sys
import tempfile

PROGRAM = sys.argv[1]
RACE_EXIT_STATUS = 66
failures = []


def run(scenario, racecheck, extra=None):
    environment = dict(os.environ)
    environment.pop("GPUSIM_RACECHECK", None)
    if racecheck is not None:
        environment["GPUSIM_RACECHECK"] = racecheck
    environment.update(extra or {})
    done = subprocess.run([PROGRAM, scenario], env=environment, capture_output=True, text=True,
                          timeout=60)
    races = [line for line in done.stderr.splitlines() if line.startswith("gpusim: race:")]
    return done, races


def expect(condition, what, done):
    if not condition:
        failures.append(f"{what}\n  status {done.returncode}\n  stderr: {done.stderr!r}")


done, races = run("unordered", "1")
expect(done.returncode == RACE_EXIT_STATUS, "a race makes the process exit with status 66", done)
expect(len(races) == 1, "the unordered write is reported exactly once", done)
if races:
    line = races[0]
    for part in ("cuMemsetD32Async", "(non-blocking)", "writes", "cuMemsetD8Async",
                 "(legacy default)", "wrote", "program_races+0x"):
        expect(part in line, f"the report names {part!r}", done)

done, races = run("ordered", "1")
expect(done.returncode == 0 and not races, "a synchronized second write is no race", done)

done, races = run("destroyed", "1")
expect(done.returncode == RACE_EXIT_STATUS and len(races) == 1 and "destroyed" in races[0],
       "a destroyed stream's write still races, named as destroyed", done)

for off in (None, "0"):
    done, races = run("unordered", off)
    expect(done.returncode == 0 and not races, f"GPUSIM_RACECHECK={off} detects nothing", done)

done, races = run("unordered", "abort")
expect(done.returncode == -signal.SIGABRT, "abort mode aborts", done)
expect(len(races) == 1, "abort mode prints the race first", done)

with tempfile.TemporaryDirectory() as folder:
    stats = os.path.join(folder, "stats.json")
    done, races = run("unordered", "1", {"GPUSIM_STATS": stats})
    expect(done.returncode == RACE_EXIT_STATUS, "the stats file does not change the status", done)
    try:
        with open(stats) as file:
            count = json.load(file).get("races")
    except (OSError, ValueError) as error:
        count = f"unreadable: {error}"
    expect(count == 1, f"the stats file counts 1 race (got {count})", done)

done, races = run("ordered", "yes")
lines = done.stderr.splitlines()
expect(done.returncode == 2 and len(lines) == 1 and "GPUSIM_RACECHECK" in lines[0]
       and "'yes'" in lines[0] and "abort" in lines[0],
       "a bad value is refused in one line with status 2", done)

for failure in failures:
    print("FAIL:", failure)
sys.exit(1 if failures else 0)
