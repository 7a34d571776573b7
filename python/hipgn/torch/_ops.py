"""The PyTorch operators: hipgn::group_norm_fwd and hipgn::group_norm_bwd, with fake
implementations for torch.compile and an autograd formula through hipgn's backward from the
saved mean and rstd, and group_norm(), the function users call.

The operators come from libhipgn_torch.so (pytorch/operators.cpp: the same operators in C++,
built where PyTorch was found at configure time) when it sits beside libhipgn.so and was built
for this PyTorch; else they are registered here, in Python, through torch.library.custom_op.
The C++ ones cost a fraction of the host time a call (bench/NOTES.md, "The PyTorch operators in
C++"); HIPGN_TORCH_EXTENSION=0 chooses the Python ones.

Every launch goes on the current stream, with its workspace from PyTorch's caching allocator
and the handle's arrival counters (zero and left zero, so no memset precedes a launch: a
stream's own, or while capturing the capture's own, made outside the graph): calls can be
captured in CUDA graphs, and graphs replayed side by side share nothing.
"""

import ctypes
import math
import os
import threading
import typing
from typing import Optional, Tuple, Union

import torch
from torch import Tensor

from .. import _library

_lib = _library.library()  # at import: a missing library fails here, naming where it looked
# "op_x_gamma_layout_act" of every key this build compiled: a dict of plain strings, which
# torch.compile's tracer reads as constants when group_norm() checks its inputs
_BUILT = {"_".join(key): True for key in _lib.built_keys()}
EXTENSION_NAME = "libhipgn_torch.so"


def _load_extension() -> Optional[ctypes.CDLL]:
    """libhipgn_torch.so beside libhipgn.so, loaded (which registers its operators), or None
    where it is absent or HIPGN_TORCH_EXTENSION=0. One built for another PyTorch is an error
    that says what to do, not a silent fallback: it would be slower without saying so."""
    path = os.path.join(os.path.dirname(os.path.abspath(_lib.path)), EXTENSION_NAME)
    if os.environ.get("HIPGN_TORCH_EXTENSION", "") == "0" or not os.path.isfile(path):
        return None
    advice = ("rebuild hipgn with this PyTorch importable by python3 (cmake reconfigures it), or set "
              "HIPGN_TORCH_EXTENSION=0 to use hipgn.torch's Python operators")
    try:
        torch.ops.load_library(path)
    except OSError as e:
        raise ImportError(f"hipgn.torch: {path} cannot be loaded ({e}): {advice}") from e
    ext = ctypes.CDLL(path)
    ext.hipgn_torch_built_with.restype = ctypes.c_char_p
    built = ext.hipgn_torch_built_with().decode()
    if built != torch.__version__.split("+")[0]:
        raise ImportError(f"hipgn.torch: {path} was built for PyTorch {built}, this is {torch.__version__}: {advice}")
    ext.hipgn_torch_handle.argtypes, ext.hipgn_torch_handle.restype = [ctypes.c_int], ctypes.c_void_p
    ext.hipgn_torch_add_tuning_db.argtypes, ext.hipgn_torch_add_tuning_db.restype = [ctypes.c_char_p], ctypes.c_int
    ext.path = path
    return ext


_ext = _load_extension()


def cpp_operators() -> Optional[str]:
    """The path of libhipgn_torch.so when the operators are its C++ ones; None when they are
    hipgn.torch's Python ones."""
    return None if _ext is None else _ext.path

_DTYPE_NAMES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}
_DTYPE_CODES = {t: _library.DTYPES[name] for t, name in _DTYPE_NAMES.items()}
_OP_FWD, _OP_DX, _OP_DGB, _OP_BWD = (_library.OPS[name] for name in ("fwd", "dx", "dgb", "bwd"))
ACT_NONE, ACT_SWISH = _library.ACTIVATIONS["none"], _library.ACTIVATIONS["swish"]


class UnsupportedError(ValueError):
    """hipgn cannot take these inputs (the message says why); group_norm(..., fallback=True)
    computes them with PyTorch instead."""


