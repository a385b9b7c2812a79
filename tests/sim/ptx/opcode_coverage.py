#!/usr/bin/env python3
"""Which PTX opcodes the interpreter accepts (the opcode table in
sim/ptx/ptx_parse.c) and which forms of each the instruction tests run
(the PTX text in tests/sim/ptx/test_ptx_*.c and the .ptx files there).
Fails, naming them, when an accepted opcode has no test.

Usage: opcode_coverage.py SOURCE_ROOT [--list]"""
import glob
import os
import re
import sys

# Accepted so that real kernels load, and deliberately without effect on
# results (hints, profiling, cache policy): no test can observe them.
NO_EFFECT = {"membar", "fence", "nanosleep", "prefetch", "prefetchu", "pmevent", "discard",
             "applypriority", "createpolicy"}


def accepted_opcodes(root):
    with open(os.path.join(root, "sim", "ptx", "ptx_parse.c")) as file:
        text = file.read()
    table = text[text.index("opcode_names[] = {"):]
    table = table[:table.index("};")]
    return sorted(set(re.findall(r'\{"([a-z0-9]+)", OP_', table)))


def tested_forms(root):
    """Instruction forms (opcode with its qualifiers) in the tests' PTX."""
    forms = {}
    sources = glob.glob(os.path.join(root, "tests", "sim", "ptx", "test_ptx_*.c"))
    sources += glob.glob(os.path.join(root, "tests", "sim", "ptx", "*.ptx"))
    instruction = re.compile(r'(?:^|[";{}:]|\\n)\s*(?:@!?%?[a-z0-9_]+\s+)?'
                             r'([a-z][a-z0-9]*(?:\.[a-z0-9_]+)*)(?:\s*;|\s+[%\[\{a-zA-Z0-9_-])')
    for path in sources:
        with open(path) as file:
            text = file.read()
        for match in instruction.finditer(text):
            form = match.group(1)
            forms.setdefault(form.split(".")[0], set()).add(form)
    return forms


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = sys.argv[1]
    opcodes = accepted_opcodes(root)
    forms = tested_forms(root)
    untested = [op for op in opcodes if op not in NO_EFFECT and op not in forms]
    if "--list" in sys.argv:
        for op in opcodes:
            if op in NO_EFFECT:
                print(f"{op}: accepted, no effect")
            else:
                print(f"{op}: {', '.join(sorted(forms.get(op, []))) or 'UNTESTED'}")
    tested = len(opcodes) - len(untested)
    print(f"{tested} of {len(opcodes)} accepted opcodes have tests "
          f"({len([op for op in opcodes if op in NO_EFFECT])} accepted without effect), "
          f"{sum(len(v) for k, v in forms.items() if k in opcodes)} forms tested")
    if untested:
        print("no test runs: " + ", ".join(untested))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
