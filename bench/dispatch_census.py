#!/usr/bin/env python3
"""Which built instances the heuristic chooses at all: every op, dtype pair, layout and
activation over a grid of shapes (N, C/G, G, spatial: the suite's kinds and odd ones, up to 4e8
elements), each problem asked of the library's automatic choice (hipgn_choose_instance), and
the instances counted. An instance no problem takes serves only explicit choice and tuning; one
that is besides never near the fastest of a row timed with every instance (bench.py --best, the
rows of --results) is a candidate to leave out of the preset (the issue: retire what no longer
wins). Asks the GPU present, whose choices use its compute units, clusters and occupancy; without
one the runtime's default target's, which differ where a rule asks the device (the onchip
parts), so run it on the GPU machine before acting on it (seconds: ~1.8 M problems in 14 s).

    python3 bench/dispatch_census.py [--results bench/results/h200/latest.json] [--near 1.03]
        [--manifest build/generated/manifest.json] [--shapes-of LABEL=REGEX ... [--sample K] [--offset F]]

With --shapes-of (repeatable), the problems whose chosen instance's name matches REGEX (say
`gn_bwd_f16_f16_cl_swish_resident`: an op, a dtype pair, a layout and an activation) are
printed, a line a label, as `LABEL --shape ...`: K bench.py --shape arguments spread over their
sizes (the smallest, the largest and quantiles between), so that a family's retirement can be
timed on what it takes today; nothing else is printed then.

With --manifest (the build's), each bucket's generic instance, which stays whatever chooses it
(it supports every valid problem of its bucket), is counted apart.
"""
import argparse
import collections
import json
import math
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, ROOT)
import hipgn  # noqa: E402  (the package of this checkout)
from codegen.enumerate import DTYPE_PAIRS  # noqa: E402  (the dtype pairs instances are built for)
from codegen.vocabulary import ACTIVATIONS, LAYOUTS, OPS  # noqa: E402  (the spellings, declared once)
BATCHES = (1, 2, 3, 4, 8, 16, 32)
CHANNELS_PER_GROUP = (1, 2, 3, 4, 5, 8, 10, 12, 16, 20, 30, 32, 40, 60, 64, 80, 128, 160, 256)
GROUPS = (1, 2, 4, 8, 16, 32, 64)
SPATIAL = ((), (1,), (2,), (3,), (5, 5), (7, 7), (8, 8), (13, 21), (16, 16), (25, 42), (32, 32), (31, 31),
           (56, 56), (64, 64), (97, 89), (100, 168), (128, 128), (152, 104), (200, 336), (256, 256), (512, 512),
           (8191,), (4096,), (7, 31, 37), (4, 16, 16), (20, 64, 64), (1, 1))
MAX_ELEMENTS = 4e8
MAX_CHANNELS = 4096


def shapes():
    for n in BATCHES:
        for cpg in CHANNELS_PER_GROUP:
            for g in GROUPS:
                c = cpg * g
                if c > MAX_CHANNELS:
                    continue
                for sp in SPATIAL:
                    elements = n * c
                    for s in sp:
                        elements *= s
                    if elements <= MAX_ELEMENTS:
                        yield n, c, sp, g


def near_fastest(path, near):
    """Instances within `near` of their row's fastest timed instance on some row of `path`."""
    with open(path, encoding="utf-8") as f:
        rows = json.load(f)["rows"]
    hit = set()
    for r in rows:
        times = r.get("instances") or {}
        if times:
            best = min(times.values())
            hit.update(name for name, t in times.items() if t <= near * best)
    return hit, sum(1 for r in rows if r.get("instances"))


