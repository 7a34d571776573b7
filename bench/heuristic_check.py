#!/usr/bin/env python3
"""The heuristic against measured per-instance times, without device time.

`bench.py --best` records, for each problem, the time of every built instance that supports it
(`instances` in bench/results/latest.json). This asks the library built now which instance its
automatic choice takes for each such problem (hipgn_choose_instance, the C API's; on a machine
without a GPU the runtime assumes its default target, an H100 of 132 compute units, which is
what the rows were measured on) and reports how often that choice is within the tolerance of the
fastest timed instance: the issue's target is 5% on 95% of the suite. A heuristic change can so
be judged on every measured row before it costs device time; a choice that names an instance
the row did not time (added since) is counted apart, never as a hit.

    python3 bench/heuristic_check.py [--results bench/results/latest.json] [--tolerance 1.05]
        [--min-within 0.95 --manifest build/generated/manifest.json]

Without --results, the rows are the set measured on the GPU present (bench/results/*/latest.json
by its meta's gpu: bench/results/h200 on an H200), another GPU's bench/results/latest.json (an
H100's), and without a GPU bench/results/h200: the runtime then assumes its default target, an
sm_90 part of 132 compute units with clusters of 16, which the H200 is but for its L2 (60 MB, not
50), and the H200's are the rows the sessions re-time (none has had an H100 since 2026-11-28,
so a rule change cannot re-time the H100's rows it moves).
Without a GPU the runtime cannot ask how many clusters of an onchip kernel in parts the device
runs at once (their rounds decide between onchip configurations: Instance::onchip_rounds), so
where its choice and the row's recorded one (the instance the device dispatched) are both onchip
instances, the recorded one is judged: the device's answer to the question the runtime here
cannot put (its register counts move it: bench/NOTES.md, "The parameters' lines, late"). Every
such row is still listed with --stale; the GPU machine's run of this check judges the library's
own choice on every row.
The library is found as `import hipgn` finds it (HIPGN_LIBRARY, else the source tree's build).
With --min-within it is a test (ctest's heuristic_on_measured_rows): exit status 1 below that
share of hits, 77 (skipped) for a build other than the default preset's full selection or on a
GPU other than the one the rows were measured on, whose choices the rows do not judge.
"""
import argparse
import json
import os
import pathlib
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import hipgn  # noqa: E402  (the package of this checkout)

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
NO_DEVICE = "h200"  # the set judged where no GPU is present (above)
DTYPES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}  # bench.py's names -> hipgn's


def problem_of(row):
    """The row's problem as bench.py ran it: [N, C, spatial..., G], gamma in x's dtype, Swish."""
    n, c, *spatial, groups = row["shape"]
    dtype = DTYPES[row["dtype"]]
    return hipgn.make_problem(row["op"], n, c, spatial, groups, dtype, dtype, row["layout"], "swish")


