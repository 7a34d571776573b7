"""hipgn in real networks: torchvision's ResNet-50 built with GroupNorm(32) and a diffusion-style
decoder (conv, GroupNorm, SiLU, nearest upsampling; channels-last). For each: patched against
unpatched outputs and gradients, both measured against a float64 copy (hipgn must be as close to
float64 as PyTorch's own GroupNorm, within a factor 2 plus a floor per precision), and each of
the network's GroupNorm problems alone against PyTorch's and float64; then the time
of a training step and of inference, patched and not: eager, captured in a CUDA graph and
replayed (the kernels without host time), and compiled (within a time budget: compiled timings
that would not fit are reported as skipped).

Usage: networks.py [--budget-s S] [--json FILE] [--no-compile] [--compile-mode MODE] [--only NET]
[--no-accuracy]. Exits 77 (skipped), saying why,
where PyTorch or a GPU is missing; 1 if an accuracy check fails."""

import argparse
import contextlib
import copy
import json
import statistics
import time

from _common import rel_err, torch

import hipgn.torch as hgn
from torch import nn
import torch.nn.functional as F

try:
    import torchvision
except ImportError as e:
    torchvision = None
    TORCHVISION_MISSING = str(e)

T0 = time.monotonic()


class ResBlock(nn.Module):
    """A diffusion decoder's residual block: the norm-SiLU-conv pairs in nn.Sequential, as
    diffusion code often writes them (and as patch() can prove fusable)."""

    def __init__(self, cin, cout):
        super().__init__()
        self.body = nn.Sequential(nn.GroupNorm(32, cin), nn.SiLU(), nn.Conv2d(cin, cout, 3, padding=1),
                                  nn.GroupNorm(32, cout), nn.SiLU(), nn.Conv2d(cout, cout, 3, padding=1))
        self.skip = nn.Identity() if cin == cout else nn.Conv2d(cin, cout, 1)

    def forward(self, x):
        return self.skip(x) + self.body(x)


class ForwardResBlock(nn.Module):
    """ResBlock as diffusers' ResnetBlock2D writes it: norms, one shared SiLU and convs called in
    turn from forward(). patch() cannot prove these SiLUs fusable; torch.compile's graph can
    (hipgn.torch.fuse_silu)."""

    def __init__(self, cin, cout):
        super().__init__()
        self.norm1, self.conv1 = nn.GroupNorm(32, cin), nn.Conv2d(cin, cout, 3, padding=1)
        self.norm2, self.conv2 = nn.GroupNorm(32, cout), nn.Conv2d(cout, cout, 3, padding=1)
        self.nonlinearity = nn.SiLU()
        self.skip = nn.Identity() if cin == cout else nn.Conv2d(cin, cout, 1)

    def forward(self, x):
        h = self.conv1(self.nonlinearity(self.norm1(x)))
        h = self.conv2(self.nonlinearity(self.norm2(h)))
        return self.skip(x) + h