def _activation(activation) -> Tuple[int, float]:
    """None -> no activation; "silu" (or "swish") -> SiLU; ("swish", beta) -> z * sigmoid(beta z)."""
    if activation is None or activation == "none":
        return ACT_NONE, 1.0
    if activation in ("silu", "swish"):
        return ACT_SWISH, 1.0
    if isinstance(activation, tuple) and len(activation) == 2 and activation[0] == "swish":
        return ACT_SWISH, float(activation[1])
    raise ValueError(f"activation {activation!r}: hipgn fuses None, 'silu', or ('swish', beta)")


def layout_of(x: Tensor) -> Optional[str]:
    """"cf" (contiguous: N, C, spatial...), "cl" (channels-last: C fastest, then the spatial
    dimensions, then N; for rank 4 and 5 what channels_last and channels_last_3d make), or None.
    Size-1 dimensions may have any stride; a tensor both ways (one position, one channel) is cf,
    which then addresses the same bytes."""
    if x.is_contiguous():
        return "cf"
    sizes, strides = x.shape, x.stride()
    expected = 1
    for d in [1] + list(range(x.dim() - 1, 1, -1)) + [0]:
        if sizes[d] != 1 and strides[d] != expected:
            return None
        expected *= sizes[d]
    return "cl"


def _to_layout(t: Tensor, layout: str) -> Tensor:
    """t in the given layout: a copy only if it is not already (a gradient may arrive in any)."""
    if layout_of(t) == layout:
        return t
    if layout == "cf":
        return t.contiguous()
    return t.movedim(1, -1).contiguous().movedim(-1, 1)


def _gamma_dtype(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor]) -> torch.dtype:
    if weight is not None:
        return weight.dtype
    return bias.dtype if bias is not None else x.dtype


def _missing_build(op: str, xd: str, gd: str, layout: str, act: int) -> Optional[str]:
    act_name = "swish" if act else "none"
    if _BUILT.get(op + "_" + xd + "_" + gd + "_" + layout + "_" + act_name, False):
        return None
    return (f"this libhipgn.so ({_lib.path}) was built without the {op} instances for x {xd}, gamma {gd}, "
            f"layout {layout}, activation {act_name}: reconfigure it with HIPGN_OPS, HIPGN_DTYPES, HIPGN_LAYOUTS "
            f"and HIPGN_ACTIVATIONS that include them")


def backward_op(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor]) -> Optional[str]:
    """The backward op autograd will run for these inputs (None: no gradient needed): dx alone
    with frozen weights, dgamma/dbeta alone (dgb) when x needs none, else the fused bwd."""
    if not torch.is_grad_enabled():
        return None
    need_dx = x.requires_grad
    need_dgb = (weight is not None and weight.requires_grad) or (bias is not None and bias.requires_grad)
    return "bwd" if need_dx and need_dgb else "dx" if need_dx else "dgb" if need_dgb else None


