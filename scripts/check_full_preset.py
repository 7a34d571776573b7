#!/usr/bin/env python3
"""Fails when a configuration of the full preset that the default preset lacks does not compile.

The full preset (HIPGN_PRESET=full: the autotuner's search space) takes half an hour of CPU to
build, so neither CI nor scripts/gpu_check.sh builds it, and its 16-bit vector-1 instances
stopped compiling for a day without anyone seeing it (bench/NOTES.md, "Where the eighth session
of 2026-11-27 ended"). What the default build compiles, the full one compiles too; what only
the full preset has are other (op, x dtype, layout, family, vector) combinations. This compiles
one instance of each such combination (device code only, nvcc -cubin for sm_90, the build's
flags), a few minutes on two cores, after a default build made the vocabulary headers.

Usage: scripts/check_full_preset.py [BUILD_DIR] [--jobs N]"""
import argparse
import concurrent.futures
import os
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from codegen import enumerate as enum  # noqa: E402
from codegen import render  # noqa: E402


def combination(s):
    """(op, x dtype, layout, family, vector) of an instance of x's own gamma dtype, else None."""
    return (s.op, s.x_dtype, s.layout, s.family, s.vector) if s.gamma_dtype == s.x_dtype else None


def compile_one(name: str, gen: pathlib.Path, build: pathlib.Path) -> tuple:
    src = gen / f"check_{name}.cu"
    src.write_text(f'#include "hipgn/kernels/launch.hpp"\n#include "hipgn/registry.hpp"\n#include "instances/{name}.inc"\n')
    includes = [gen, ROOT / "kernels/include", ROOT / "runtime/include", ROOT / "abi/include",
                build / "vocabulary/internal", ROOT / "api/include", build / "vocabulary/include"]
    cmd = ["nvcc", "-O3", "-DNDEBUG", "-arch=sm_90", "-std=c++17", "-x", "cu", "-cubin",
           "-o", str(gen / f"check_{name}.cubin"), str(src)] + [f"-I{i}" for i in includes]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return name, r.returncode, r.stderr


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", nargs="?", type=pathlib.Path, default=ROOT / "build")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    a = ap.parse_args()
    if not shutil.which("nvcc"):
        print("check_full_preset: skipped, no nvcc (the AMD build compiles the minimal preset)")
        return 0
    build = a.build.resolve()
    if not (build / "vocabulary/include").is_dir():
        print(f"check_full_preset: no vocabulary headers in {build}: configure a default build first")
        return 1
    work = build / "full-preset-check"
    shutil.rmtree(work, ignore_errors=True)
    (work / "instances").mkdir(parents=True)
    default = {combination(s) for s in enum.enumerate_specs("default")}
    picks = {}
    for s in sorted(enum.enumerate_specs("full"), key=lambda s: s.name):
        c = combination(s)
        if c and c not in default and s.act == "swish":
            picks.setdefault(c, s)
    for rel, text in render.render_all(list(picks.values()), {}).items():
        if rel.startswith("instances/"):
            (work / rel).write_text(text)
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        results = list(pool.map(lambda n: compile_one(n, work, build), sorted(s.name for s in picks.values())))
    failed = [(n, err) for n, rc, err in results if rc != 0]
    for n, err in failed:
        print(f"check_full_preset: {n} does not compile:\n{err[-2000:]}")
    print(f"check_full_preset: {len(results) - len(failed)} of {len(results)} combinations of the full preset "
          "that the default lacks compile (one instance each)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
