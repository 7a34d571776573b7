"""hipgn for PyTorch: GroupNorm (+ SiLU/Swish) as a real PyTorch operator.

    import hipgn.torch
    hipgn.torch.patch(model)                         # every nn.GroupNorm, SiLUs fused where safe
    y = hipgn.torch.group_norm(x, 32, w, b, activation="silu")

The operators (torch.ops.hipgn.group_norm_fwd / group_norm_bwd) are libhipgn_torch.so's C++
ones where hipgn was built with this PyTorch, else registered in Python through torch.library
(cpp_operators() says which); both have fake implementations and an autograd formula, and work
under autograd, torch.compile(fullgraph=True) and CUDA graph capture, on the current stream,
with workspace from PyTorch's caching allocator. tune() times hipgn's instances for a model's
problems and saves the winners in the tuning database (HIPGN_TUNING_DB). Under torch.compile, a
SiLU that reads nothing but hipgn's GroupNorm output is fused into it, wherever the model's code
calls the two (set_compile_fusion).
"""

try:
    import torch  # noqa: F401
except ImportError as e:  # the rest of hipgn works without it
    raise ImportError(f"hipgn.torch needs PyTorch, which is not importable here ({e}); "
                      "`import hipgn` (the C API through ctypes) does not need it") from e
if not hasattr(torch.library, "custom_op"):
    raise ImportError(f"hipgn.torch needs PyTorch 2.4 or later (torch.library.custom_op); this is {torch.__version__}")

from ._fusion import fuse_silu, set_compile_fusion
from ._modules import GroupNorm, GroupNormSiLU, Replacement, patch
from ._ops import UnsupportedError, cpp_operators, group_norm, layout_of, set_eager_fast_path, why_unsupported
from ._tune import Tuned, load_tuning_db, tune

__all__ = ["GroupNorm", "GroupNormSiLU", "Replacement", "Tuned", "UnsupportedError", "cpp_operators", "fuse_silu",
           "group_norm", "layout_of", "load_tuning_db", "patch", "set_compile_fusion", "set_eager_fast_path", "tune",
           "why_unsupported"]
