"""Autotuning from PyTorch: run a model once, collect its GroupNorm problems, time every hipgn
instance for each on the GPU, and save the winners in the tuning database."""

import os
from typing import Any, Dict, List, NamedTuple, Optional, Sequence

import torch
from torch import nn

from .. import _library
from . import _ops


class Tuned(NamedTuple):
    key: Optional[_library.ProblemKey]  # what the database files it under; None when skipped
    instance: Optional[str]             # the winner; None when skipped
    us: float                           # its median time
    note: str                           # why skipped, or ""


def load_tuning_db(path: str) -> None:
    """Adds a tuning database file to every hipgn handle of this process, present and future
    (HIPGN_TUNING_DB's file is read anyway). Stale entries warn and are ignored; a malformed file
    raises HipgnError and changes nothing."""
    _ops.add_tuning_db(path)


def _module_problem(module: nn.GroupNorm, x: torch.Tensor, op: str):
    """The C descriptor of what this module computes on x, or a reason it is not hipgn's."""
    activation = getattr(module, "activation", None)
    why = _ops.why_unsupported(x, module.num_groups, module.weight, module.bias, activation)
    if why is not None:
        return None, why
    act, swish_beta = _ops._activation(activation)
    gamma = _ops._gamma_dtype(x, module.weight, module.bias)
    layout = _ops.layout_of(x)
    missing = _ops._missing_build(op, _ops._DTYPE_NAMES[x.dtype], _ops._DTYPE_NAMES[gamma], layout, act)
    if missing is not None:
        return None, missing
    shape = tuple(x.shape)
    p = _library.make_problem(op, shape[0], shape[1], shape[2:], module.num_groups, _ops._DTYPE_NAMES[x.dtype],
                              _ops._DTYPE_NAMES[gamma], layout, "swish" if act else "none", module.eps, swish_beta)
    return p, ""


def tune(model: nn.Module, example_inputs: Any, *, example_kwargs: Optional[Dict[str, Any]] = None,
         backward: Optional[bool] = None, db_path: Optional[str] = None, verbose: bool = True) -> List[Tuned]:
    """Runs model(*example_inputs, **example_kwargs) once (no gradients) with hooks on every
    GroupNorm module, tunes each distinct problem found (its forward, and with `backward` its
    backward: default when the model is training and has parameters that need gradients), and
    saves the winners to db_path (default: HIPGN_TUNING_DB's file), keeping the file's other
    entries. Handles of this process use the winners at once.

    Call it on the model as it will run: patched (patch() fuses SiLUs, which changes the
    problems), in its layout and dtypes, under the same autocast. Plain nn.GroupNorm modules are
    tuned as hipgn would compute them."""
    path = db_path or os.environ.get("HIPGN_TUNING_DB")
    if not path:
        raise ValueError("tune() saves its winners to a tuning database: pass db_path= or set HIPGN_TUNING_DB")
    if backward is None:
        backward = model.training and any(p.requires_grad for p in model.parameters())
    inputs: Sequence[Any] = example_inputs if isinstance(example_inputs, (tuple, list)) else (example_inputs,)

    found: Dict[_library.ProblemKey, Any] = {}  # in the order first seen
    skipped: List[Tuned] = []
    skipped_notes = set()

    def record(module, args, _output):
        x = args[0] if args else None
        if not isinstance(x, torch.Tensor):
            return
        ops = ["fwd"]
        if backward:
            # the backward autograd runs for this module (_ops.backward_op with x needing grad)
            ops.append("bwd" if module.weight is not None and module.weight.requires_grad else "dx")
        for op in ops:
            p, why = _module_problem(module, x, op)
            if p is None:
                note = f"{op} of {type(module).__name__} on {tuple(x.shape)} {x.dtype} {x.device}: {why}"
                if note not in skipped_notes:
                    skipped_notes.add(note)
                    skipped.append(Tuned(None, None, 0.0, note))
                continue
            device = x.device.index
            h = _ops.handle(device)
            key = _library.ProblemKey.of(p, h.arch, h.compute_units)
            found.setdefault(key, (p, device))

    hooks = [m.register_forward_hook(record) for m in model.modules() if isinstance(m, nn.GroupNorm)]
    try:
        with torch.no_grad():
            model(*inputs, **(example_kwargs or {}))
    finally:
        for h in hooks:
            h.remove()

    torch.cuda.synchronize()
    torch.cuda.empty_cache()  # tuning allocates its own buffers outside the caching allocator
    results: List[Tuned] = []
    devices = set()
    for key, (p, device) in found.items():
        h = _ops.handle(device)
        with torch.cuda.device(device):
            instance, us = h.tune(p, torch.cuda.current_stream(device).cuda_stream)
        devices.add(device)
        results.append(Tuned(key, instance, us, ""))
        if verbose:
            print(f"hipgn.tune: {key} -> {instance} ({us:.2f} us)")
    for device in sorted(devices):
        _ops.handle(device).save_tuning_db(path)
    if verbose:
        print(f"hipgn.tune: {len(results)} problems tuned, saved to {path}"
              + (f"; {len(skipped)} skipped" if skipped else ""))
        for s in skipped:
            print(f"hipgn.tune: skipped {s.note}")
    return results + skipped
