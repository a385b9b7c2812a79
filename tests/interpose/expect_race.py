#!/usr/bin/env python3
"""Runs a program that must make the simulated device's race detector fire:
it passes when the program exits with the detector's status (66) and its
standard error holds at least one race line. Used for the tests that put a
reuse defect back, so they show the detector finds it whatever the timing.

    expect_race.py PROGRAM [ARGS...]

EXPECT_RACE_PRELOAD, when set, becomes the program's LD_PRELOAD: the library
(and a sanitizer runtime) is preloaded into the program, not into Python.
"""
import os
import subprocess
import sys

RACE_EXIT_STATUS = 66


def main():
    if len(sys.argv) < 2:
        print("usage: expect_race.py PROGRAM [ARGS...]", file=sys.stderr)
        return 2
    environment = dict(os.environ, GPUSIM_RACECHECK="1")
    preload = environment.pop("EXPECT_RACE_PRELOAD", None)
    if preload:
        environment["LD_PRELOAD"] = preload
    run = subprocess.run(sys.argv[1:], env=environment, capture_output=True, text=True,
                         timeout=120)
    races = [line for line in run.stderr.splitlines() if line.startswith("gpusim: race: ")]
    sys.stderr.write(run.stderr)
    if run.returncode != RACE_EXIT_STATUS or not races:
        print(f"expected the race detector to fire (status {RACE_EXIT_STATUS} and a race "
              f"line), got status {run.returncode} and {len(races)} race lines",
              file=sys.stderr)
        return 1
    print(f"{len(races)} races reported, as expected: {races[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