def why_unsupported(x: Tensor, num_groups: int, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
                    activation=None, backward: Optional[str] = None) -> Optional[str]:
    """Why hipgn cannot compute this GroupNorm (None if it can); with `backward` ("dx", "dgb" or
    "bwd"), that backward op too. Errors PyTorch itself would raise (C not divisible by G, a
    weight of the wrong shape) raise here too."""
    if not isinstance(x, Tensor):
        raise TypeError(f"x must be a torch.Tensor, not {type(x).__name__}")
    if x.dim() < 2:
        raise ValueError(f"x has shape {tuple(x.shape)}: GroupNorm takes (N, C, *spatial)")
    c = x.shape[1]
    if num_groups < 1 or c % num_groups != 0:
        raise ValueError(f"the {c} channels of x are not divisible by num_groups = {num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.shape[0] != c):
            raise ValueError(f"{name} has shape {tuple(t.shape)}; x has {c} channels")
    act, _ = _activation(activation)
    if x.device.type != "cuda":
        return f"x is on {x.device}: hipgn runs on GPUs (PyTorch's 'cuda' devices)"
    if x.dim() > 2 + _library.MAX_SPATIAL_RANK:
        return f"x has {x.dim() - 2} spatial dimensions: hipgn takes at most {_library.MAX_SPATIAL_RANK}"
    xd = _DTYPE_NAMES.get(x.dtype)
    if xd is None:
        return f"x is {x.dtype}: hipgn computes float32, float16 and bfloat16"
    for name, t in (("weight", weight), ("bias", bias)):
        if t is None:
            continue
        if t.device != x.device:
            return f"{name} is on {t.device}, x on {x.device}"
        if t.dtype != x.dtype and t.dtype != torch.float32:
            return f"{name} is {t.dtype}: hipgn takes weight and bias of x's dtype ({x.dtype}) or float32"
    if weight is not None and bias is not None and weight.dtype != bias.dtype:
        return f"weight is {weight.dtype} but bias {bias.dtype}: hipgn takes one dtype for both"
    layout = layout_of(x)
    if layout is None:
        return (f"x (shape {tuple(x.shape)}, strides {x.stride()}) is neither contiguous nor channels-last: "
                "hipgn reads those two layouts (call .contiguous() or .contiguous(memory_format=torch.channels_last))")
    gd = _DTYPE_NAMES[_gamma_dtype(x, weight, bias)]
    missing = _missing_build("fwd", xd, gd, layout, act)
    if missing is None and backward is not None:
        missing = _missing_build(backward, xd, gd, layout, act)
    return missing


# --- the calls into the library ---------------------------------------------------------------

_handles = {}  # device index -> _library.Handle, made with that device current
_handles_lock = threading.Lock()
_extra_databases = []  # files load_tuning_db() added: read by handles made later too
_plans = {}  # a call's metadata -> what it decides (_plan)


def handle(device: int) -> _library.Handle:
    """The device's handle the operators launch through (with the C++ operators, theirs)."""
    h = _handles.get(device)
    if h is None:
        with _handles_lock:
            h = _handles.get(device)
            if h is None:
                if _ext is not None:  # the C++ operators' handle: its databases are the extension's
                    ptr = _ext.hipgn_torch_handle(device)
                    if not ptr:
                        raise _library.HipgnError(_library.STATUS_RUNTIME_ERROR,
                                                  f"hipgn: {_ext.path} could not make a handle on device {device}")
                    h = _library.Handle(_lib, ptr)
                else:
                    with torch.cuda.device(device):  # hipgn_create takes the current device
                        h = _lib.handle()
                    for path in _extra_databases:
                        h.load_tuning_db(path)
                _handles[device] = h
    return h


def add_tuning_db(path: str) -> None:
    """A tuning database file for every handle of the operators, present and future."""
    if _ext is not None:
        _lib.check(_ext.hipgn_torch_add_tuning_db(os.fsencode(path)))
        return
    _extra_databases.append(path)
    for h in list(_handles.values()):
        h.load_tuning_db(path)


_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _stream(device: int) -> int:
    # the private call inductor's generated code uses: a fraction of a microsecond, where
    # torch.cuda.current_stream() builds a Python object per call
    if _raw_stream is not None:
        return _raw_stream(device)
    return torch.cuda.current_stream(device).cuda_stream


_BACKWARD_NAMES = {code: name for name, code in _library.OPS.items() if code != _OP_FWD}  # why_unsupported's


def _checked_layout(op: int, x: Tensor, num_groups: int, weight: Optional[Tensor], bias: Optional[Tensor], act: int,
                    swish_beta: float) -> str:
    """x's layout, once why_unsupported found nothing against the call (else its ValueError or an
    UnsupportedError saying why). group_norm() checked this before it called; callers of the
    operators themselves did not, and a weight of the wrong length or on another device would be
    read out of bounds or through a pointer the kernel cannot use."""
    activation = ("swish", swish_beta) if act == ACT_SWISH else None
    why = why_unsupported(x, num_groups, weight, bias, activation, backward=_BACKWARD_NAMES.get(op))
    if why is not None:
        raise UnsupportedError(why)
    return layout_of(x)


def _check_backward_inputs(dy: Tensor, x: Tensor, layout: str, mean: Tensor, rstd: Tensor, num_groups: int) -> None:
    """dy, mean and rstd as the forward and autograd make them (the C++ operators' check)."""
    # the same strides are the same layout; other strides may still be (size-1 dimensions)
    if dy.shape != x.shape or (dy.stride() != x.stride() and layout_of(dy) != layout):
        raise ValueError(f"dy (shape {tuple(dy.shape)}, strides {dy.stride()}) must have x's shape and layout "
                         f"({tuple(x.shape)}, {layout})")
    if dy.dtype != x.dtype or dy.device != x.device:
        raise ValueError(f"dy is {dy.dtype} on {dy.device}: it must be x's dtype on x's device ({x.dtype}, {x.device})")
    for name, t in (("mean", mean), ("rstd", rstd)):
        if (t.dtype != torch.float32 or t.shape != (x.shape[0], num_groups) or not t.is_contiguous()
                or t.device != x.device):
            raise ValueError(f"{name} ({t.dtype}, shape {tuple(t.shape)}, on {t.device}) must be the forward's: "
                             f"float32, contiguous, shape [{x.shape[0]}, {num_groups}], on {x.device}")


def _meta(t: Optional[Tensor]):
    return None if t is None else (t.dtype, t.shape, t.get_device())


def _plan(op: int, x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], num_groups: int, eps: float,
          act: int, swish_beta: float):
    """What a call's metadata decides, looked up by shape, strides, dtypes and arguments rather
    than rebuilt: (the C descriptor by reference, the workspace bytes, the handle's pointer, the
    layout, the device index). Rebuilding cost 3-5 us of a 33 us call (bench/NOTES.md, "The
    operator's host time, piece by piece")."""
    key = (op, x.shape, x.stride(), x.dtype, x.get_device(), _meta(weight), _meta(bias), num_groups, eps, act,
           swish_beta)
    plan = _plans.get(key)
    if plan is not None:
        return plan
    layout = _checked_layout(op, x, num_groups, weight, bias, act, swish_beta)
    device = x.device.index
    shape = x.shape
    p = _library.Problem(op=op, n=shape[0], c=shape[1], groups=num_groups, spatial_rank=len(shape) - 2,
                         x_dtype=_DTYPE_CODES[x.dtype], gamma_dtype=_DTYPE_CODES[_gamma_dtype(x, weight, bias)],
                         layout=_library.LAYOUTS[layout], act=act, eps=eps, swish_beta=swish_beta)
    for i, d in enumerate(shape[2:]):
        p.spatial[i] = d
    h = handle(device)
    # enough for whatever dispatch picks, tuned later or not: stays valid after tune()
    plan = (ctypes.byref(p), h.workspace_size(p), h.ptr, layout, device)  # byref keeps p alive
    if len(_plans) >= 65536:  # endless dynamic shapes: start over rather than grow forever
        _plans.clear()
    _plans[key] = plan
    return plan


