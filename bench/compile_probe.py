"""A probe, not part of the package: where a network compiled with torch.compile (default mode)
and patched with hipgn spends its host time (bench/NOTES.md, "The PyTorch operators in C++").
Parts (--parts, comma-separated; default chain,code,resnet):
  chain        host us a layer of 20 GroupNorm + SiLU layers, eager and compiled, hipgn's and
               inductor's own, without grad, an autograd forward, a forward + backward
  code         the code inductor writes around hipgn's operator (two layers), to DIR
  resnet       patched and unpatched ResNet-50 (bf16 autocast): graphs and graph breaks, the
               compiled inference's host and wall us a step; one operator call's host us
               against torch.relu's
  resnet_code  the code inductor writes for ResNet-50's inference, patched and not, to DIR, and
               what it calls how often
  resnet_cprofile  cProfile of two compiled inference steps, patched and not, the GPU kept busy
  fusion       the decoder built of diffusers-style blocks (networks.ForwardResBlock), fp16,
               compiled: unpatched, patched without fuse_silu, patched with it; inference us a
               step at two sizes, training us a step
  resnet_trace torch.profiler over three compiled inference steps, patched and not: the ops and
               CUDA runtime calls by host time, the kernels by device time, a trace to DIR; and
               one operator call's host us on ResNet-50's first GroupNorm, with and without
               autocast

Usage (GPU machine): HIPGN_LIBRARY=<build>/runtime/libhipgn.so PYTHONPATH=python python3
bench/compile_probe.py [--out DIR] [--parts P,...]"""

import argparse
import copy
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "torch"))
from _common import skip, torch  # noqa: E402  (exits 77 without PyTorch or a GPU)
from bench_overhead import host_us  # noqa: E402
import networks  # noqa: E402

import hipgn.torch as hgn  # noqa: E402
from torch import nn  # noqa: E402


class Chain(nn.Module):
    """K GroupNorm(+SiLU) layers in a row: a compiled graph of nothing but GroupNorms."""

    def __init__(self, k, c, silu):
        super().__init__()
        layers = []
        for _ in range(k):
            layers += [nn.GroupNorm(32, c)] + ([nn.SiLU()] if silu else [])
        self.body = nn.Sequential(*layers)

    def forward(self, x):
        return self.body(x)


def chain_rows(k=20):
    x = torch.randn(2, 64, 8, 8, device="cuda", dtype=torch.float16).contiguous(memory_format=torch.channels_last)
    rows = []
    for patched in (False, True):
        m = Chain(k, 64, silu=True).cuda().half()
        if patched:
            hgn.patch(m)
        name = "hipgn" if patched else "torch"
        with torch.no_grad():
            rows.append((f"{name} eager, no grad, per layer", host_us(lambda: m(x), 10) / k))
            torch._dynamo.reset()
            c = torch.compile(m)
            rows.append((f"{name} compiled, no grad, per layer", host_us(lambda: c(x), 10) / k))
        xg = x.detach().clone().requires_grad_()
        rows.append((f"{name} compiled, autograd forward, per layer", host_us(lambda: c(xg), 10) / k))
        rows.append((f"{name} compiled, forward + backward, per layer",
                     host_us(lambda: c(xg).float().sum().backward(), 4) / k))
    return rows


def output_code(out):
    from torch._inductor.utils import run_and_get_code
    m = Chain(2, 64, silu=True).cuda().half()
    hgn.patch(m)
    x = torch.randn(2, 64, 8, 8, device="cuda", dtype=torch.float16).contiguous(memory_format=torch.channels_last)
    torch._dynamo.reset()
    c = torch.compile(m)
    with torch.no_grad():
        _, codes = run_and_get_code(c, x)
    xg = x.detach().clone().requires_grad_()
    torch._dynamo.reset()
    c = torch.compile(m)
    _, codes_train = run_and_get_code(lambda: c(xg).float().sum().backward())
    with open(os.path.join(out, "compile_probe_code.txt"), "w") as f:
        for title, cs in (("inference", codes), ("training", codes_train)):
            for i, code in enumerate(cs):
                f.write(f"##### {title} {i}\n{code}\n")


