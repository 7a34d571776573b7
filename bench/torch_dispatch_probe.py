"""A probe, not part of the package: the host time one GroupNorm call costs through each way of
registering hipgn's operators with PyTorch, before the package changes its own (bench/NOTES.md,
"The PyTorch operator's host time").

On the H200 (2026-11-30, tests/torch/networks.py) ResNet-50 with GroupNorm, bf16 autocast, ran
slower patched than not (compiled inference 3.58 -> 8.00 ms, eager training 41.0 -> 53.9 ms)
while every GroupNorm kernel alone is faster than PyTorch's: 53 GroupNorms a pass at ~110 us of
host time each make the step host-bound. The package registers its operators with
torch.library.custom_op and register_autograd; PyTorch's own issues (pytorch/pytorch#139500,
#176592, #177109) put that path's wrappers at several times a torch.library.Library define /
impl registration, and an autograd.Function outside the operator below register_autograd.
This times, per call, with the GPU kept busy (torch.cuda._sleep) so only the host is measured:
  impl          forward_impl itself (the work under every path: outputs, workspace, the launch)
  front         hipgn.torch.group_norm's eager fast path (its checks, then forward_impl)
  custom_op     torch.ops.hipgn.group_norm_fwd (the package's operator), no grad
  define/impl   the same forward_impl registered through torch.library.Library, no grad
and, with gradients, one forward and one backward a call (the autograd engine included):
  F.group_norm + F.silu, the package's group_norm (custom_op + register_autograd), and an
  autograd.Function over the define/impl operators.
Each path's output is checked against the package's (the same bits: one kernel, one dispatch).

Run on the GPU machine after a build: HIPGN_LIBRARY=<build>/runtime/libhipgn.so python3
bench/torch_dispatch_probe.py
"""

import os
import sys

# the package's overhead rows' measurement (tests/torch/bench_overhead.py; its _common puts this
# tree's python/ on the path, and exits 77 saying why where PyTorch or a GPU is missing)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "torch"))
from bench_overhead import host_us, torch  # noqa: E402

import torch.nn.functional as F  # noqa: E402

import hipgn.torch as hgn  # noqa: E402
from hipgn.torch import _ops  # noqa: E402

CALLS = 100  # a forward and backward queue ~3 kernels: 300, under the launch queue's ~1000


# the same implementations, registered the lower-level way
_probe_lib = torch.library.Library("hipgn_probe", "DEF")
_probe_lib.define("fwd(Tensor x, Tensor? weight, Tensor? bias, int num_groups, float eps, int act, "
                  "float swish_beta) -> (Tensor, Tensor, Tensor)")
_probe_lib.define("bwd(Tensor dy, Tensor x, Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, int num_groups, "
                  "float eps, int act, float swish_beta, bool need_dx, bool need_dgb) -> (Tensor, Tensor, Tensor)")
_probe_lib.impl("fwd", _ops.forward_impl, "CUDA")
_probe_lib.impl("bwd", _ops.backward_impl, "CUDA")


@torch.library.register_fake("hipgn_probe::fwd", lib=_probe_lib)
def _(x, weight, bias, num_groups, eps, act, swish_beta):
    n = x.shape[0]
    return (torch.empty_like(x), x.new_empty((n, num_groups), dtype=torch.float32),
            x.new_empty((n, num_groups), dtype=torch.float32))


@torch.library.register_fake("hipgn_probe::bwd", lib=_probe_lib)
def _(dy, x, mean, rstd, weight, bias, num_groups, eps, act, swish_beta, need_dx, need_dgb):
    return _ops.backward_outputs(x, weight, need_dx, need_dgb and weight is not None)


class _Function(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, num_groups, eps, act, swish_beta):
        y, mean, rstd = torch.ops.hipgn_probe.fwd.default(x, weight, bias, num_groups, eps, act, swish_beta)
        ctx.save_for_backward(x, weight, bias, mean, rstd)
        ctx.hipgn_args = (num_groups, eps, act, swish_beta)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, weight, bias, mean, rstd = ctx.saved_tensors
        num_groups, eps, act, swish_beta = ctx.hipgn_args
        need_dx, need_dw, need_db = ctx.needs_input_grad[0], ctx.needs_input_grad[1], ctx.needs_input_grad[2]
        dy = _ops._to_layout(dy, _ops.layout_of(x) or "cf")
        dx, dw, db = torch.ops.hipgn_probe.bwd.default(dy, x, mean, rstd, weight, bias, num_groups, eps, act,
                                                       swish_beta, need_dx, need_dw or need_db)
        return dx if need_dx else None, dw if need_dw else None, db if need_db else None, None, None, None, None


def main():
    x = torch.randn(2, 320, 64, 64, device="cuda", dtype=torch.float16).contiguous(memory_format=torch.channels_last)
    w = torch.rand(320, device="cuda", dtype=torch.float16) + 0.5
    b = torch.randn(320, device="cuda", dtype=torch.float16)
    dy = torch.randn_like(x)
    args = (x, w, b, 32, 1e-5, _ops.ACT_SWISH, 1.0)
    rows = []
    with torch.no_grad():
        want = torch.ops.hipgn.group_norm_fwd.default(*args)[0]
        for name, fn in (("impl: forward_impl", lambda: _ops.forward_impl(*args)),
                         ("front: group_norm(), eager fast path", lambda: hgn.group_norm(x, 32, w, b, activation="silu")),
                         ("custom_op: torch.ops.hipgn.group_norm_fwd", lambda: torch.ops.hipgn.group_norm_fwd.default(*args)),
                         ("define/impl: the same registered by Library", lambda: torch.ops.hipgn_probe.fwd.default(*args))):
            out = fn()
            got = out[0] if isinstance(out, tuple) else out
            assert torch.equal(got, want), name
            rows.append((name + ", no grad", host_us(fn, CALLS)))
        rows.append(("F.group_norm + F.silu, no grad", host_us(lambda: F.silu(F.group_norm(x, 32, w, b)), CALLS)))
    xg, wg, bg = (t.detach().clone().requires_grad_() for t in (x, w, b))

    grads = {}
    for name, forward in (("F.group_norm + F.silu", lambda: F.silu(F.group_norm(xg, 32, wg, bg))),
                          ("group_norm(): custom_op + register_autograd",
                           lambda: hgn.group_norm(xg, 32, wg, bg, activation="silu")),
                          ("autograd.Function over define/impl",
                           lambda: _Function.apply(xg, wg, bg, 32, 1e-5, _ops.ACT_SWISH, 1.0))):
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
    a, c = grads["group_norm(): custom_op + register_autograd"], grads["autograd.Function over define/impl"]
    assert all(torch.equal(p, q) for p, q in zip(a, c)), "the two hipgn paths' gradients differ"
    print(f"host time per call, x {tuple(x.shape)} fp16 channels-last, SiLU (best of 3 x {CALLS} calls):")
    for name, us in rows:
        print(f"  {name:62s} {us:7.1f} us")
    print(f"summary: {len(rows)} rows; torch {torch.__version__}; {torch.cuda.get_device_name()}")


if __name__ == "__main__":
    main()