def _ptr(t: Optional[Tensor]) -> Optional[int]:
    return None if t is None else t.data_ptr()


def _launch(fn, device: int, ws_bytes: int, *args) -> None:
    """fn (the library's fwd or bwd) with a workspace of ws_bytes from PyTorch's allocator, on
    the current stream of x's device, made current first if it is not (hipgn launches there)."""
    ws = torch.empty((ws_bytes,), dtype=torch.uint8, device=device) if ws_bytes else None
    previous = torch.cuda.current_device()
    if previous != device:
        torch.cuda.set_device(device)
    try:
        status = fn(*args, _ptr(ws), ws_bytes, None, _stream(device))
    finally:
        if previous != device:
            torch.cuda.set_device(previous)
    if status != 0:
        raise _lib.error(status)


def forward_impl(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], num_groups: int, eps: float, act: int,
                 swish_beta: float) -> Tuple[Tensor, Tensor, Tensor]:
    """y (in x's layout), mean and rstd ([N, G] fp32) computed by hipgn on the current stream."""
    y = torch.empty_like(x)  # x's strides: y comes back in x's layout
    mean = x.new_empty((x.shape[0], num_groups), dtype=torch.float32)
    rstd = x.new_empty((x.shape[0], num_groups), dtype=torch.float32)
    if x.numel() == 0:  # an empty batch or spatial extent: PyTorch's statistics of nothing
        _checked_layout(_OP_FWD, x, num_groups, weight, bias, act, swish_beta)
        return y, mean.fill_(math.nan), rstd.fill_(math.nan)
    pref, ws_bytes, hptr, _, device = _plan(_OP_FWD, x, weight, bias, num_groups, eps, act, swish_beta)
    weight = weight.contiguous() if weight is not None else None
    bias = bias.contiguous() if bias is not None else None
    _launch(_lib.fwd, device, ws_bytes, hptr, pref, x.data_ptr(), y.data_ptr(), _ptr(weight), _ptr(bias),
            mean.data_ptr(), rstd.data_ptr())
    return y, mean, rstd


