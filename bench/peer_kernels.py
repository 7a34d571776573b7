"""On the GPU machine, under Nsight Compute: one problem's forward as hipgn's dispatched instance (or
--instance's) runs it, as torch.compile runs it and, with --apex, as Apex's NHWC GroupNorm runs it, three
launches each between cudaProfilerStart and Stop, so that `ncu --profile-from-start off` shows
every side's kernels (duration, instructions, launch shape) for the same tensors. Usage:
    ncu --profile-from-start off --cache-control all --clock-control none --metrics ... \\
        python3 bench/peer_kernels.py --lib build/runtime/libhipgn.so --shape instance_norm_32x64
"""
import argparse

import bench


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True, help="path to libhipgn.so")
    ap.add_argument("--shape", required=True, help="a shape name of bench/suite.json (or an odd shape)")
    ap.add_argument("--dtype", default="float16")
    ap.add_argument("--layout", default="cf", choices=["cf", "cl"])
    ap.add_argument("--instance", default=None, help="run this instance, not the dispatched one")
    ap.add_argument("--apex", default="", help="Apex's built module or checkout (bench/apex_peer.py): its kernels too")
    ap.add_argument("--apex-build", default="/tmp/hipgn-apex-build")
    a = ap.parse_args()

    import torch
    bench.raise_recompile_limits(torch)
    shapes, _ = bench.load_shapes("all")
    n, c, spatial, g = shapes[a.shape]
    dtype = getattr(torch, a.dtype)
    hg = bench.Hipgn(a.lib, torch, "swish")
    s = bench.make_set(torch, n, c, spatial, g, dtype, a.layout, False)
    p = hg.problem("fwd", n, c, spatial, g, dtype, a.layout)
    forward, _ = bench.peer_fns(torch, g, True)
    peers = [forward]
    if a.apex:
        import apex_peer
        apex = apex_peer.Apex(apex_peer.load(a.apex, a.apex_build))
        if apex.supports(c, spatial, g, a.layout):
            peers.append(apex.fns(c, spatial, g)[0])
    for _ in range(3):  # compilation and lazy initialization outside the profiled range
        for f in peers:
            f(s)
        hg.fwd(p, s, a.instance)
    torch.cuda.synchronize()
    print(f"{a.shape} {a.dtype} {a.layout}: hipgn runs {a.instance or hg.chosen(p)}")
    torch.cuda.cudart().cudaProfilerStart()
    for _ in range(3):
        hg.fwd(p, s, a.instance)
        for f in peers:
            f(s)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main()
