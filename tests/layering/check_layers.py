#!/usr/bin/env python3
"""Every include points down the layers: config -> driver -> vmm -> allocator
-> report -> interpose, tools (the last two side by side, neither reaching
into the other). A file may include headers of its own folder (and its
subfolders) and of lower layers only; the simulated device (sim/) stands
alone: nothing outside it includes its headers, and it includes none of the
others. usage: check_layers.py SOURCE_ROOT"""
import os
import re
import sys

root = sys.argv[1]
LAYERS = {"config": 0, "driver": 1, "vmm": 2, "allocator": 3, "report": 4,
          "interpose": 5, "tools": 5, "sim": None}
include = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

owner = {}  # header file name -> top folder
for top in LAYERS:
    for folder, _, names in os.walk(os.path.join(root, top)):
        for name in names:
            if name.endswith(".h"):
                owner.setdefault(name, set()).add(top)

problems = []
checked = 0
for top, rank in LAYERS.items():
    for folder, _, names in os.walk(os.path.join(root, top)):
        for name in names:
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(folder, name)
            text = open(path, encoding="utf-8", errors="replace").read()
            checked += 1
            for header in include.findall(text):
                base = os.path.basename(header)
                tops = owner.get(base)
                if not tops or top in tops:
                    continue  # the C library, CUDA's headers, or its own folder
                for other in tops:
                    relative = os.path.relpath(path, root)
                    if rank is None or LAYERS[other] is None:
                        problems.append(f"{relative}: includes {header} of {other}/ "
                                        "(sim/ and the library do not share headers)")
                    elif LAYERS[other] >= rank:
                        problems.append(f"{relative}: includes {header} of {other}/, "
                                        f"which is not below {top}/")
for line in problems:
    print(line)
print(f"{checked} files checked, {len(problems)} includes point up or across")
sys.exit(1 if problems else 0)