def backward_outputs(x: Tensor, weight: Optional[Tensor], need_dx: bool,
                     need_dgb: bool) -> Tuple[Tensor, Tensor, Tensor]:
    """dx, dgamma, dbeta, allocated; what is not computed is an empty tensor. Shared by the
    real and the fake implementation, so that they agree by construction."""
    dx = torch.empty_like(x) if need_dx else x.new_empty((0,))
    if need_dgb and weight is not None:
        return (dx, torch.empty_like(weight, memory_format=torch.contiguous_format),
                torch.empty_like(weight, memory_format=torch.contiguous_format))
    return dx, x.new_empty((0,)), x.new_empty((0,))


def backward_impl(dy: Tensor, x: Tensor, mean: Tensor, rstd: Tensor, weight: Optional[Tensor],
                  bias: Optional[Tensor], num_groups: int, eps: float, act: int, swish_beta: float, need_dx: bool,
                  need_dgb: bool) -> Tuple[Tensor, Tensor, Tensor]:
    """dx and (with weight) dgamma, dbeta through hipgn's backward, from the forward's mean and
    rstd; dy must be in x's layout."""
    need_dgb = need_dgb and weight is not None
    runs = (need_dx or need_dgb) and x.numel() > 0
    if runs:
        op = _OP_BWD if need_dx and need_dgb else (_OP_DX if need_dx else _OP_DGB)
        pref, ws_bytes, hptr, layout, device = _plan(op, x, weight, bias, num_groups, eps, act, swish_beta)
    else:  # no kernel runs: the arguments are checked all the same
        layout = _checked_layout(_OP_FWD, x, num_groups, weight, bias, act, swish_beta)
    _check_backward_inputs(dy, x, layout, mean, rstd, num_groups)
    dx, dgamma, dbeta = backward_outputs(x, weight, need_dx, need_dgb)
    if not runs:
        return (dx, dgamma.zero_(), dbeta.zero_()) if x.numel() == 0 else (dx, dgamma, dbeta)
    weight = weight.contiguous() if weight is not None else None
    bias = bias.contiguous() if bias is not None else None
    _launch(_lib.bwd, device, ws_bytes, hptr, pref, dy.data_ptr(), x.data_ptr(), mean.data_ptr(), rstd.data_ptr(),
            _ptr(weight), _ptr(bias), dx.data_ptr() if need_dx else None, dgamma.data_ptr() if need_dgb else None,
            dbeta.data_ptr() if need_dgb else None)
    return dx, dgamma, dbeta


# --- the operators --------------------------------------------------------------------------
# (typing.Optional/Tuple rather than PEP 604: infer_schema reads these annotations; no
# "from __future__ import annotations" in this file for the same reason)

def _forward_operator(x: Tensor, weight: typing.Optional[Tensor], bias: typing.Optional[Tensor], num_groups: int,
                      eps: float, act: int, swish_beta: float) -> typing.Tuple[Tensor, Tensor, Tensor]:
    """y = act(weight * (x - mean) * rstd + bias), and mean, rstd [N, G] fp32 (for the backward)."""
    return forward_impl(x, weight, bias, num_groups, eps, act, swish_beta)


