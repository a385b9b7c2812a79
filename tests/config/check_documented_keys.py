#!/usr/bin/env python3
"""README.md and config/README.md list exactly the configuration keys of the
table (config/config_keys.def), as `gpucache config` prints them.

config/README.md: the first column of the tables under "PyTorch's keys" and
"gpucache's keys" names every key once (an alias written as `_suffix` is not
a key of its own). README.md: under "Configuration", the first column of the
key table and the paragraph of remaining keys ("The remaining PyTorch keys
...", where `pinned_*` stands for every key starting with pinned_) name
every key. usage: check_documented_keys.py GPUCACHE SOURCE_ROOT"""
import json
import os
import re
import subprocess
import sys

tool, root = sys.argv[1], sys.argv[2]
environment = {k: v for k, v in os.environ.items()
               if k not in ("GPUCACHE_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")}
keys = list(json.loads(subprocess.run([tool, "config"], env=environment, check=True,
                                      capture_output=True, text=True).stdout)["keys"])
KEY = re.compile(r"`([a-z0-9_]+\*?)`")


def section(path, title):
    """The lines of the '## title' section of `path`."""
    lines, inside = [], False
    with open(os.path.join(root, path), encoding="utf-8") as text:
        for line in text:
            if line.startswith("## "):
                inside = line[3:].strip() == title
            elif inside:
                lines.append(line.rstrip("\n"))
    return lines


def first_column_names(lines):
    names = []
    for line in lines:
        if line.startswith("| `"):
            names += [n for n in KEY.findall(line.split("|")[1]) if not n.startswith("_")]
    return names


def expand(names):
    expanded = []
    for name in names:
        if name.endswith("*"):
            expanded += [k for k in keys if k.startswith(name[:-1])]
        else:
            expanded.append(name)
    return expanded


failures = []


def compare(where, names):
    listed = set(names)
    missing = [k for k in keys if k not in listed]
    unknown = sorted(listed - set(keys))
    repeated = sorted({n for n in names if names.count(n) > 1})
    if missing:
        failures.append(f"{where}: keys of the table not listed: {', '.join(missing)}")
    if unknown:
        failures.append(f"{where}: listed but not keys of the table: {', '.join(unknown)}")
    if repeated:
        failures.append(f"{where}: listed more than once: {', '.join(repeated)}")


compare("config/README.md",
        first_column_names(section("config/README.md", "PyTorch's keys")) +
        first_column_names(section("config/README.md", "gpucache's keys")))

readme = section("README.md", "Configuration")
paragraph = []
for index, line in enumerate(readme):
    if line.startswith("The remaining PyTorch keys"):
        for following in readme[index:]:
            if not following.strip():
                break
            paragraph.append(following.split("are accepted")[0])
            if "are accepted" in following:
                break
compare("README.md", expand(first_column_names(readme) + KEY.findall(" ".join(paragraph))))

for failure in failures:
    print(failure)
if failures:
    sys.exit(1)
print(f"{len(keys)} keys, listed exactly in README.md and config/README.md")