class Upsample(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return self.conv(F.interpolate(x, scale_factor=2.0, mode="nearest"))


def decoder(block=ResBlock):
    """Latent (N, 4, h, w) to (N, 3, 8h, 8w), channels 512-512-256-128, like a VAE decoder."""
    return nn.Sequential(nn.Conv2d(4, 512, 3, padding=1), block(512, 512), block(512, 512), Upsample(512),
                         block(512, 512), Upsample(512), block(512, 256), Upsample(256), block(256, 128),
                         nn.GroupNorm(32, 128), nn.SiLU(), nn.Conv2d(128, 3, 3, padding=1))


def resnet50_gn():
    return torchvision.models.resnet50(norm_layer=lambda c: nn.GroupNorm(32, c))


def randomize_norms(model):
    """GroupNorm weights away from 1 and 0: a test of affine, not of the defaults."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.GroupNorm) and m.weight is not None:
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.3, 0.3)
    return model


# --- accuracy -----------------------------------------------------------------------------

# The floor per precision. Under autocast PyTorch's GroupNorm runs in fp32 and returns fp32, hipgn
# returns x's bf16 (half the bytes: the point), so what follows it (a residual sum) rounds to
# bf16 too: a little more error than unpatched, hence the larger floor there.
FLOOR = {"fp32": 1e-5, "fp16": 2e-3, "bf16-autocast": 2e-2}


def run_once(model, x, precision, dy_seed):
    """Output and parameter gradients of sum(y * dy) for a fixed random dy."""
    model.zero_grad(set_to_none=True)
    x = x.detach().requires_grad_()
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16-autocast"):
        y = model(x)
    g = torch.Generator(device="cuda").manual_seed(dy_seed)
    # scaled so that fp16 parameter gradients (sums over every position) stay far from overflow
    dy = torch.randn(y.shape, device="cuda", generator=g, dtype=torch.float32) * 2 ** -6
    (y.float() * dy).sum().backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
    return y.detach(), grads, x.grad.detach().clone()


def layer_problems(model, x):
    """The distinct GroupNorm problems of a forward pass: (x shape, channels-last, G, eps)."""
    seen = set()

    def hook(mod, inp, out):
        t = inp[0]
        seen.add((tuple(t.shape), t.dim() > 2 and t.is_contiguous(memory_format=torch.channels_last)
                  and not t.is_contiguous(), mod.num_groups, mod.eps))
    handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, nn.GroupNorm)]
    with torch.no_grad():
        model(x)
    for h in handles:
        h.remove()
    return sorted(seen)


# Each GroupNorm alone: hipgn's and PyTorch's relative errors against float64 (output, dx,
# dweight, dbias), within the same factor 2 plus a floor. PyTorch's baseline is its fp32
# GroupNorm on the same values, rounded to x's dtype: what hipgn computes, so a kernel that
# loses precision anywhere shows here, undiluted by the network.
OP_FLOOR = {torch.float32: 1e-7, torch.float16: 1e-5, torch.bfloat16: 1e-4}


def layer_accuracy(name, problems, dtype):
    bad, ratios = [], []
    for shape, cl, g, eps in problems:
        torch.manual_seed(5)
        x = torch.randn(shape, device="cuda").to(dtype)
        if cl:
            x = x.contiguous(memory_format=torch.channels_last)
        w = torch.empty(shape[1], device="cuda").uniform_(0.5, 1.5).to(dtype)
        b = torch.empty(shape[1], device="cuda").uniform_(-0.3, 0.3).to(dtype)
        dy = torch.randn(shape, device="cuda").to(dtype)
        outs = {}
        for who in ("hipgn", "torch", "f64"):
            cast = torch.float64 if who == "f64" else (dtype if who == "hipgn" else torch.float32)
            xx, ww, bb = (t.detach().to(cast).requires_grad_() for t in (x, w, b))
            fn = hgn.group_norm if who == "hipgn" else F.group_norm
            y = fn(xx, g, ww, bb, eps)
            y.backward(dy.to(y.dtype))
            # PyTorch's fp32 results rounded to what hipgn returns (x's and weight's dtype)
            outs[who] = [t.to(dtype) if who == "torch" else t for t in (y.detach(), xx.grad, ww.grad, bb.grad)]
        for what, p, u, r in zip(("y", "dx", "dweight", "dbias"), outs["hipgn"], outs["torch"], outs["f64"]):
            ep, eu = rel_err(p, r), rel_err(u, r)
            ratios.append(ep / max(eu, 1e-30))
            if not ep <= 2 * eu + OP_FLOOR[dtype]:
                bad.append(f"{shape} G={g} {'cl' if cl else 'cf'} {what}: hipgn {ep:.2e}, PyTorch {eu:.2e}")
    print(f"accuracy {name} layers {str(dtype)[6:]}: {len(problems)} GroupNorm problems, hipgn/PyTorch error vs "
          f"float64 at most {max(ratios):.2f}x (median {statistics.median(ratios):.2f}x) -> "
          f"{'ok' if not bad else 'FAIL ' + '; '.join(bad[:5])}")
    return {"network": name, "precision": f"layers {str(dtype)[6:]}", "problems": len(problems),
            "max_ratio": max(ratios), "median_ratio": statistics.median(ratios), "ok": not bad, "failures": bad[:5]}


def accuracy(name, build, x_shape, precision):
    """Patched (channels-last) against unpatched, each against float64, then each GroupNorm
    problem of the network alone (layer_accuracy: the sharp check). The unpatched error is
    PyTorch's own in both layouts, the larger taken: the layout alone changes which convolution
    algorithms cuDNN runs, and with them PyTorch's own error on ResNet-50 in fp32 by up to 30x
    (layer3.5.conv1.weight's gradient: 2.0e-4 channels-last, 5.7e-3 channels-first; H100),
    and hipgn keeps channels-last activations channels-last where PyTorch's GroupNorm returns
    them channels-first, so the convolutions after it run other algorithms."""
    torch.manual_seed(7)
    base = randomize_norms(build()).cuda()
    ref64 = copy.deepcopy(base).double()
    dtype = torch.float16 if precision == "fp16" else torch.float32
    unpatched_cf = copy.deepcopy(base).to(dtype)
    unpatched = copy.deepcopy(unpatched_cf).to(memory_format=torch.channels_last)
    patched = copy.deepcopy(unpatched)
    replaced = hgn.patch(patched)
    x = torch.randn(x_shape, device="cuda").to(dtype).contiguous(memory_format=torch.channels_last)
    y_u, g_u, dx_u = run_once(unpatched, x, precision, 11)
    y_c, g_c, dx_c = run_once(unpatched_cf, x.contiguous(), precision, 11)
    y_p, g_p, dx_p = run_once(patched, x, precision, 11)
    y_r, g_r, dx_r = run_once(ref64, x.double(), "fp64", 11)
    floor = FLOOR[precision]

    def row(what, p, u, c, r):  # (what, patched, unpatched in the worse layout, unpatched channels-last)
        return what, rel_err(p, r), max(rel_err(u, r), rel_err(c, r)), rel_err(u, r)
    rows = [row("output", y_p, y_u, y_c, y_r), row("dx", dx_p, dx_u, dx_c, dx_r)]
    rows += [row(f"grad {n}", g_p[n], g_u[n], g_c[n], g_r[n]) for n in g_r]
    bad = [(what, p, u) for what, p, u, _ in rows if not p <= 2 * u + floor]
    worst = max(rows[2:], key=lambda r: r[1] - 2 * r[2])
    result = {
        "network": name, "precision": precision, "replaced": len(replaced),
        "fused_silu": sum(1 for r in replaced if r.fused), "output_err_patched": rows[0][1],
        "output_err_unpatched": rows[0][2], "dx_err_patched": rows[1][1], "dx_err_unpatched": rows[1][2],
        "dx_err_unpatched_channels_last": rows[1][3],
        "worst_grad": worst[0], "worst_grad_err_patched": worst[1], "worst_grad_err_unpatched": worst[2],
        "patched_vs_unpatched_output": rel_err(y_p, y_u),
        "rule": f"err(patched) <= 2 max(err(unpatched channels-last), err(unpatched channels-first)) + {floor}",
        "ok": not bad, "failures": [f"{w}: patched {p:.2e}, unpatched {u:.2e}" for w, p, u in bad[:5]],
    }
    print(f"accuracy {name} {precision}: {len(replaced)} GroupNorms replaced ({result['fused_silu']} with SiLU "
          f"fused); rel. error vs float64, patched / unpatched in the worse layout (channels-last alone): output "
          f"{rows[0][1]:.2e} / {rows[0][2]:.2e} ({rows[0][3]:.2e}), dx {rows[1][1]:.2e} / {rows[1][2]:.2e} "
          f"({rows[1][3]:.2e}), worst parameter gradient ({worst[0]}) {worst[1]:.2e} / {worst[2]:.2e} "
          f"({worst[3]:.2e}) -> {'ok' if not bad else 'FAIL ' + '; '.join(result['failures'])}")
    layer_dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16-autocast": torch.bfloat16}[precision]
    return [result, layer_accuracy(name, layer_problems(unpatched, x), layer_dtype)]


# --- timing -------------------------------------------------------------------------------


def median_ms(fn, warmup, iters):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def graphed(fn):
    """fn captured in a CUDA graph, after warm-up runs on a side stream (PyTorch's whole-network
    capture): its replay."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


# (autocast's cast cache off: a graph cannot hold it, and each weight is cast once a step here)
def train_step(m, opt, x, amp):
    """One training step of m on x (forward, backward, SGD step), under bf16 autocast if amp."""
    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp, cache_enabled=False):
            y = m(x)
        y.float().square().mean().backward()
        opt.step()
    return step


def inference_context(amp):
    """No gradients, and bf16 autocast if amp: how inference runs here (a context manager)."""
    stack = contextlib.ExitStack()
    stack.enter_context(torch.no_grad())
    stack.enter_context(torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp, cache_enabled=False))
    return stack


