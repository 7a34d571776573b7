#!/usr/bin/env python3
"""Where the same-size copy's time spreads (bench/NOTES.md, "Where the thirty-ninth session ended",
Next 4): bench.py times the copy once a problem, and a row re-timed in another process carries
its copy's time into % of copy. For a few sizes this times the copy as bench.py does (a CUDA graph
over rotating sets, median of 15 replays): REPEATS times on one allocation of the sets (the
spread within a process and allocation), then once on each of ALLOCS fresh allocations (the
spread between allocations). Run it in two processes to see the spread between them. Prints us
and each time over the first.

    python3 bench/copy_spread_probe.py [--repeats 5] [--allocs 5]
"""
from __future__ import annotations

import argparse
import math
import pathlib
import statistics
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench  # noqa: E402  (bench.py: load_shapes, set_count, make_set, graph_time_us)

# suite shapes of 5-134 MB at fp16 (bench.load_shapes gives their sizes), timed channels-last
NAMES = ("sd15_64x320", "sd15_64x640", "sdxl_64x1280", "vae_512x256")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--allocs", type=int, default=5)
    a = ap.parse_args()
    import torch

    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    copy = lambda s: s["y"].copy_(s["x"])
    shapes, _ = bench.load_shapes("suite")
    first = True
    for name in NAMES:
        n, c, spatial, g = shapes[name]
        x_bytes = n * c * math.prod(spatial) * 2
        k = bench.set_count(l2, x_bytes, False)
        sets = [bench.make_set(torch, n, c, spatial, g, torch.float16, "cl", False) for _ in range(k)]
        if first:  # bench.py discards the first problem's first copy graph too
            bench.graph_time_us(torch, copy, sets)
            first = False
        same = [bench.graph_time_us(torch, copy, sets) for _ in range(a.repeats)]
        fresh = []
        for _ in range(a.allocs):
            del sets
            torch.cuda.empty_cache()
            sets = [bench.make_set(torch, n, c, spatial, g, torch.float16, "cl", False) for _ in range(k)]
            fresh.append(bench.graph_time_us(torch, copy, sets))
        del sets
        torch.cuda.empty_cache()
        t0 = same[0]
        print(f"{name:14s} {x_bytes / 1e6:6.1f} MB, {k} sets: one allocation "
              + " ".join(f"{t:.2f}" for t in same) + f" (x {min(same) / t0:.3f}-{max(same) / t0:.3f});"
              + " fresh allocations " + " ".join(f"{t:.2f}" for t in fresh)
              + f" (x {min(fresh) / t0:.3f}-{max(fresh) / t0:.3f}); median {statistics.median(same + fresh):.2f} us",
              flush=True)


if __name__ == "__main__":
    main()