def results_of(handle):
    """The kept rows measured on the GPU present, else (another GPU) the default set (an H100's),
    and without a GPU the NO_DEVICE set where it is kept."""
    sets = [RESULTS / "latest.json"] + sorted(RESULTS.glob("*/latest.json"))
    if not handle.has_device and (RESULTS / NO_DEVICE / "latest.json").exists():
        return RESULTS / NO_DEVICE / "latest.json"
    if handle.has_device:
        for path in sets:
            with open(path, encoding="utf-8") as f:
                if json.load(f).get("meta", {}).get("gpu") == handle.device_name:
                    return path
    return sets[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", help="a bench.py latest.json (default: the set of the GPU present, above)")
    ap.add_argument("--tolerance", type=float, default=1.05, help="a hit is within this factor of the fastest")
    ap.add_argument("--misses", type=int, default=20, help="list at most this many misses, worst first")
    ap.add_argument("--min-within", type=float, help="fail below this share of rows within the tolerance")
    ap.add_argument("--manifest", help="the build's manifest.json: skip (77) unless it is the default preset, unfiltered")
    ap.add_argument("--stale-rows", metavar="FILE",
                    help="write the stale rows (below) to FILE, 'name dtype layout op' a line: bench.py --rows "
                         "re-times exactly them (on the GPU machine: without a device some choices differ, the "
                         "onchip parts' rounds of clusters unanswered)")
    ap.add_argument("--stale", action="store_true",
                    help="list every row (with or without every instance timed) whose recorded instance is not "
                         "the one the library chooses now: rows to re-time")
    args = ap.parse_args()
    if args.manifest:
        with open(args.manifest, encoding="utf-8") as f:
            manifest = json.load(f)
        if manifest["preset"] != "default" or manifest["selection"]["pattern"]:
            print(f"skipped: the rows were measured against the default preset's instances; this build is "
                  f"{manifest['preset']!r} with filter {manifest['selection']['pattern']!r}")
            return 77
    handle = hipgn.library().handle()
    with open(args.results or results_of(handle), encoding="utf-8") as f:
        doc = json.load(f)
    measured_on = doc.get("meta", {}).get("gpu", "?")
    absent = (", none present: the runtime assumes its default target, and the rounds of onchip clusters go "
              "unanswered (only a device gives them), so groups held in parts may be chosen otherwise than there")
    print(f"device: {handle.device_name} ({handle.arch}, {handle.compute_units} compute units)"
          f"{'' if handle.has_device else absent}; rows measured on {measured_on}")
    if args.min_within is not None and handle.has_device and handle.device_name != measured_on:
        print(f"skipped: the rows were measured on {measured_on}, whose choices this device's need not be")
        return 77
    # the library's choice for every row, asked once: the timed rows judge it, every row's
    # recorded instance is checked against it; a build narrowed to some buckets (-DHIPGN_OPS,
    # _LAYOUTS, _DTYPES: an A/B's) answers only the rows of its own
    def choose(r):
        try:
            return handle.choose(problem_of(r))
        except hipgn.HipgnError as e:
            if e.status != "not built":
                raise
            return None
    choice = [choose(r) for r in doc["rows"]]
    built = sum(c is not None for c in choice)
    if built < len(choice):
        print(f"{len(choice) - built} of {len(choice)} rows are of buckets this build lacks: left out")
    doc["rows"] = [r for r, c in zip(doc["rows"], choice) if c is not None]
    choice = [c for c in choice if c is not None]
    hits, misses, untimed, answered = 0, [], [], 0
    rows = [(r, c) for r, c in zip(doc["rows"], choice) if r.get("instances")]
    for r, chosen in rows:
        recorded = r.get("hipgn_name")
        if not handle.has_device and chosen != recorded and recorded in r["instances"] and \
                "_onchip_" in chosen and "_onchip_" in recorded:
            chosen, answered = recorded, answered + 1  # the rounds only a device answers (above)
        times = r["instances"]
        best = min(times.values())
        what = f"{r['name']} {r['dtype']} {r['layout']} {r['op']}"
        if chosen not in times:
            untimed.append(f"{what}: {chosen}")
        elif times[chosen] <= args.tolerance * best:
            hits += 1
        else:
            fastest = min(times, key=times.get)
            misses.append((times[chosen] / best, f"{what}: {chosen} {times[chosen]:.2f} us, fastest {fastest} "
                                                  f"{best:.2f} us"))
    print(f"within {100 * (args.tolerance - 1):.0f}% of the fastest timed instance: {hits} of {len(rows)} rows "
          f"({100 * hits / max(1, len(rows)):.1f}%); {len(misses)} misses, {len(untimed)} choices untimed"
          f"{f'; {answered} judged by the onchip configuration the device chose' if answered else ''}")
    for ratio, line in sorted(misses, reverse=True)[:args.misses]:
        print(f"  {ratio:.3f}x  {line}")
    for line in untimed[:args.misses]:
        print(f"  untimed  {line}")
    # Every row, timed with every instance or not: one whose dispatched instance has changed since
    # shows a time the library no longer gives (bench/NOTES.md, "Where the sixth session of
    # 2026-11-26 ended": eighteen channels-last backwards were so).
    stale = [(r, c) for r, c in zip(doc["rows"], choice) if c != r.get("hipgn_name")]
    print(f"{len(stale)} of {len(doc['rows'])} rows were timed on an instance the library no longer chooses"
          f"{': re-time them (--stale lists them)' if stale and not args.stale else ''}")
    if args.stale_rows:
        with open(args.stale_rows, "w", encoding="utf-8") as f:
            f.writelines(f"{r['name']} {r['dtype']} {r['layout']} {r['op']}\n" for r, _ in stale)
    if args.stale:
        for r, c in stale:
            print(f"  stale  {r['name']} {r['dtype']} {r['layout']} {r['op']}: timed {r.get('hipgn_name')}, now {c}")
    if args.min_within is not None and hits < args.min_within * len(rows):
        print(f"FAILED: below {100 * args.min_within:.0f}% of the rows")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