def resnets():
    """(name, model, x): ResNet-50 with GroupNorm(32) as networks.py builds it, in eval mode and
    channels-last, unpatched ("torch") then patched ("hipgn"), each after a dynamo reset; x a
    batch of 32 at 224 x 224, to run under bf16 autocast (networks.inference_context)."""
    if networks.torchvision is None:
        skip(f"torchvision is missing ({networks.TORCHVISION_MISSING})")
    x = torch.randn(32, 3, 224, 224, device="cuda").contiguous(memory_format=torch.channels_last)
    for patched in (False, True):
        m = networks.resnet50_gn().cuda().to(memory_format=torch.channels_last).eval()
        if patched:
            hgn.patch(m)
        torch._dynamo.reset()
        yield ("hipgn" if patched else "torch"), m, x


def resnet_rows():
    rows = []
    for name, m, x in resnets():
        with networks.inference_context(True):
            ex = torch._dynamo.explain(m)(x)
            rows.append((f"resnet50 {name}: graphs {ex.graph_count}, breaks {ex.graph_break_count}, ops "
                         f"{ex.op_count}", 0.0))
            for reason in ex.break_reasons[:5]:
                rows.append((f"  break: {str(reason.reason)[:160]}", 0.0))
            torch._dynamo.reset()
            c = torch.compile(m)
            rows.append((f"resnet50 {name} compiled inference, host us a step", host_us(lambda: c(x), 2)))
            rows.append((f"resnet50 {name} compiled inference, wall us a step",
                         networks.median_ms(lambda: c(x), 1, 10) * 1000))
    # one layer's pieces, host us a call: hipgn's operator, a Triton-free elementwise op
    t = torch.randn(32, 256, 56, 56, device="cuda", dtype=torch.bfloat16).contiguous(memory_format=torch.channels_last)
    w, b = torch.ones(256, device="cuda"), torch.zeros(256, device="cuda")
    with torch.no_grad():
        rows.append(("torch.ops.hipgn.group_norm_fwd.default, bf16 x, fp32 w/b, host us",
                     host_us(lambda: torch.ops.hipgn.group_norm_fwd.default(t, w, b, 32, 1e-5, 0, 1.0), 50)))
        rows.append(("torch.relu(t), host us", host_us(lambda: torch.relu(t), 50)))
    return rows


def resnet_code(out):
    """The code inductor writes for ResNet-50's inference, patched and not, and what it calls how
    often."""
    import re
    from torch._inductor.utils import run_and_get_code
    rows = []
    for name, m, x in resnets():
        with networks.inference_context(True):
            _, codes = run_and_get_code(torch.compile(m), x)
        code = "\n".join(codes)
        with open(os.path.join(out, f"resnet_code_{name}.txt"), "w") as f:
            f.write(code)
        calls = code[code.find("def call("):]
        counts = {}
        for pattern in (r"torch\.ops\.hipgn\.\w+\.default\(", r"extern_kernels\.\w+\(", r"triton_\w+\.run\(",
                        r"reinterpret_tensor\(", r"empty_strided_cuda\(", r"assert_\w+\("):
            for hit in re.findall(pattern, calls):
                key = "triton kernels (.run)" if hit.startswith("triton_") else hit
                counts[key] = counts.get(key, 0) + 1
        rows += [(f"resnet50 {name} compiled inference code: {k} x{v}", 0.0) for k, v in sorted(counts.items())]
    return rows


def resnet_cprofile():
    """cProfile of two compiled inference steps of ResNet-50, patched and not, the GPU kept busy:
    the Python functions and builtins with the most own time (the operator calls among them)."""
    import cProfile
    import io
    import pstats
    for name, m, x in resnets():
        with networks.inference_context(True):
            c = torch.compile(m)
            c(x)
            torch.cuda.synchronize()
            torch.cuda._sleep(400_000_000)
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(2):
                c(x)
            prof.disable()
            torch.cuda.synchronize()
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(14)
        print(f"##### {name}: cProfile of 2 compiled inference steps, by own time")
        print("\n".join(out.getvalue().splitlines()[:34]))
    return []


