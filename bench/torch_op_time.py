"""Times hipgn's PyTorch operators as a PyTorch user runs them: torch.ops.hipgn.group_norm_fwd
and group_norm_bwd (dx, dgamma, dbeta) captured in a CUDA graph over rotating buffer sets larger
than 3x the L2 (L2-cold), replayed, device events, the median replay over the sets. The
operators take their workspace from PyTorch's caching allocator (run_with_workspace), so this
is the path bench.py (the C API's run()) does not time.

    HIPGN_LIBRARY=build-gpu/runtime/libhipgn.so PYTHONPATH=python python3 bench/torch_op_time.py \
        [--only sd15_64x640,tiny] [--dtype float16] [--layouts cf,cl]

Prints one line a problem: shape, layout, op, microseconds.
"""
import argparse
import json
import math
import pathlib
import statistics

import torch

import hipgn.torch  # noqa: F401  (registers torch.ops.hipgn)

HERE = pathlib.Path(__file__).resolve().parent


def time_op(make, sets, replays=20):
    """make(i) -> a callable enqueuing the op on set i; median microseconds a launch."""
    calls = [make(i) for i in range(sets)]
    for c in calls:  # warm-up outside the graph (PyTorch's allocator, hipgn's handle)
        c()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for c in calls:
            c()
    times = []
    for r in range(replays + 3):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        if r >= 3:
            times.append(a.elapsed_time(b) * 1000.0 / sets)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="tiny,det_7x11x256,sd15_8x1280,instance_norm_32x64,sd15_32x640,vae_64x512,"
                    "sd15_64x320,sd15_64x640")
    ap.add_argument("--dtype", default="float16")
    ap.add_argument("--layouts", default="cf,cl")
    args = ap.parse_args()
    shapes = json.loads((HERE / "suite.json").read_text())["shapes"]
    dtype = getattr(torch, args.dtype)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    for name in args.only.split(","):
        n, c, *spatial, g = shapes[name]
        for layout in args.layouts.split(","):
            shape = (n, c, *spatial)
            bytes_ = math.prod(shape) * dtype.itemsize
            sets = max(2, math.ceil(3 * l2 / (3 * bytes_)) + 1)  # x, y and dy a set

            def tensor():
                t = torch.randn(shape, device="cuda", dtype=dtype)
                if layout == "cl":
                    t = t.to(memory_format=torch.channels_last if len(spatial) == 2 else torch.channels_last_3d)
                return t

            xs = [tensor() for _ in range(sets)]
            dys = [tensor() for _ in range(sets)]
            w = torch.rand(c, device="cuda", dtype=dtype) + 0.5
            b = torch.rand(c, device="cuda", dtype=dtype) - 0.5
            fwd = torch.ops.hipgn.group_norm_fwd
            outs = [fwd(x, w, b, g, 1e-5, 1, 1.0) for x in xs]  # act 1: Swish, beta 1 (SiLU)

            def make_fwd(i):
                return lambda: fwd(xs[i], w, b, g, 1e-5, 1, 1.0)

            def make_bwd(i):
                _, mean, rstd = outs[i]
                return lambda: torch.ops.hipgn.group_norm_bwd(dys[i], xs[i], mean, rstd, w, b, g, 1e-5, 1, 1.0,
                                                              True, True)

            for op, make in (("fwd", make_fwd), ("bwd", make_bwd)):
                print(f"{name:22s} {args.dtype} {layout} {op}  {time_op(make, sets):8.2f} us", flush=True)


if __name__ == "__main__":
    main()