def infer_step(m, x, amp):
    """One inference of m on x, without gradients, under bf16 autocast if amp."""
    def run():
        with inference_context(amp):
            m(x)
    return run


def timings(name, build, x_shape, precision, budget_s, compile_ok, compile_estimate_s, compile_mode="default"):
    """ms per training step (forward, backward, SGD step) and per inference, for unpatched and
    patched, eager, graphed and then (if the budget holds both) compiled."""
    torch.manual_seed(3)
    base = randomize_norms(build()).cuda()
    dtype = torch.float16 if precision == "fp16" else torch.float32
    amp = precision == "bf16-autocast"
    x = torch.randn(x_shape, device="cuda").to(dtype).contiguous(memory_format=torch.channels_last)
    models = {}
    for patched in (False, True):
        model = copy.deepcopy(base).to(dtype).to(memory_format=torch.channels_last)
        if patched:
            hgn.patch(model)
        models[patched] = (model, torch.optim.SGD(model.parameters(), lr=1e-4))

    def train(m, opt):
        return train_step(m, opt, x, amp)

    def infer(m):
        return infer_step(m, x, amp)

    rows = {}
    for patched, (model, opt) in models.items():
        rows[patched] = {"network": name, "precision": precision, "patched": patched, "batch": list(x_shape),
                         "eager_train_ms": median_ms(train(model, opt), 3, 10),
                         "eager_infer_ms": median_ms(infer(model), 3, 10)}
        # the same step captured in a CUDA graph and replayed: no host time, the kernels alone
        rows[patched]["graphed_train_ms"] = median_ms(graphed(train(model, opt)), 3, 10)
        rows[patched]["graphed_infer_ms"] = median_ms(graphed(infer(model)), 3, 10)
    remaining = budget_s - (time.monotonic() - T0)
    for patched, (model, opt) in models.items():
        row = rows[patched]
        if not compile_ok:
            row["compiled"] = "skipped: --no-compile"
        elif remaining < 2 * compile_estimate_s:  # both or neither: one alone compares nothing
            row["compiled"] = (f"skipped: {remaining:.0f} s of the time budget left, about "
                               f"{2 * compile_estimate_s} s needed")
        else:
            try:
                torch._dynamo.reset()
                compiled = torch.compile(model, mode=compile_mode)
                start = time.monotonic()
                row["compiled_train_ms"] = median_ms(train(compiled, opt), 3, 10)
                row["compiled_infer_ms"] = median_ms(infer(compiled), 3, 10)
                row["compile_s"] = time.monotonic() - start
                row["compiled"] = "ok"
            except Exception as e:  # one failing compile must not stop the other measurements
                row["compiled"] = f"FAILED: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
        print(f"timing {name} {precision} {'patched' if patched else 'unpatched'}: " +
              ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()
                        if k not in ("network", "precision", "patched")))
    del models
    torch.cuda.empty_cache()
    return [rows[False], rows[True]]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--budget-s", type=float, default=300, help="wall time for the whole script")
    parser.add_argument("--json", default="", help="write the results here")
    parser.add_argument("--no-compile", action="store_true", help="eager timings only")
    parser.add_argument("--compile-mode", default="default", help="torch.compile's mode (reduce-overhead: CUDA graphs)")
    parser.add_argument("--only", default="", help="this network alone (decoder, resnet50-gn)")
    parser.add_argument("--no-accuracy", action="store_true", help="timings only")
    args = parser.parse_args()
    results = {"accuracy": [], "timing": [], "device": torch.cuda.get_device_name(), "torch": torch.__version__}

    # (name, builder, accuracy input, timing input, accuracy precisions, timing precision,
    # seconds to compile one model for training and inference: a guess for the budget)
    nets = [("decoder", decoder, (1, 4, 16, 16), (2, 4, 32, 32), ("fp16", "bf16-autocast"), "fp16", 40)]
    if torchvision is not None:
        nets.append(("resnet50-gn", resnet50_gn, (4, 3, 128, 128), (32, 3, 224, 224), ("fp32", "bf16-autocast"),
                     "bf16-autocast", 90))
    else:
        results["resnet50-gn"] = f"skipped: torchvision is not importable ({TORCHVISION_MISSING})"
        print(results["resnet50-gn"])

    nets = [net for net in nets if args.only in ("", net[0])]
    results["compile_mode"] = args.compile_mode
    # accuracy first (eager, quick), with the float64 reference's exact convolutions and no
    # algorithm search (float64 convolutions are slow to benchmark)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    for name, build, acc_shape, _, precisions, _, _ in ([] if args.no_accuracy else nets):
        for precision in precisions:
            try:
                results["accuracy"] += accuracy(name, build, acc_shape, precision)
            except Exception as e:
                results["accuracy"].append({"network": name, "precision": precision, "ok": False,
                                            "failures": [f"{type(e).__name__}: {e}"]})
                print(f"accuracy {name} {precision}: FAILED with {type(e).__name__}: {e}")
            torch.cuda.empty_cache()

    # timings as a user would run: TF32 on (PyTorch's default for convolutions), the fastest
    # convolution algorithms
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cudnn.benchmark = True
    for name, build, _, time_shape, _, precision, compile_s in nets:
        try:
            results["timing"] += timings(name, build, time_shape, precision, args.budget_s, not args.no_compile,
                                         compile_s, args.compile_mode)
        except Exception as e:
            results["timing"].append({"network": name, "precision": precision, "error": f"{type(e).__name__}: {e}"})
            print(f"timing {name} {precision}: FAILED with {type(e).__name__}: {e}")
        torch.cuda.empty_cache()

    print("\nnetwork        precision      mode      unpatched ms  patched ms  speedup")
    by_key = {}
    for row in results["timing"]:
        if "patched" in row:
            by_key.setdefault((row["network"], row["precision"]), {})[row["patched"]] = row
    for (net, prec), pair in by_key.items():
        for mode in ("eager_train_ms", "eager_infer_ms", "graphed_train_ms", "graphed_infer_ms", "compiled_train_ms",
                     "compiled_infer_ms"):
            u, p = pair.get(False, {}).get(mode), pair.get(True, {}).get(mode)
            if u and p:
                print(f"{net:14s} {prec:14s} {mode[:-3]:16s} {u:9.2f} {p:11.2f} {u / p:8.2f}x")
            elif mode.startswith("compiled"):
                print(f"{net:14s} {prec:14s} {mode[:-3]:16s} {pair.get(True, {}).get('compiled', '?')}")
    ok = all(a.get("ok") for a in results["accuracy"])
    print(f"summary: accuracy {sum(a.get('ok', False) for a in results['accuracy'])}/{len(results['accuracy'])} ok; "
          f"{len(results['timing'])} timing rows; {time.monotonic() - T0:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
