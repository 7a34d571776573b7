"""A probe, not part of the package: the host time one GroupNorm call costs, piece by piece and
through each way of registering hipgn's operators with PyTorch (bench/NOTES.md, "The PyTorch
operator's host time" and "The operator's host time, piece by piece").

On the H200 (2026-11-30, tests/torch/networks.py) ResNet-50 with GroupNorm, bf16 autocast, ran
slower patched than not (compiled inference 3.58 -> 8.00 ms, eager training 41.0 -> 53.9 ms)
while every GroupNorm kernel alone is faster than PyTorch's: 53 GroupNorms a pass at ~110 us of
host time each make the step host-bound. PyTorch's issues (pytorch/pytorch#139500, #176592,
#177109) put torch.library.custom_op's wrappers, register_autograd's most, above a
torch.library.Library define / impl registration with an autograd.Function outside it.
The package's answer (twenty-first session): group_norm() in plain eager mode calls its impls
directly (an autograd.Function with the operator's formula when gradients are needed), the
impls look up what a call's metadata decides, and the C dispatcher remembers its heuristic's
choices. Everything is timed with the GPU kept busy (torch.cuda._sleep), so only the host is
measured:
  pieces   what forward_impl does, each alone (allocations, the layout, the cached plan, the
           C call with everything ready, the C heuristic alone), then forward_impl whole
  routes   one call through each way in: group_norm() eager and through the operator
           (set_eager_fast_path(False)); the operator itself (custom_op); the same impl
           through Library define / impl, with and without register_autograd; an
           autograd.Function over the define / impl operators; F.group_norm + F.silu. No grad,
           an autograd forward, and a forward + backward (the autograd engine included)
Each route's output (and gradients) is checked against the operator's, bit for bit: one
kernel, one dispatch.

Run on the GPU machine after a build: HIPGN_LIBRARY=<build>/runtime/libhipgn.so python3
bench/torch_dispatch_probe.py
"""

import ctypes
import os
import sys

# the package's overhead rows' measurement (tests/torch/bench_overhead.py; its _common puts this
# tree's python/ on the path, and exits 77 saying why where PyTorch or a GPU is missing)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "torch"))
from _common import eager_fast_path  # noqa: E402
from bench_overhead import host_us, torch  # noqa: E402

import torch.nn.functional as F  # noqa: E402

import hipgn.torch as hgn  # noqa: E402
from hipgn.torch import _ops  # noqa: E402

CALLS = 100  # a forward and backward queue ~3 kernels: 300, under the launch queue's ~1000

FWD_SCHEMA = "(Tensor x, Tensor? weight, Tensor? bias, int num_groups, float eps, int act, float swish_beta) -> (Tensor, Tensor, Tensor)"
BWD_SCHEMA = ("(Tensor dy, Tensor x, Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, int num_groups, "
              "float eps, int act, float swish_beta, bool need_dx, bool need_dgb) -> (Tensor, Tensor, Tensor)")


def _library(ns, autograd):
    """The package's forward_impl and backward_impl registered the lower-level way, in namespace
    ns; with autograd, the package's own formula on the forward too (register_autograd)."""
    lib = torch.library.Library(ns, "DEF")
    lib.define("fwd" + FWD_SCHEMA)
    lib.define("bwd" + BWD_SCHEMA)
    lib.impl("fwd", _ops.forward_impl, "CUDA")
    lib.impl("bwd", _ops.backward_impl, "CUDA")
    torch.library.register_fake(ns + "::fwd", _ops._fake_forward, lib=lib)
    torch.library.register_fake(ns + "::bwd", _ops._fake_backward, lib=lib)
    if autograd:
        def backward(ctx, dy, _dmean, _drstd):
            return _ops._gradients(getattr(torch.ops, ns).bwd.default, ctx, dy)
        torch.library.register_autograd(ns + "::fwd", backward, setup_context=_ops._setup_context, lib=lib)
    return lib


_libs = [_library("hipgn_probe", False), _library("hipgn_probe_ag", True)]


class _OverOps(torch.autograd.Function):
    """The package's eager route (_ops._EagerGroupNorm) over the define / impl operators."""

    @staticmethod
    def forward(ctx, *inputs):
        output = torch.ops.hipgn_probe.fwd.default(*inputs)
        _ops._save_for_formula(ctx, inputs, output)
        return output[0]

    @staticmethod
    def backward(ctx, dy):
        return _ops._gradients(torch.ops.hipgn_probe.bwd.default, ctx, dy)


