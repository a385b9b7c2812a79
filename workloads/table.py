#!/usr/bin/env python3
"""Replays every workload family (several seeds) and every shared PyTorch
snapshot under the segment policies side by side, and prints one markdown
table: utilisation (peak allocated / peak reserved), the smallest device
on which the trace completes relative to its peak allocated, and the
driver allocations and calls of each policy.

usage: table.py GPUCACHE [--seeds 1,2,3] [--traces DIR] [--conf LABEL=STRING]...

GPUCACHE is the gpucache executable. Without --conf the policies are plain
segments, expandable segments with every key at its default, and
expandable segments as PyTorch has them (one class, one handle per growth,
no handle moved). Traces in DIR (default
../shared/traces/pytorch-snapshots from the repository) are read in place."""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import generate  # noqa: E402

DEFAULT_POLICIES = [
    ("plain", ""),
    ("expandable", "expandable_segments:True"),
    ("expandable as PyTorch",
     "expandable_segments:True,expandable_segments_stitch:False,"
     "expandable_segments_handles:growth"),
]


def replay(gpucache, trace, policies):
    command = [gpucache, "replay", "--min-device", "--json"]
    for _, configuration in policies:
        command += ["--conf", configuration]
    command.append(trace)
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(command)}: exit {result.returncode}: {result.stderr}")
    return json.loads(result.stdout)


def cells(report, policies):
    out = []
    by_configuration = {entry["configuration"]: entry for entry in report["configurations"]}
    for _, configuration in policies:
        entry = by_configuration[configuration]
        stats = entry.get("stats", {})
        peak = stats.get("allocated_bytes.all.peak", 0) or 1
        smallest = entry.get("smallest_device_memory")
        out.append({
            "utilisation": entry["utilisation"] if entry["completed"] else None,
            "min_device": smallest / peak if smallest else None,
            "allocations": stats.get("num_device_alloc"),
            "calls": entry.get("driver_calls"),
        })
    return out


def render(name, row):
    parts = []
    for cell in row:
        utilisation = "failed" if cell["utilisation"] is None else f"{100 * cell['utilisation']:.1f}%"
        minimum = "-" if cell["min_device"] is None else f"{cell['min_device']:.3f}x"
        parts.append(f"{utilisation} / {minimum} / {cell['allocations']} / {cell['calls']}")
    return f"| {name} | " + " | ".join(parts) + " |"


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("gpucache")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--traces", default=os.path.join(HERE, "..", "..", "shared", "traces",
                                                         "pytorch-snapshots"))
    parser.add_argument("--conf", action="append", default=[], metavar="LABEL=STRING")
    arguments = parser.parse_args()
    policies = DEFAULT_POLICIES
    if arguments.conf:
        policies = [tuple(item.split("=", 1)) if "=" in item else (item, item)
                    for item in arguments.conf]
    seeds = [int(seed) for seed in arguments.seeds.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="workloads-") as scratch:
        for family, function in generate.FAMILIES.items():
            for seed in seeds:
                trace = generate.Trace()
                function(generate.random.Random(seed), trace)
                path = os.path.join(scratch, f"{family}-{seed}.csv")
                with open(path, "x") as file:
                    file.write("\n".join(trace.rows) + "\n")
                rows.append((f"{family} seed {seed}", cells(replay(arguments.gpucache, path,
                                                                   policies), policies)))
        for path in sorted(glob.glob(os.path.join(arguments.traces, "*.pickle"))):
            rows.append((os.path.basename(path), cells(replay(arguments.gpucache, path, policies),
                                                       policies)))
    print("Each cell: utilisation / smallest device that completes, over peak allocated / "
          "driver allocations / driver calls.\n")
    print("| trace | " + " | ".join(label for label, _ in policies) + " |")
    print("|---|" + "---|" * len(policies))
    for name, row in rows:
        print(render(name, row))
    worst = []
    for index, (label, _) in enumerate(policies):
        values = [row[index]["utilisation"] for _, row in rows]
        completed = [value for value in values if value is not None]
        worst.append(f"{label}: worst {100 * min(completed):.1f}%"
                     + (f", {len(values) - len(completed)} failed" if len(completed) < len(values)
                        else "") if completed else f"{label}: every trace failed")
    print("\n" + "; ".join(worst))
    return 0


if __name__ == "__main__":
    sys.exit(main())