def _backward_operator(dy: Tensor, x: Tensor, mean: Tensor, rstd: Tensor, weight: typing.Optional[Tensor],
                       bias: typing.Optional[Tensor], num_groups: int, eps: float, act: int, swish_beta: float,
                       need_dx: bool, need_dgb: bool) -> typing.Tuple[Tensor, Tensor, Tensor]:
    """dx (if need_dx), dgamma and dbeta (if need_dgb and weight is given; empty otherwise)."""
    return backward_impl(dy, x, mean, rstd, weight, bias, num_groups, eps, act, swish_beta, need_dx, need_dgb)


def _fake_forward(x, weight, bias, num_groups, eps, act, swish_beta):
    from . import _fusion  # here, not at import: torch.compile is tracing; its passes come next
    _fusion.apply_setting()
    n = x.shape[0]
    return (torch.empty_like(x), x.new_empty((n, num_groups), dtype=torch.float32),
            x.new_empty((n, num_groups), dtype=torch.float32))


def _fake_backward(dy, x, mean, rstd, weight, bias, num_groups, eps, act, swish_beta, need_dx, need_dgb):
    return backward_outputs(x, weight, need_dx, need_dgb and weight is not None)


if _ext is None:  # the Python operators; the C++ ones are registered by loading the extension
    torch.library.custom_op("hipgn::group_norm_fwd", mutates_args=(), device_types="cuda")(_forward_operator)
    torch.library.custom_op("hipgn::group_norm_bwd", mutates_args=(), device_types="cuda")(_backward_operator)
torch.library.register_fake("hipgn::group_norm_fwd")(_fake_forward)
torch.library.register_fake("hipgn::group_norm_bwd")(_fake_backward)


def _save_for_formula(ctx, inputs, output):
    """What the formula (_gradients) reads: x, weight, bias, mean, rstd and the call's scalars."""
    x, weight, bias, num_groups, eps, act, swish_beta = inputs
    _, mean, rstd = output
    ctx.save_for_backward(x, weight, bias, mean, rstd)
    ctx.hipgn_args = (num_groups, eps, act, swish_beta)


def _setup_context(ctx, inputs, output):
    _save_for_formula(ctx, inputs, output)
    ctx.mark_non_differentiable(output[1], output[2])


def _gradients(bwd, ctx, dy) -> Tuple[Optional[Tensor], ...]:
    """The formula's gradients of (x, weight, bias, num_groups, eps, act, swish_beta) through
    bwd: the backward operator, or backward_impl itself on the eager path."""
    x, weight, bias, mean, rstd = ctx.saved_tensors
    num_groups, eps, act, swish_beta = ctx.hipgn_args
    need_dx, need_dw, need_db = ctx.needs_input_grad[0], ctx.needs_input_grad[1], ctx.needs_input_grad[2]
    if dy.stride() != x.stride():  # the same strides are the same layout: no copy, no reading them
        dy = _to_layout(dy, layout_of(x) or "cf")
    dx, dw, db = bwd(dy, x, mean, rstd, weight, bias, num_groups, eps, act, swish_beta, need_dx, need_dw or need_db)
    return dx if need_dx else None, dw if need_dw else None, db if need_db else None, None, None, None, None


def _backward(ctx, dy, _dmean, _drstd):
    return _gradients(torch.ops.hipgn.group_norm_bwd.default, ctx, dy)


if _ext is None:  # the C++ operators carry the same formula (GroupNormFunction)
    torch.library.register_autograd("hipgn::group_norm_fwd", _backward, setup_context=_setup_context)