def pieces(x, w, b, args):
    """forward_impl's parts, each alone (no grad)."""
    n, g = x.shape[0], args[3]
    y = torch.empty_like(x)
    mean = torch.empty((n, g), dtype=torch.float32, device=x.device)
    rstd = torch.empty_like(mean)
    pref, ws_bytes, hptr, _, dev = _ops._plan(_ops._OP_FWD, *args)
    ws = torch.empty((max(ws_bytes, 1),), dtype=torch.uint8, device=x.device)
    name = ctypes.c_char_p()

    def c_call():
        return _ops._lib.fwd(hptr, pref, x.data_ptr(), y.data_ptr(), w.data_ptr(), b.data_ptr(), mean.data_ptr(),
                             rstd.data_ptr(), ws.data_ptr() if ws_bytes else None, ws_bytes, None, _ops._stream(dev))
    rows = [
        ("torch.empty_like(x)", lambda: torch.empty_like(x)),
        ("torch.empty((n, G), float32, device=x.device)", lambda: torch.empty((n, g), dtype=torch.float32, device=x.device)),
        ("x.new_empty((n, G), dtype=float32)", lambda: x.new_empty((n, g), dtype=torch.float32)),
        (f"torch.empty(({ws_bytes},), uint8, device=index): the workspace",
         lambda: torch.empty((ws_bytes,), dtype=torch.uint8, device=dev)),
        ("layout_of(x)", lambda: _ops.layout_of(x)),
        ("_plan(...), cached", lambda: _ops._plan(_ops._OP_FWD, *args)),
        ("torch.cuda.current_device()", torch.cuda.current_device),
        ("_stream(device)", lambda: _ops._stream(dev)),
        ("4 x data_ptr()", lambda: (x.data_ptr(), y.data_ptr(), w.data_ptr(), b.data_ptr())),
        ("_plain_eager(x, w, b)", lambda: _ops._plain_eager(x, w, b)),
        ("why_unsupported(x, 32, w, b, 'silu')", lambda: _ops.why_unsupported(x, 32, w, b, "silu")),
        ("hipgn_choose_instance (the C heuristic alone)",
         lambda: _ops._lib.cdll.hipgn_choose_instance(hptr, pref, ctypes.byref(name))),
        ("the C call, all ready (ctypes, checks, heuristic, launch)", c_call),
        ("forward_impl whole", lambda: _ops.forward_impl(*args)),
    ]
    with torch.no_grad():
        assert c_call() == 0
        out = [(label, host_us(fn, CALLS)) for label, fn in rows]
    print(f"pieces (x {tuple(x.shape)}, workspace {ws_bytes} bytes, instance {name.value.decode()}):")
    for label, us in out:
        print(f"  {label:66s} {us:7.1f} us")
    return out


def through_operator(x, w, b):
    with eager_fast_path(False):
        return hgn.group_norm(x, 32, w, b, activation="silu")


def routes(x, w, b, dy, args):
    rows = []
    with torch.no_grad():
        want = torch.ops.hipgn.group_norm_fwd.default(*args)[0]
        for name, fn in (("forward_impl", lambda: _ops.forward_impl(*args)),
                         ("group_norm(), eager", lambda: hgn.group_norm(x, 32, w, b, activation="silu")),
                         ("group_norm(), through the operator", lambda: through_operator(x, w, b)),
                         ("custom_op: torch.ops.hipgn.group_norm_fwd", lambda: torch.ops.hipgn.group_norm_fwd.default(*args)),
                         ("Library define/impl", lambda: torch.ops.hipgn_probe.fwd.default(*args)),
                         ("Library define/impl + register_autograd", lambda: torch.ops.hipgn_probe_ag.fwd.default(*args))):
            out = fn()
            got = out[0] if isinstance(out, tuple) else out
            assert torch.equal(got, want), name
            rows.append((name + ", no grad", host_us(fn, CALLS)))
        rows.append(("F.group_norm + F.silu, no grad", host_us(lambda: F.silu(F.group_norm(x, 32, w, b)), CALLS)))
    xg, wg, bg = (t.detach().clone().requires_grad_() for t in (x, w, b))
    gargs = (xg, wg, bg) + args[3:]

    grads = {}
    for name, forward in (("F.group_norm + F.silu", lambda: F.silu(F.group_norm(xg, 32, wg, bg))),
                          ("group_norm(), eager (autograd.Function over the impls)",
                           lambda: hgn.group_norm(xg, 32, wg, bg, activation="silu")),
                          ("group_norm(), through the operator (custom_op + register_autograd)",
                           lambda: through_operator(xg, wg, bg)),
                          ("Library define/impl + register_autograd", lambda: torch.ops.hipgn_probe_ag.fwd.default(*gargs)[0]),
                          ("autograd.Function over Library define/impl", lambda: _OverOps.apply(*gargs))):
        for t in (xg, wg, bg):
            t.grad = None
        forward().backward(dy)
        grads[name] = [t.grad.clone() for t in (xg, wg, bg)]
        rows.append((name + ", forward alone", host_us(forward, CALLS)))

        def fwd_bwd(forward=forward):
            forward().backward(dy)
            for t in (xg, wg, bg):
                t.grad = None
        rows.append((name + ", forward + backward", host_us(fwd_bwd, CALLS)))
    want = grads["group_norm(), through the operator (custom_op + register_autograd)"]
    for name, got in grads.items():
        if not name.startswith("F."):
            assert all(torch.equal(p, q) for p, q in zip(want, got)), f"{name}: gradients differ from the package's"
    print(f"routes (x {tuple(x.shape)} fp16 channels-last, SiLU; best of 3 x {CALLS} calls):")
    for name, us in rows:
        print(f"  {name:66s} {us:7.1f} us")
    return rows


def main():
    x = torch.randn(2, 320, 64, 64, device="cuda", dtype=torch.float16).contiguous(memory_format=torch.channels_last)
    w = torch.rand(320, device="cuda", dtype=torch.float16) + 0.5
    b = torch.randn(320, device="cuda", dtype=torch.float16)
    dy = torch.randn_like(x)
    args = (x, w, b, 32, 1e-5, _ops.ACT_SWISH, 1.0)
    rows = pieces(x, w, b, args) + routes(x, w, b, dy, args)
    print(f"summary: {len(rows)} rows; torch {torch.__version__}; {torch.cuda.get_device_name()}")


if __name__ == "__main__":
    main()
