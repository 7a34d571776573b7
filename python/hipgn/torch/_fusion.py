"""SiLU after hipgn's GroupNorm, fused under torch.compile.

patch() fuses a SiLU into the GroupNorm before it only where the module structure proves the
GroupNorm's output goes to that SiLU alone (consecutive children of an nn.Sequential). Most
diffusion code calls them in turn from a forward() (diffusers' ResnetBlock2D: norm1, then one
shared nn.SiLU; ldm's VAE: `x * torch.sigmoid(x)`), which a module walk cannot prove, so the SiLU
ran as its own pass over memory after hipgn's kernel. The graph torch.compile traces can prove
it: fuse_silu() rewrites hipgn.group_norm_fwd (no activation) whose output feeds one SiLU and
nothing else into hipgn.group_norm_fwd with SiLU, and drops the SiLU. It runs as inductor's
pre-grad pass, before autograd, so a training graph's backward is the fused backward too.
(bench/NOTES.md, "SiLU fused under torch.compile".)
"""

import operator
import sys
from typing import Optional

import torch

from ._ops import ACT_NONE, ACT_SWISH

_FWD = torch.ops.hipgn.group_norm_fwd.default
# group_norm_fwd(x, weight, bias, num_groups, eps, act, swish_beta): the arguments' positions
_WEIGHT, _ACT, _BETA = 1, 5, 6
_SILU = {f for f in (torch.nn.functional.silu, getattr(torch._C._nn, "silu", None), getattr(torch._C._nn, "silu_", None),
                     torch.ops.aten.silu.default,
                     getattr(torch.ops.aten, "silu_", None)) if f is not None}
_SIGMOID = {torch.sigmoid, torch.ops.aten.sigmoid.default, "sigmoid"}
_MUL = {operator.mul, torch.mul, torch.ops.aten.mul.Tensor, "mul"}


def _arg(node: torch.fx.Node, position: int, name: str, default=None):
    if len(node.args) > position:
        return node.args[position]
    return node.kwargs.get(name, default)


def _is(node: torch.fx.Node, targets) -> bool:
    return node.op in ("call_function", "call_method") and node.target in targets


def _only_output(fwd: torch.fx.Node) -> Optional[torch.fx.Node]:
    """The getitem taking y from `fwd` where nothing else of it (mean, rstd) is used, else None."""
    y = None
    for user in fwd.users:
        if user.op != "call_function" or user.target is not operator.getitem:
            return None
        if user.args[1] == 0:
            y = user
        elif user.users:
            return None
    return y


def _silu_of(y: torch.fx.Node) -> Optional[tuple]:
    """(the node computing silu(y), [nodes to remove]) where y's one consumer is a SiLU: F.silu
    (nn.SiLU), or y * sigmoid(y) with the sigmoid used by that product alone; else None."""
    users = list(y.users)
    if len(users) == 1 and _is(users[0], _SILU) and users[0].args[0] is y:
        return users[0], [users[0]]
    if len(users) != 2:
        return None
    sig = next((u for u in users if _is(u, _SIGMOID) and u.args[0] is y and len(u.args) == 1), None)
    mul = next((u for u in users if u is not sig), None)
    if sig is None or not _is(mul, _MUL) or len(sig.users) != 1 or mul.kwargs:
        return None
    if set(mul.args) != {y, sig} or len(mul.args) != 2:
        return None
    return mul, [mul, sig]


def fuse_silu(graph: torch.fx.Graph) -> int:
    """Rewrites, in place, each hipgn.group_norm_fwd without activation whose y feeds exactly one
    SiLU into group_norm_fwd with SiLU (beta 1), and removes the SiLU; returns how many. Left
    alone: a y used anywhere else too (the SiLU would not be its only reader), a call without
    weight (hipgn's Swish backward reads gamma; group_norm() passes ones when it asks for SiLU
    itself), mean or rstd in use."""
    fused = 0
    for fwd in list(graph.nodes):
        if not _is(fwd, {_FWD}) or _arg(fwd, _ACT, "act") != ACT_NONE or _arg(fwd, _WEIGHT, "weight") is None:
            continue
        y = _only_output(fwd)
        silu = _silu_of(y) if y is not None else None
        if silu is None:
            continue
        out, dead = silu
        args = list(fwd.args) + [None] * (_BETA + 1 - len(fwd.args))
        kwargs = dict(fwd.kwargs)
        for position, name, value in ((_ACT, "act", ACT_SWISH), (_BETA, "swish_beta", 1.0)):
            args[position] = value
            kwargs.pop(name, None)
        fwd.args, fwd.kwargs = tuple(args), kwargs
        out.replace_all_uses_with(y)
        for node in dead:
            graph.erase_node(node)
        fused += 1
    return fused


_wanted = True  # set_compile_fusion's setting


def _pass():
    """hipgn's pass object: _inductor_pass.FuseSiLU's one instance, or fuse_silu itself on a
    PyTorch without inductor's CustomGraphPass."""
    try:
        from ._inductor_pass import PASS
    except ImportError:
        return fuse_silu
    return PASS


def apply_setting() -> None:
    """Sets or removes hipgn's pass in inductor's config as set_compile_fusion says. The forward
    operator's fake implementation calls it, so the pass is in place when torch.compile first
    traces hipgn, before inductor compiles that graph; not at `import hipgn.torch`, because
    importing inductor takes 5-6 s (H200 machine, PyTorch 2.11)."""
    from torch._inductor import config
    mine = _pass()
    if _wanted and config.pre_grad_custom_pass is None:
        config.pre_grad_custom_pass = mine
    elif not _wanted and config.pre_grad_custom_pass is mine:
        config.pre_grad_custom_pass = None


def set_compile_fusion(enabled: bool) -> None:
    """Whether torch.compile (inductor) fuses a SiLU that follows hipgn's GroupNorm into it
    (fuse_silu, as inductor's pre_grad_custom_pass). On by default. hipgn does not replace a
    pre-grad pass someone else set: call fuse_silu(graph) from that one. Graphs compiled before
    keep what they were compiled with (torch._dynamo.reset() recompiles)."""
    global _wanted
    _wanted = bool(enabled)
    if "torch._inductor.config" in sys.modules:  # else the first trace applies it
        apply_setting()
