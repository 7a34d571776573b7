#!/usr/bin/env python3
"""Measures which block configurations ptxas spills: the data behind codegen/enumerate.py's
SPILLS table. Renders the instances of the chosen buckets (every candidate configuration of
the full preset, or one preset's), compiles them device code only with -Xptxas -v, a dozen to a
unit on every core, and prints each spilling configuration with its largest spill (bytes stored
plus loaded) and the instance that spilled it. Takes minutes: about a third of a second of CPU
an instance (nvcc 13, sm_90); not part of any build or test.

Usage: scripts/probe_spills.py [--preset full|candidates|...] [--dtypes bf16:f32,f16:f16]
                               [--layouts cf,cl] [--activations swish] [--arch sm_90]
e.g. scripts/probe_spills.py --preset candidates --dtypes bf16:f32"""
import argparse
import concurrent.futures
import os
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from codegen import enumerate as enum  # noqa: E402
from codegen import render  # noqa: E402
from codegen.spec import InstanceSpec  # noqa: E402

NAME = re.compile(r"gn_[a-z]+_[a-z0-9]+_[a-z0-9]+_[a-z]+_[a-z]+_[a-z]+_b\d+_v\d+_e\d+")


def compile_unit(out: pathlib.Path, k: int, names: list, arch: str) -> dict:
    """{instance name: largest spill in bytes} over the kernels of one unit."""
    src = out / f"probe_{k}.cu"
    src.write_text('#include "hipgn/kernels/launch.hpp"\n#include "hipgn/registry.hpp"\n' +
                   "".join(f'#include "instances/{n}.inc"\n' for n in names))
    cmd = ["nvcc", "-I", str(out), "-I", str(ROOT / "kernels/include"), "-I", str(ROOT / "runtime/include"),
           "-O3", "-DNDEBUG", "-std=c++17", f"-arch={arch}", "-cubin", "-Xptxas=-v", "-x", "cu", str(src),
           "-o", str(out / f"probe_{k}.cubin")]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"probe_spills: nvcc failed on unit {k}:\n{r.stderr[-2000:]}")
    spills, current = {n: 0 for n in names}, None
    for line in r.stderr.splitlines():
        m = re.search(r"(?:Compiling entry function|Function properties for) '([^']+)'", line)
        if m:
            n = NAME.search(m.group(1))
            current = n.group(0) if n else None
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and current:
            spills[current] = max(spills[current], int(m.group(1)) + int(m.group(2)))
    return spills


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="candidates", help="a preset, or candidates: all the full preset starts from")
    p.add_argument("--dtypes", default="bf16:f32", help="x:gamma pairs")
    p.add_argument("--layouts", default="cf,cl")
    p.add_argument("--activations", default="swish")
    p.add_argument("--arch", default="sm_90")
    a = p.parse_args()
    if a.preset == "candidates":
        specs = enum.specs_of(enum.CANDIDATES["fwd"], enum.CANDIDATES["bwd"])
    else:
        specs = enum.enumerate_specs(a.preset)
    pairs = {tuple(d.split(":")) for d in a.dtypes.split(",")}
    specs = [s for s in specs if (s.x_dtype, s.gamma_dtype) in pairs and s.layout in a.layouts.split(",")
             and s.act in a.activations.split(",")]
    with tempfile.TemporaryDirectory() as d:
        out = pathlib.Path(d)
        (out / "instances").mkdir()
        for rel, text in render.render_all(specs, {}).items():
            if rel.startswith("instances/"):
                (out / rel).write_text(text)
        names = [s.name for s in specs]
        units = [names[i:i + 12] for i in range(0, len(names), 12)]
        spills = {}
        with concurrent.futures.ThreadPoolExecutor(os.cpu_count()) as pool:
            for result in pool.map(lambda k: compile_unit(out, k, units[k], a.arch), range(len(units))):
                spills.update(result)
    worst = {}  # (op class, config name) -> (bytes, instance)
    for name, nbytes in spills.items():
        s = InstanceSpec.parse(name)
        vector = "max" if s.vector == enum._vmax(s.x_dtype) else s.vector
        key = ("fwd" if s.op == "fwd" else "bwd", enum.config_name((s.family, s.block, vector, s.per_thread)))
        if nbytes and nbytes > worst.get(key, (0, ""))[0]:
            worst[key] = (nbytes, name)
    print(f"probe_spills: {len(specs)} instances, {len(worst)} spilling configurations")
    for (op, config), (nbytes, name) in sorted(worst.items()):
        print(f"{op} {config}: {nbytes} bytes ({name})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
