#!/usr/bin/env python3
"""The onchip forward's groups in parts, as the device answers them: for every shape bench.py
times (the suite, the video shape, the odd ones), fp16 and bf16, both layouts, hipgn_profiler
--list's instances that hold the group in parts, with their parts, rounds of clusters and the
clusters the device runs at once, and the heuristic's choice. Only a GPU answers the rounds
(without one the lines carry the parts alone). The rounds decide between onchip configurations
(runtime/src/heuristics.cpp, better()); beside bench.py --best's instance times this shows what
they were asked and what they said.

    python3 bench/parts_rounds.py --profiler build-gpu/profiler/hipgn_profiler [--ops fwd]
"""
import argparse
import subprocess

import bench  # the shapes bench.py times (load_shapes), declared once there

DTYPES = {"float16": "f16", "bfloat16": "bf16"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profiler", required=True)
    ap.add_argument("--ops", default="fwd")
    ap.add_argument("--layouts", default="cf,cl")
    args = ap.parse_args()
    shapes, _ = bench.load_shapes("all")
    for name, (n, c, spatial, g) in shapes.items():
        for op in args.ops.split(","):
            for layout in args.layouts.split(","):
                for dtype, short in DTYPES.items():
                    cmd = [args.profiler, "--list", "--op", op, "-n", str(n), "-c", str(c), "-s",
                           ",".join(map(str, spatial)), "-g", str(g), "--dtype", short, "--layout", layout,
                           "--act", "swish"]
                    out = subprocess.run(cmd, capture_output=True, text=True).stdout.splitlines()
                    parts = [line.strip() for line in out if " parts" in line]
                    if not parts:
                        continue
                    chosen = next((line.split(None, 1)[1] for line in out if line.startswith("heuristic:")), "?")
                    print(f"{name} {dtype} {layout} {op}: heuristic {chosen}")
                    for line in parts:
                        print(f"    {line}")


if __name__ == "__main__":
    main()
