"""Compares two bench.py results (A, B) problem by problem: hipgn's dispatched time, the fastest
instance, and with --best every instance both timed (the family's instances by default).

    python3 bench/ab_compare.py A/latest.json B/latest.json [--family resident] [--control REGEX]

--control names (a regular expression over A's dispatched instance) the rows the change does not
touch: their geomean is the run's drift between B's run and A's (~2% either way in one round,
bench/NOTES.md "Eviction hints in the backwards"), and the other rows' geomean is also given
divided by it.
"""
from __future__ import annotations

import argparse
import json
import math
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench import geomean  # noqa: E402  (the results' own geomean)


def rows(path):
    return {(r["name"], r["dtype"], r["layout"], r["op"]): r for r in json.load(open(path))["rows"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--family", default="resident", help="instances of this family are listed one by one")
    ap.add_argument("--control", help="rows whose A instance matches this regular expression are untouched by the change")
    args = ap.parse_args()
    a, b = rows(args.a), rows(args.b)
    ratios, control = [], []
    print(f"{'problem':44} {'copy':>6} {'A':>7} {'B':>7} {'A/B':>5}  {'A best':>7} {'B best':>7}  A's instance; "
          f"{args.family} instances A/B us")
    failed = []
    for key in sorted(a.keys() & b.keys()):
        ra, rb = a[key], b[key]
        if "hipgn" not in ra or "hipgn" not in rb:  # bench.py records a run that failed with its error
            failed.append(f"{' '.join(key)}: {ra.get('error') or rb.get('error') or 'no time'}")
            continue
        (control if args.control and re.search(args.control, ra["hipgn_name"]) else ratios).append(ra["hipgn"] / rb["hipgn"])
        fam = []
        ia, ib = dict(ra.get("instances", [])), dict(rb.get("instances", []))
        for name in sorted(ia.keys() & ib.keys()):
            if f"_{args.family}_" in name:
                fam.append(f"{name.split('_')[-3]}{name.split('_')[-1]} {ia[name]:.2f}/{ib[name]:.2f}")
        # two decimals: the small problems' changes are hundredths of a microsecond (2.58 -> 2.52)
        print(f"{' '.join(key):44} {ra['copy']:6.2f} {ra['hipgn']:7.2f} {rb['hipgn']:7.2f} {ra['hipgn'] / rb['hipgn']:5.3f}  "
              f"{ra.get('hipgn_best', math.nan):7.2f} {rb.get('hipgn_best', math.nan):7.2f}  "
              f"{ra['hipgn_name'].split('_', 6)[-1]}; {', '.join(fam)}")
    for line in failed:
        print(f"not compared (a side did not run): {line}")
    if ratios:
        print(f"A/B geomean of hipgn's time over {len(ratios)} problems{' the change touches' if args.control else ''}: "
              f"{geomean(ratios):.3f}")
    if control:
        print(f"A/B geomean over the {len(control)} control problems (untouched, the run's drift): {geomean(control):.3f}"
              + (f"; the touched ones divided by it: {geomean(ratios) / geomean(control):.3f}" if ratios else ""))


if __name__ == "__main__":
    main()
