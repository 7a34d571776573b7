"""The 64-byte lines of the constant bank a kernel reads its parameters from, and how many of
them come before its first global load. A line's first read is a miss on the chain of each
workgroup of a compute unit's first wave, and a wavefront waits on the misses of its uniform
reads (ULDC, or a c[0x0][..] operand) one after another in program order (Nsight's stall_imc);
LDC's misses do not hold the wavefront. ptxas reads at its top the parameters that the code
before a kernel's first barrier uses, so the lines those fields lie on decide how many misses
precede x's load: abi/include/hipgn/params.hpp orders Params by this (bench/NOTES.md, "The
parameters' lines"). Lines below 0x200 are the driver's (0x0: the block's shape and the stack;
0x140: the cluster's), read as they come. Usage, on the GPU machine or wherever cuobjdump and a
cubin are (cuobjdump comes with CUDA):

    cuobjdump -sass build/runtime/libhipgn.so | python3 bench/param_lines.py - [--filter onchip]
"""
from __future__ import annotations

import argparse
import re
import sys

from sass_loads import parse

CONSTANT = re.compile(r"c\[0x0\]\[(0x[0-9a-f]+)\]")
FIRST_PARAMETER = 0x200  # the line of the first parameter (they start at 0x210)


def lines(code):
    """(blocking lines read before the first global load, every line read), as 64-byte line
    offsets of the parameters' part of bank 0."""
    before, every, loaded = [], [], False
    for _, opcode, operands in code:
        loaded = loaded or opcode.startswith("LDG")
        for m in CONSTANT.finditer(" ".join(operands)):
            line = int(m.group(1), 16) // 64 * 64
            if line < FIRST_PARAMETER:
                continue
            if line not in every:
                every.append(line)
            if not loaded and not opcode.startswith("LDC") and line not in before:
                before.append(line)
    return before, every


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sass", nargs="+", help="cuobjdump -sass listings ('-': standard input)")
    ap.add_argument("--filter", default="", help="only kernels whose name holds this")
    a = ap.parse_args()
    for path in a.sass:
        text = sys.stdin.read() if path == "-" else open(path).read()
        for kernel, code in parse(text.splitlines()).items():
            if a.filter in kernel:
                before, every = lines(code)
                print(f"{len(before)} before the first load, {len(every)} in all: "
                      f"{' '.join(hex(x) for x in before)} | {' '.join(hex(x) for x in every)}  {kernel}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
