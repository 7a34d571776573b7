"""16-byte global loads that wait for the one before: in `cuobjdump -sass` output, a LDG.E.128
whose destination is read before the next LDG.E.128 issues, in address order within a stretch
without loops (forward branches, such as a guarded slot's, inside it; waits() says more). Such
a load holds the next one back (one 16-byte load in flight a thread where the source asks for
several). ptxas does this where a register bound meets values it splits after the load: bf16's
channels-last stream forward took each Vec<bf16, 8> apart (PRMT) right after its load and ran
1.1x fp16's time (bench/NOTES.md, "bf16's stream loads one at a time"). A row is a place to
read the SASS, not a verdict: a use that the source needs before the next load (a pointer, a
dependent load) is reported too. Usage, on the GPU machine (cuobjdump comes with CUDA):

    cuobjdump -sass build/runtime/libhipgn.so | python3 bench/sass_loads.py - [--filter bf16]
    python3 bench/sass_loads.py saved.sass ...
"""
from __future__ import annotations

import argparse
import re
import sys

INSTRUCTION = re.compile(r"/\*([0-9a-f]+)\*/\s+(.*?)\s*;")
FUNCTION = re.compile(r"Function\s*:\s*(\S+)")
REGISTER = re.compile(r"\bR(\d+)(\.64)?")
TARGET = re.compile(r"\b0x([0-9a-f]+)\b")
INSTANCE = re.compile(r"gn_[a-z0-9]+_[a-z0-9]+_[a-z0-9]+_[a-z]+_[a-z]+_[a-z]+_b\d+_v\d+_e\d+")
# control transfers: a branch to a lower address closes a loop, and its target opens one
BRANCHES = ("BRA", "BRX", "JMP", "JMX", "CALL")
ENDS = ("EXIT", "RET")


def parse(lines):
    """{kernel: [(address, opcode, operands)]} of a cuobjdump -sass listing."""
    kernels, current = {}, None
    for line in lines:
        m = FUNCTION.search(line)
        if m:
            current = kernels.setdefault(m.group(1), [])
            continue
        m = INSTRUCTION.search(line)
        if m and current is not None:
            text = re.sub(r"^@!?U?P(\d+|T)\s+", "", m.group(2))
            opcode, _, rest = text.partition(" ")
            current.append((int(m.group(1), 16), opcode, [o.strip() for o in rest.split(",")] if rest else []))
    return kernels


def registers(operand):
    out = set()
    for m in REGISTER.finditer(operand):
        n = int(m.group(1))
        out.update((n, n + 1) if m.group(2) else (n,))
    return out


def reads(opcode, operands):
    """The registers an instruction reads: every operand of a store or an atomic, else all but
    the first (its destination), and the address registers of a load's brackets."""
    if opcode.startswith(("ST", "RED", "ATOM")):
        srcs = operands
    else:
        srcs = operands[1:] + [o for o in operands[:1] if "[" in o]
    return set().union(*(registers(o) for o in srcs)) if srcs else set()


def is_wide_load(opcode):
    return opcode.startswith("LDG") and ".128" in opcode


def waits(code):
    """Addresses of the 16-byte loads whose result is read before the next one issues, in address
    order within a loop-free stretch: forward branches (a guarded slot's block) do not end one,
    a loop's head and its closing branch do, so a loop's one load an iteration is not counted."""
    def backward(address, opcode, operands):
        return opcode.startswith(BRANCHES) and any(int(t, 16) < address for o in operands for t in TARGET.findall(o))
    heads = {int(t, 16) for a, op, ops in code if backward(a, op, ops) for o in ops for t in TARGET.findall(o)}
    stretches, run = [], []
    for ins in code:
        if ins[0] in heads and run:
            stretches.append(run)
            run = []
        run.append(ins)
        if backward(*ins) or ins[1].startswith(ENDS):
            stretches.append(run)
            run = []
    stretches.append(run)
    found = []
    for run in stretches:
        loads = [i for i, (_, op, _) in enumerate(run) if is_wide_load(op)]
        for a, b in zip(loads, loads[1:]):
            m = REGISTER.match(run[a][2][0]) if run[a][2] else None
            if not m:
                continue
            quad = set(range(int(m.group(1)), int(m.group(1)) + 4))
            if any(reads(op, ops) & quad for _, op, ops in run[a + 1:b]):
                found.append(run[a][0])
    return found


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", help="cuobjdump -sass listings; - for standard input")
    ap.add_argument("--filter", default="", help="regular expression on kernel names")
    ap.add_argument("--twins", action="store_true",
                    help="only bf16 kernels with more waiting loads than their fp16 twin (the same configuration)")
    a = ap.parse_args(argv)
    kernels = {}
    for f in a.files:
        with (sys.stdin if f == "-" else open(f)) as fh:
            kernels.update(parse(fh))
    found = {name: waits(code) for name, code in kernels.items() if not a.filter or re.search(a.filter, name)}
    # a kernel's fp16 twin: its mangled name with the instance's length prefix dropped and bf16 as f16
    def twin_key(name):
        return re.sub(r"\d+(gn_)", r"\1", name).replace("bf16_bf16", "f16_f16").replace("bf16_f32", "f16_f32")
    twins = {twin_key(name): waits(code) for name, code in kernels.items() if a.twins and "_f16_" in name}
    rows = []
    for name, w in found.items():
        if a.twins and ("bf16_" not in name or len(w) <= len(twins.get(twin_key(name), []))):
            continue
        if w:
            m = INSTANCE.search(name)
            rows.append((len(w), sum(is_wide_load(op) for _, op, _ in kernels[name]), m.group(0) if m else name, w))
    for n, loads, name, w in sorted(rows, key=lambda r: (-r[0], r[2])):
        print(f"{n:3d} of {loads:3d} 16-byte loads wait  {name}  at {', '.join(hex(x) for x in w[:6])}")
    print(f"{len(rows)} of {len(found)} kernels have a 16-byte load read before the next one issues"
          + (" (bf16, more than their fp16 twin)" if a.twins else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
