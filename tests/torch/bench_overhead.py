"""Host overhead per call in eager mode: microseconds of CPU time one call costs, next to
F.group_norm's. The GPU is kept busy first (torch.cuda._sleep), so the loop measures only what
the host spends enqueueing, never the kernels. Exits 77 (skipped), saying why, where PyTorch or
a GPU is missing.

Usage: bench_overhead.py [--json FILE]"""

import argparse
import json
import time

from _common import eager_fast_path, torch

import hipgn.torch as hgn
import torch.nn.functional as F

CALLS = 200  # kernels queued behind the sleep stay well under the launch queue's ~1000 entries


def host_us(fn, calls=CALLS):
    """The best of 3 rounds of `calls` calls, in microseconds of host time a call (bench/
    torch_dispatch_probe.py times with it too, fewer calls where each queues more kernels)."""
    fn()  # first call: caches, handle
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(3):
        if hasattr(torch.cuda, "_sleep"):
            torch.cuda._sleep(400_000_000)  # a few hundred ms of GPU work: the queue never drains
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        best = min(best, (t1 - t0) / calls * 1e6)
    return best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    x = torch.randn(2, 320, 64, 64, device="cuda", dtype=torch.float16).contiguous(memory_format=torch.channels_last)
    w = torch.rand(320, device="cuda", dtype=torch.float16) + 0.5
    b = torch.randn(320, device="cuda", dtype=torch.float16)
    xg, wg, bg = (t.detach().clone().requires_grad_() for t in (x, w, b))
    rows = []
    with torch.no_grad():
        rows.append(("F.group_norm, no grad", host_us(lambda: F.group_norm(x, 32, w, b))))
        rows.append(("F.group_norm + F.silu, no grad", host_us(lambda: F.silu(F.group_norm(x, 32, w, b)))))
    rows.append(("F.group_norm + F.silu, autograd forward", host_us(lambda: F.silu(F.group_norm(xg, 32, wg, bg)))))
    for route, fast in (("eager fast path", True), ("through the operator", False)):
        with eager_fast_path(fast):
            with torch.no_grad():
                rows.append((f"hipgn group_norm(silu), no grad ({route})",
                             host_us(lambda: hgn.group_norm(x, 32, w, b, activation="silu"))))
            rows.append((f"hipgn group_norm(silu), autograd forward ({route})",
                         host_us(lambda: hgn.group_norm(xg, 32, wg, bg, activation="silu"))))
    route = f"C++ operators ({hgn.cpp_operators()}): both routes call them" if hgn.cpp_operators() else "Python operators"
    print(f"host time per call, eager, x {tuple(x.shape)} fp16 channels-last (best of 3 x {CALLS} calls), {route}:")
    for name, us in rows:
        print(f"  {name:58s} {us:7.1f} us")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({name: us for name, us in rows}, f, indent=1)
    print(f"summary: {len(rows)} host overhead rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