def print_shapes(label, matched, sample, offset):
    """`sample` of the problems in `matched` (sorted by size), spread over their sizes (`offset` of
    a step past the quantiles: another sample of the same problems), as bench.py --shape
    arguments on one line after `label` (stdout), and a line that counts them (stderr)."""
    step = (len(matched) - 1) / max(1, sample - 1)
    picks = sorted({min(len(matched) - 1, round((i + offset) * step)) for i in range(sample)}) if matched else []
    print(f"--shapes-of {label}: {len(matched)} problems with a spatial size, {len(picks)} printed", file=sys.stderr)
    args = [label]
    for i in picks:
        _, n, c, sp, g = matched[i]
        dims = "x".join(map(str, sp))
        args.append(f"--shape census_{n}x{c}x{dims.replace('x', '_')}_g{g}={n},{c},{dims},{g}")
    print(" ".join(args))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", help="a bench.py --best latest.json: also say which unchosen instances were near a row's fastest")
    ap.add_argument("--near", type=float, default=1.03, help="near: within this factor of the row's fastest")
    ap.add_argument("--json", help="write {instance: problems that choose it} here")
    ap.add_argument("--manifest", help="the build's manifest.json: its generic instances counted apart")
    ap.add_argument("--shapes-of", metavar="LABEL=REGEX", action="append", default=[],
                    help="print LABEL and --shape arguments for problems whose chosen instance matches REGEX")
    ap.add_argument("--sample", type=int, default=12, help="how many problems --shapes-of prints")
    ap.add_argument("--offset", type=float, default=0.0,
                    help="--shapes-of's picks this share of a step past the quantiles (0.5: between the default's)")
    args = ap.parse_args()
    lib = hipgn.library()
    handle = lib.handle()
    print(f"device: {handle.device_name} ({handle.arch}, {handle.compute_units} compute units)"
          f"{'' if handle.has_device else ', none present: the runtime default target'}",
          file=sys.stderr if args.shapes_of else sys.stdout)
    chosen = collections.Counter()
    problems = 0
    of_regex = {label: re.compile(rx) for label, _, rx in (a.partition("=") for a in args.shapes_of)}
    matched = collections.defaultdict(set)  # label -> (elements, n, c, spatial, g) of its problems
    for n, c, sp, g in shapes():
        for op in OPS.names:
            for x, gamma in DTYPE_PAIRS:
                for layout in LAYOUTS.names:
                    for act in ACTIVATIONS.names:
                        name = handle.choose(hipgn.make_problem(op, n, c, list(sp), g, x, gamma, layout, act))
                        chosen[name] += 1
                        problems += 1
                        for label, rx in of_regex.items():
                            if sp and rx.search(name):
                                matched[label].add((n * c * math.prod(sp), n, c, sp, g))
    if of_regex:  # only the shapes on stdout, for a script to read
        for label in of_regex:
            print_shapes(label, sorted(matched[label]), args.sample, args.offset)
        return 0
    built = lib.instance_names()
    generic = set()
    if args.manifest:
        with open(args.manifest, encoding="utf-8") as f:
            generic = {i["name"] for i in json.load(f)["instances"] if i.get("generic")}
    never = [name for name in built if name not in chosen and name not in generic]
    unchosen_generic = sum(1 for name in generic if name not in chosen)
    print(f"{problems} problems: {len(chosen)} of {len(built)} built instances chosen, {len(never)} never"
          + (f" (and {unchosen_generic} generic instances, kept)" if args.manifest else ""))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(dict(sorted(chosen.items())), f, indent=1)
    hit, timed = near_fastest(args.results, args.near) if args.results else (set(), 0)
    def op_config(name):
        parts = name.split("_")  # gn, op, x, gamma, layout, act, family, block, vector, per-thread
        return parts[1], "_".join(parts[6:])

    by_config = collections.defaultdict(list)  # op and configuration -> unchosen instances
    for name in never:
        by_config[op_config(name)].append(name)
    of_config = collections.Counter(op_config(name) for name in built if name not in generic)
    for key, names in sorted(by_config.items()):
        near = [name for name in names if name in hit]
        note = f"; near the fastest on a timed row: {', '.join(near)}" if near else ""
        whole = " (the whole configuration)" if len(names) == of_config[key] else ""
        print(f"  {key[0]} {key[1]}: {len(names)} of {of_config[key]} never chosen{whole}{note}")
    if args.results:
        print(f"(near: within {args.near:.2f}x of the fastest on one of {timed} rows of {args.results})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