class _EagerGroupNorm(torch.autograd.Function):
    """group_norm()'s route in plain eager mode with gradients: the operator's formula, with the
    impls called directly. An autograd forward costs 38-44 us of host time this way against
    112-117 through the operator, a forward and backward 190-220 against 530-560 (bench/NOTES.md,
    "The operator's host time, piece by piece"): custom_op's and register_autograd's Python
    wrappers cost more than the call itself."""

    @staticmethod
    def forward(ctx, *inputs):  # the operator's: x, weight, bias, num_groups, eps, act, swish_beta
        output = forward_impl(*inputs)
        _save_for_formula(ctx, inputs, output)
        return output[0]  # y alone: mean and rstd stay saved tensors, not outputs autograd tracks

    @staticmethod
    @torch.autograd.function.once_differentiable  # as the operator: no second derivative
    def backward(ctx, dy):
        return _gradients(backward_impl, ctx, dy)


# --- the function users call ----------------------------------------------------------------

_eager_fast_path = True


def set_eager_fast_path(enabled: bool) -> None:
    """With the Python operators, in plain eager mode group_norm() calls hipgn directly instead of
    through the registered operator: without autograd, forward_impl itself; with it, an
    autograd.Function with the operator's formula over the impls. That saves most of the per-call
    host time. On by default; off makes every call go through the operator. (The C++ operators
    cost less than that path: group_norm() always calls them.)"""
    global _eager_fast_path
    _eager_fast_path = bool(enabled)


def _plain_eager(*tensors: Optional[Tensor]) -> bool:
    """Whether nothing observes or transforms this call (tracing, dispatch or function modes,
    functorch, tensor subclasses, on any of its tensors): only then may it skip the dispatcher.
    Anything unknown: no."""
    if torch.jit.is_tracing():
        return False
    try:
        if torch._C._len_torch_dispatch_stack() != 0 or torch._C._is_torch_function_mode_enabled():
            return False
        wrapped = torch._C._functorch.is_functorch_wrapped_tensor
        return all(t is None or (type(t) is Tensor or type(t) is torch.nn.Parameter) and not wrapped(t)
                   for t in tensors)
    except AttributeError:  # a PyTorch without these internals: take the safe path
        return False


def _torch_group_norm(x, num_groups, weight, bias, eps, act, swish_beta):
    y = torch.nn.functional.group_norm(x, num_groups, weight, bias, eps)
    if act == ACT_SWISH:
        y = torch.nn.functional.silu(y) if swish_beta == 1.0 else y * torch.sigmoid(swish_beta * y)
    return y


def group_norm(x: Tensor, num_groups: int, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
               eps: float = 1e-5, activation: Union[None, str, Tuple[str, float]] = None, *,
               fallback: bool = False) -> Tensor:
    """F.group_norm(x, num_groups, weight, bias, eps), then the activation (None, "silu", or
    ("swish", beta) for z * sigmoid(beta z)), fused, computed by hipgn.

    x: (N, C, *spatial) on a GPU, float32, float16 or bfloat16, contiguous or channels-last (read
    from the strides; y comes back in x's layout). weight, bias: x's dtype or float32 (what
    autocast and mixed-precision training produce). Works under autograd, torch.compile
    (fullgraph) and CUDA graph capture, on the current stream. What hipgn cannot take raises
    UnsupportedError saying why, or, with fallback=True, is computed by PyTorch instead.
    """
    act, swish_beta = _activation(activation)
    grad_op = backward_op(x, weight, bias)
    why = why_unsupported(x, num_groups, weight, bias, activation, backward=grad_op)
    if why is not None:
        if fallback:
            return _torch_group_norm(x, num_groups, weight, bias, eps, act, swish_beta)
        raise UnsupportedError(why)
    if weight is None and (bias is not None or act == ACT_SWISH):
        # hipgn's backward takes gamma when there is a bias gradient or Swish to recompute
        weight = torch.ones(x.shape[1], dtype=_gamma_dtype(x, weight, bias), device=x.device)
    if _ext is None and not torch.compiler.is_compiling() and _eager_fast_path and _plain_eager(x, weight, bias):
        if grad_op is None:
            return forward_impl(x, weight, bias, num_groups, float(eps), act, swish_beta)[0]
        return _EagerGroupNorm.apply(x, weight, bias, num_groups, float(eps), act, swish_beta)
    return torch.ops.hipgn.group_norm_fwd.default(x, weight, bias, num_groups, float(eps), act, swish_beta)[0]
