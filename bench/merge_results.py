"""Merges a bench.py run into the kept results: the run's rows replace the kept rows of the same
(shape, dtype, layout, op), the others stay; latest.md and latest.png are written again from the
merged rows, and `meta.runs` records which run gave what.

    python3 bench/merge_results.py NEW/latest.json [--into bench/results] [--note "..."] [--drop-peers]
    python3 bench/merge_results.py BEST/latest.json --instances [--into ...] [--note ...]
    python3 bench/merge_results.py --render        (only write latest.md and latest.png again)

--instances takes from a `bench.py --best` run only its per-instance times (`instances`,
`hipgn_best`), into the kept rows of the same problem that dispatched the same instance: the
dispatch rules' evidence beside a run whose copy, hipgn and peers were timed in one process
without them (the peers' compiles and --best's instances together outrun one device call).

A kept row timed with a peer that the new run's row lacks (say Apex, beside a run without --apex)
stays whole, so that every peer's time stands beside hipgn's of the same process; --drop-peers
replaces it all the same.

The kept rows are one GPU's: another GPU's run goes --into a folder of its own, which its first
run starts (bench/results holds an H100's; the device of the sessions since 2026-11-28 is an H200).
They are the suite's and the odd shapes': a run with shapes of bench.py --shape is refused.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench  # noqa: E402  (summarize, plot: the same tables and plot as a run writes)


def key(r):
    return (r["name"], r["dtype"], r["layout"], r["op"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("new", nargs="?")
    ap.add_argument("--render", action="store_true", help="merge nothing; write latest.md and latest.png again")
    ap.add_argument("--into", default=str(bench.HERE / "results"))
    ap.add_argument("--note", default="")
    ap.add_argument("--instances", action="store_true",
                    help="take only the new run's per-instance times, into kept rows that dispatched the same instance")
    ap.add_argument("--drop-peers", action="store_true",
                    help="replace a kept row even where the new one lacks a peer it has (by default it stays whole)")
    a = ap.parse_args()
    into = pathlib.Path(a.into)
    latest = into / "latest.json"
    kept = json.loads(latest.read_text()) if latest.exists() else None
    if a.render or not a.new:
        if kept is None:
            sys.exit(f"merge_results: nothing to render: {latest} does not exist")
        rows, meta = kept["rows"], kept["meta"]
        render(into, rows, meta, meta.get("runs", []))
        return
    new = json.loads(pathlib.Path(a.new).read_text())
    if kept is None and a.instances:
        sys.exit(f"merge_results: --instances adds to kept rows, and {into} has none")
    if kept is None:  # another GPU's first rows start a set of their own (--into bench/results/h200, say)
        kept = dict(meta=dict(new["meta"], runs=[]), rows=[])
    # refused before anything is merged
    if new["meta"].get("act", "swish") != "swish":  # bench.py --act none: hipgn alone, no SiLU
        sys.exit(f"merge_results: the new rows ran hipgn with act {new['meta']['act']}; the kept ones are GroupNorm + SiLU")
    known, _ = bench.load_shapes("all")
    probes = sorted({r["name"] for r in new["rows"]} - set(known))
    if probes:
        sys.exit(f"merge_results: {', '.join(probes)}: no shape of the suite or the odd ones (bench.py --shape): "
                 "the kept rows are those shapes' only")
    if kept["meta"].get("gpu") != new["meta"].get("gpu"):
        sys.exit(f"merge_results: the kept rows ran on {kept['meta'].get('gpu')}, the new on {new['meta'].get('gpu')}: "
                 "merge them --into a folder of that GPU's own (a new one starts its set)")
    fresh = {key(r): r for r in new["rows"]}
    if a.instances:
        rows, taken = kept["rows"], 0
        for r in rows:
            b = fresh.get(key(r))
            if b and b.get("instances") and b["hipgn_name"] == r.get("hipgn_name"):
                r.update(instances=b["instances"], hipgn_best=b["hipgn_best"], hipgn_best_name=b["hipgn_best_name"])
                taken += 1
        if taken < len(fresh):
            print(f"# {len(fresh) - taken} of the run's rows had no kept row of the same dispatched instance")
        counted = taken  # the runs' record counts the rows given instances
    else:
        # a peer's time stands beside hipgn's of the same process only: a kept row timed with a
        # peer the new run did not time (Apex, which a device call runs only where its checkout
        # travels) stays whole rather than lose that peer, unless --drop-peers
        stay = [] if a.drop_peers else [k for k, r in ((key(r), r) for r in kept["rows"]) if k in fresh and
                                        any(r.get(p) is not None and fresh[k].get(p) is None for p in bench.PEERS)]
        for k in stay:
            del fresh[k]
        if stay:
            print(f"# {len(stay)} kept rows stay whole: the new run lacks a peer they have "
                  f"(--drop-peers replaces them): {', '.join(' '.join(k) for k in stay)}")
        rows = [fresh.pop(key(r), r) for r in kept["rows"]] + list(fresh.values())
        counted = len(new["rows"]) - len(stay)
    meta = dict(kept["meta"])
    runs = meta.get("runs", [])
    # earlier files describe their runs in a sentence
    runs = [dict(date=kept["meta"].get("date"), rows=len(kept["rows"]), note=runs)] if isinstance(runs, str) else list(runs)
    runs.append(dict(date=new["meta"]["date"], rows=counted, note=a.note, **({"instances": True} if a.instances else {})))
    meta.update(date=new["meta"]["date"], runs=runs)
    into.mkdir(parents=True, exist_ok=True)
    latest.write_text(json.dumps(dict(meta=meta, rows=rows), indent=1) + "\n")
    render(into, rows, meta, runs)


def render(into, rows, meta, runs):
    md = bench.summarize(rows, meta)
    if isinstance(runs, list) and runs:
        merged = ("Runs, each later one replacing the rows it measured, or adding its every instance's times to "
                  "them (instances only; bench/merge_results.py): " + "; ".join(
                      f"{r['date']}, {r['rows']} rows{' (instances only)' if r.get('instances') else ''}: {r['note']}"
                      for r in runs))
        head, rest = md.split("\n\n", 2)[:2], md.split("\n\n", 2)[2]
        md = "\n\n".join(head + [merged, rest])
    (into / "latest.md").write_text(md)
    try:
        bench.plot(rows, meta, into / "latest.png")
    except Exception as e:  # matplotlib missing: the tables still stand
        print(f"# plot skipped: {e!r}")
    print(md.split("\n| shape |")[0])

if __name__ == "__main__":
    main()
