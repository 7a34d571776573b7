"""Times bench/small_fwd_probe.cu's kernels for instance_norm_32x64's channels-first forward
(fp16) as bench.py times (its make_set and graph_time_us, in one process), beside the same-size
copy, hipgn's instances (--instances) and torch.compile. See the .cu's header.

    nvcc -O3 -arch=sm_90 -shared -Xcompiler -fPIC bench/small_fwd_probe.cu -o /tmp/small_fwd_probe.so
    python3 bench/small_fwd_probe.py --lib build-gpu/runtime/libhipgn.so --probe /tmp/small_fwd_probe.so
"""
from __future__ import annotations

import argparse
import ctypes
import math

import bench

VARIANTS = ["probe copy", "bare", "+swish", "+affine", "+barriers", "big params", "256 x 4", "hipgn's kernel"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", required=True, help="path to libhipgn.so")
    ap.add_argument("--probe", required=True, help="the probe's shared library")
    ap.add_argument("--instances", default="", help="comma-separated hipgn instances beside the dispatched one")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated variant numbers to time, and no hipgn or peers")
    a = ap.parse_args()
    import torch

    n, c, spatial, g = 2, 64, (32, 32), 64
    dtype = torch.float16
    probe = ctypes.CDLL(a.probe)
    hg = bench.Hipgn(a.lib, torch, "swish")
    p = hg.problem("fwd", n, c, spatial, g, dtype, "cf")
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    bytes_ = n * c * math.prod(spatial) * 2
    k = bench.set_count(l2, bytes_, False)
    sets = [bench.make_set(torch, n, c, spatial, g, dtype, "cf", False) for _ in range(k)]
    P = ctypes.c_void_p

    def launch(which):
        def fn(s):
            stream = P(torch.cuda.current_stream().cuda_stream)
            assert probe.probe_launch(which, P(s["x"].data_ptr()), P(s["y"].data_ptr()), P(s["w"].data_ptr()),
                                      P(s["b"].data_ptr()), P(s["mean"].data_ptr()), P(s["rstd"].data_ptr()),
                                      stream) == 0
        return fn

    timed = {"copy": lambda s: s["y"].copy_(s["x"])}
    only = [int(i) for i in a.only.split(",") if i]
    timed.update({v: launch(i) for i, v in enumerate(VARIANTS) if not only or i in only})
    if not only:
        for inst in [None] + [i for i in a.instances.split(",") if i]:
            timed[inst or f"hipgn ({hg.chosen(p)})"] = (lambda i: lambda s: hg.fwd(p, s, i))(inst)
        timed["compile"] = bench.peer_fns(torch, g, True)[0]
    print(f"{k} sets; us a launch, L2-cold, graph replay (bench.py's method)")
    for r in range(a.rounds):
        times = [f"{name} {bench.graph_time_us(torch, fn, sets):.3f}" for name, fn in timed.items()]
        print(f"round {r}: " + ", ".join(times), flush=True)


if __name__ == "__main__":
    main()