def resnet_trace(out):
    """Where a compiled inference step's host and device time go, patched and not: torch.profiler
    (CPU and CUDA activities) over three steps after a warm-up."""
    from torch.profiler import ProfilerActivity, profile
    for name, m, x in resnets():
        with networks.inference_context(True):
            c = torch.compile(m)
            for _ in range(3):
                c(x)
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                for _ in range(3):
                    c(x)
                torch.cuda.synchronize()
        prof.export_chrome_trace(os.path.join(out, f"resnet_trace_{name}.json"))
        events = prof.key_averages()
        print(f"##### {name}: 3 compiled inference steps, by own host time")
        print(events.table(sort_by="self_cpu_time_total", row_limit=30, max_name_column_width=70))
        print(f"##### {name}: by device time")
        print(events.table(sort_by="self_device_time_total", row_limit=20, max_name_column_width=70))
    t = torch.randn(32, 64, 112, 112, device="cuda", dtype=torch.bfloat16).contiguous(memory_format=torch.channels_last)
    w, b = torch.ones(64, device="cuda"), torch.zeros(64, device="cuda")
    op = torch.ops.hipgn.group_norm_fwd.default
    rows = []
    with torch.no_grad():
        rows.append(("op, 32x64x112x112 bf16 cl, no grad, host us", host_us(lambda: op(t, w, b, 32, 1e-5, 0, 1.0), 50)))
        with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):
            rows.append(("op, same, no grad + autocast, host us", host_us(lambda: op(t, w, b, 32, 1e-5, 0, 1.0), 50)))
    return rows


def fusion_rows():
    rows = []
    torch.manual_seed(3)
    base = networks.randomize_norms(networks.decoder(networks.ForwardResBlock)).cuda().half()
    base = base.to(memory_format=torch.channels_last)
    for name, patched, fusion in (("torch", False, True), ("hipgn, fusion off", True, False), ("hipgn", True, True)):
        m = copy.deepcopy(base)
        if patched:
            hgn.patch(m)
        hgn.set_compile_fusion(fusion)
        torch._dynamo.reset()
        c = torch.compile(m, dynamic=False)
        xs = [torch.randn(shape, device="cuda", dtype=torch.float16).contiguous(memory_format=torch.channels_last)
              for shape in ((2, 4, 32, 32), (4, 4, 64, 64))]
        for x in xs:
            rows.append((f"decoder (forward() blocks) {name}: compiled inference {tuple(x.shape)}, us",
                         networks.median_ms(networks.infer_step(c, x, False), 3, 10) * 1000))
        opt = torch.optim.SGD(m.parameters(), lr=1e-4)
        rows.append((f"decoder (forward() blocks) {name}: compiled training {tuple(xs[0].shape)}, us",
                     networks.median_ms(networks.train_step(c, opt, xs[0], False), 3, 10) * 1000))
    hgn.set_compile_fusion(True)
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    parser.add_argument("--parts", default="chain,code,resnet")
    args = parser.parse_args()
    parts = args.parts.split(",")
    rows = []
    if "code" in parts:
        output_code(args.out)
    if "chain" in parts:
        rows += chain_rows()
    if "resnet" in parts:
        rows += resnet_rows()
    if "resnet_cprofile" in parts:
        rows += resnet_cprofile()
    if "resnet_code" in parts:
        rows += resnet_code(args.out)
    if "fusion" in parts:
        rows += fusion_rows()
    if "resnet_trace" in parts:
        rows += resnet_trace(args.out)
    for what, us in rows:
        print(f"{what:70s} {us:9.1f}" if us else what)


if __name__ == "__main__":
    main()
