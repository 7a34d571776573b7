#!/usr/bin/env python3
"""Fails when a build's kernels spill more than scripts/spill_baseline.json allows.

ptxas (-warn-spills, generated/CMakeLists.txt) names each kernel that spills and its bytes;
this reads those lines from a build log and compares each kernel's bytes (stores plus loads)
with the baseline: a kernel absent from it, or spilling more than it records, is a regression.
Only kernels that the log compiled are judged (an incremental build's log holds only what it
recompiled). Why it exists: the channels-first stream forward's waves ran 12-26% slower with
56-72 bytes of spills that no short A/B showed (bench/NOTES.md, "Where the fifth session of
2026-11-26 ended"). CI runs it on its cold build; scripts/gpu_check.sh on the GPU machine's.

Usage: scripts/check_spills.py BUILD_LOG [--baseline FILE] [--write] [--against OTHER_LOG]
  --write    rewrite the baseline from this log (a full default build's), after a change that
             spills less, or one whose spills were measured and accepted (say so in its commit)
  --against  judge the log against another build's log instead of the baseline (bench/ab_trees.sh:
             A's build against B's, since an A/B of a variant that spills where B does not
             measures the spill: the thirty-second session's first HIPGN_MERGE_EACH run, 136
             bytes, 1.20-1.44x, bench/NOTES.md, "Fixed latencies of the channels-last stream
             kernels"). Only the CUDA objects both logs built are judged: a warm machine's
             build of B that was up to date built none, and every kernel A spills then read as
             new (the thirty-third session's second A/B: "52 kernels spill more")"""
import argparse
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
WARNING = re.compile(r"Registers are spilled to local memory in function '([^']+)', (\d+) bytes spill stores, (\d+) bytes spill loads")
BUILT = re.compile(r"^\[\d+/\d+\] Building CUDA object (\S+)")
ABOUT = ("Kernels of the default preset that ptxas (nvcc 13, sm_90) spills, and their bytes (stores plus loads), "
         "as scripts/check_spills.py --write read them from a cold build's log. A kernel not listed must not spill.")


def spills_by_object(log: pathlib.Path) -> dict:
    """{object: {kernel: bytes}} over every CUDA object the log built, spilling or not: ninja
    prints a command's output (ptxas's warnings) after the line that names its object; warnings
    before any such line go under None."""
    built, current = {}, None
    for line in log.read_text(errors="replace").splitlines():
        m = BUILT.match(line)
        if m:
            current = m.group(1)
            built.setdefault(current, {})
        elif w := WARNING.search(line):
            found = built.setdefault(current, {})
            found[w.group(1)] = max(found.get(w.group(1), 0), int(w.group(2)) + int(w.group(3)))
    return built


def merged(built: dict, objects=None) -> dict:
    """{kernel: bytes} over the objects (all of them by default): a kernel compiled twice counts
    once, its largest."""
    found = {}
    for o in built if objects is None else objects:
        for k, v in built[o].items():
            found[k] = max(found.get(k, 0), v)
    return found


def past(found: dict, allowed: dict) -> dict:
    """{kernel: (bytes allowed, bytes now)} for each kernel of `found` that spills more than `allowed` has it."""
    return {k: (allowed.get(k, 0), v) for k, v in found.items() if v > allowed.get(k, 0)}


def show(worse: dict) -> None:
    for k, (was, now) in sorted(worse.items()):
        print(f"  {k}: {was} -> {now}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", type=pathlib.Path)
    ap.add_argument("--baseline", type=pathlib.Path, default=ROOT / "scripts" / "spill_baseline.json")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--against", type=pathlib.Path)
    a = ap.parse_args()
    if a.against:
        mine, theirs = spills_by_object(a.log), spills_by_object(a.against)
        objects = mine.keys() - {None}
        both = objects & theirs.keys()
        if len(both) < len(objects):
            print(f"check_spills: {len(objects) - len(both)} of {a.log.name}'s {len(objects)} CUDA objects were not built "
                  f"in {a.against.name} (its build was up to date there): their kernels' spills are not judged")
        worse = past(merged(mine, both), merged(theirs, both))
        show(worse)
        print(f"check_spills: {len(worse)} kernels spill more in {a.log.name} than in {a.against.name}"
              + (" (bytes there -> here): the A/B's times include the spills" if worse else ""))
        return 1 if worse else 0
    found = merged(spills_by_object(a.log))
    if a.write:
        a.baseline.write_text(json.dumps({"about": ABOUT, "kernels": dict(sorted(found.items()))}, indent=1) + "\n")
        print(f"check_spills: wrote {len(found)} spilling kernels to {a.baseline}")
        return 0
    allowed = json.loads(a.baseline.read_text())["kernels"]
    worse = past(found, allowed)
    better = sum(1 for k, v in found.items() if v < allowed.get(k, 0))
    if worse:
        print(f"check_spills: {len(worse)} kernels spill more than {a.baseline.name} allows (bytes allowed -> now):")
        show(worse)
        print("Read ptxas -v for them before any device time; if the spills are measured and accepted, --write.")
        return 1
    print(f"check_spills: {len(found)} spilling kernels in {a.log}, none past the baseline"
          + (f" ({better} spill less: --write to record it)" if better else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
