#!/usr/bin/env python3
"""The workload generators (workloads/generate.py): each family is
deterministic for a seed, frees everything it allocates, differs between
seeds, and its trace replays to completion under plain and expandable
segments.

usage: check_workloads.py SOURCE_ROOT GPUCACHE"""
import json
import os
import random
import subprocess
import sys
import tempfile


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def main():
    root, gpucache = sys.argv[1:3]
    sys.path.insert(0, os.path.join(root, "workloads"))
    import generate

    with tempfile.TemporaryDirectory(prefix="workloads-") as scratch:
        for family, function in generate.FAMILIES.items():
            texts = []
            for seed in (1, 1, 2):
                trace = generate.Trace()
                function(random.Random(seed), trace)
                texts.append("\n".join(trace.rows) + "\n")
            if texts[0] != texts[1]:
                fail(f"{family}: seed 1 gives two different traces")
            if texts[0] == texts[2]:
                fail(f"{family}: seeds 1 and 2 give the same trace")
            live = set()
            for row in texts[0].splitlines()[1:]:
                _, _, action, pointer, _, _ = row.split(",")
                if action == "allocate":
                    live.add(pointer)
                elif pointer not in live:
                    fail(f"{family}: frees {pointer}, which is not live")
                else:
                    live.remove(pointer)
            if live:
                fail(f"{family}: {len(live)} allocations never freed")
            path = os.path.join(scratch, f"{family}.csv")
            with open(path, "w") as file:
                file.write(texts[0])
            result = subprocess.run([gpucache, "replay", "--json", "--conf", "",
                                     "--conf", "expandable_segments:True", path],
                                    capture_output=True, text=True)
            if result.returncode != 0:
                fail(f"{family}: replay exited {result.returncode}: {result.stderr}")
            for entry in json.loads(result.stdout)["configurations"]:
                if not entry["completed"]:
                    fail(f"{family}: did not complete under '{entry['configuration']}'")
            print(f"{family}: {len(texts[0].splitlines()) - 1} events, deterministic, replays")
    return 0


if __name__ == "__main__":
    sys.exit(main())
