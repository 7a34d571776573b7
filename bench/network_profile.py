"""A probe, not part of the package: where a network's step spends its GPU time, patched and
not, by kernel (torch.profiler), so that a network slower patched can be told apart: host
time, hipgn's kernels, or the kernels around them (bench/NOTES.md, "ResNet-50 patched, kernel
by kernel").

Prints, for ResNet-50 with GroupNorm(32) (N 32, 224 x 224, channels-last, bf16 autocast, as
tests/torch/networks.py times it) in eager training and inference, unpatched and patched, and
compiled, patched: the step's wall time, its summed kernel time, and the kernels taking the
most of it, grouped by name (hipgn's by instance). A step whose kernels sum to far less than
its wall time is host-bound.

Run on the GPU machine: HIPGN_LIBRARY=<build>/runtime/libhipgn.so python3 bench/network_profile.py
"""

import collections
import copy
import os
import sys

# networks.py's models and its _common's skip rule (exits 77 saying why without PyTorch, a GPU
# or torchvision)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "torch"))
import networks  # noqa: E402
from _common import skip  # noqa: E402
from networks import hgn, median_ms, torch  # noqa: E402

TOP = 14


def kernels(fn, steps=3):
    """Per kernel name: (total us, calls) over `steps` runs of fn, and the summed kernel us a run."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
    by_name = collections.defaultdict(lambda: [0.0, 0])
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            by_name[e.name][0] += e.device_time_total / steps
            by_name[e.name][1] += 1
    return by_name, sum(v[0] for v in by_name.values())


def host_ops(fn, steps=3):
    """The CPU side of `steps` runs of fn: per operator, its total host us a run (children
    included) and calls, the operators taking the most first."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
    rows = [(a.cpu_time_total / steps, a.count // steps, a.key) for a in prof.key_averages()]
    return sorted(rows, reverse=True)


def main():
    if networks.torchvision is None:
        skip(f"torchvision is missing ({networks.TORCHVISION_MISSING})")
    torch.manual_seed(3)
    base = networks.randomize_norms(networks.resnet50_gn()).cuda()
    x = torch.randn((32, 3, 224, 224), device="cuda").contiguous(memory_format=torch.channels_last)
    for patched in (False, True):
        model = copy.deepcopy(base).to(memory_format=torch.channels_last)
        if patched:
            hgn.patch(model)
        opt = torch.optim.SGD(model.parameters(), lr=1e-4)

        train = networks.train_step(model, opt, x, amp=True)
        infer = networks.infer_step(model, x, amp=True)
        modes = [("eager train", train), ("eager infer", infer)]
        if patched:  # compiling unpatched ResNet-50 takes a minute: networks.py times it
            compiled = torch.compile(model)
            modes += [("compiled train", networks.train_step(compiled, opt, x, amp=True)),
                      ("compiled infer", networks.infer_step(compiled, x, amp=True))]
        for mode, fn in modes:
            wall = median_ms(fn, 3, 10)
            by_name, total = kernels(fn)
            print(f"\n{mode}, {'patched' if patched else 'unpatched'}: {wall:.2f} ms a step, kernels {total / 1e3:.2f} ms")
            for name, (us, calls) in sorted(by_name.items(), key=lambda kv: -kv[1][0])[:TOP]:
                print(f"  {us / 1e3:7.3f} ms {calls // 3:4d} calls  {name[:110]}")
            if patched:
                print("  host, by operator (total with children):")
                for us, calls, name in host_ops(fn)[:TOP]:
                    print(f"  {us / 1e3:7.3f} ms {calls:4d} calls  {name[:110]}")
        del model, opt, modes
        torch.cuda.empty_cache()
    print("\nsummary: ResNet-50 profiled")


if __name__ == "__main__":
    main()
