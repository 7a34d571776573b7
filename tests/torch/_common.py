"""Shared by the PyTorch tests: the skip rule (exit 77, with the reason: ctest's skip), the
source tree's package on the path, fresh random inputs, float64 references and tolerances."""

import contextlib
import os
import sys

sys.stdout.reconfigure(line_buffering=True)  # what printed before a crash still shows
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE_DIR = os.path.join(REPO, "python")  # the package as it is in this tree
sys.path.insert(0, PACKAGE_DIR)

SKIP = 77  # ctest's SKIP_RETURN_CODE for these tests


def skip(why: str):
    print(f"skipped: {why}")
    sys.exit(SKIP)


def require_torch_gpu():
    """torch, after checking it can run hipgn.torch here; else exits 77 saying why."""
    try:
        import torch
    except ImportError as e:
        skip(f"PyTorch is not importable here ({e})")
    if not hasattr(torch.library, "custom_op"):
        skip(f"PyTorch {torch.__version__} predates torch.library.custom_op (2.4); hipgn.torch needs it")
    if not torch.cuda.is_available():
        skip(f"PyTorch {torch.__version__} sees no GPU")
    return torch


torch = require_torch_gpu()
import torch.nn.functional as F  # noqa: E402

SEED = int(os.environ.get("HIPGN_TEST_SEED", str(int.from_bytes(os.urandom(4), "little"))))
print(f"random seed {SEED} (set HIPGN_TEST_SEED to repeat)")
torch.manual_seed(SEED)

# |got - want| <= atol + rtol * |want|, per dtype of what hipgn wrote: one rounding of that
# dtype plus fp32 arithmetic (tests/gpu.cpp uses the same for y)
TOL = {torch.float32: (1e-4, 1e-4), torch.float16: (4e-3, 4e-3), torch.bfloat16: (3e-2, 1.6e-2)}


def max_violation(got, want, dtype):
    """max over elements of |got - want| / (atol + rtol |want|): <= 1 passes (NaN fails)."""
    atol, rtol = TOL[dtype]
    got, want = got.double(), want.double()
    ratio = (got - want).abs() / (atol + rtol * want.abs())
    if ratio.numel() == 0:
        return 0.0
    r = ratio.max().item()
    return float("inf") if r != r else r


def reference(x, num_groups, weight, bias, eps, act, swish_beta):
    """F.group_norm (+ Swish) in float64, from exactly the values hipgn sees."""
    # PyTorch 2.11's float64 group_norm backward fails ("tensor does not have a device") with a
    # bias but no weight; the reference applies the affine itself, which is the same function
    y = F.group_norm(x.double(), num_groups, None, None, eps)
    shape = (1, -1) + (1,) * (x.dim() - 2)
    if weight is not None:
        y = y * weight.double().reshape(shape)
    if bias is not None:
        y = y + bias.double().reshape(shape)
    if act:
        y = y * torch.sigmoid(swish_beta * y)
    return y


def fresh(shape, dtype, layout="cf", device="cuda"):
    """Random x around 0.5 with spread 2 (never zeros), in the layout asked."""
    x = (torch.randn(shape, device=device) * 2 + 0.5).to(dtype)
    return channels_last(x) if layout == "cl" else x.contiguous()


def channels_last(t):
    """Any rank's channels-last copy: C fastest, then the spatial dimensions, then N."""
    return t.movedim(1, -1).contiguous().movedim(-1, 1)


def rel_err(got, want):
    """||got - want|| / ||want|| in float64 (0 for two zero tensors)."""
    got, want = got.double(), want.double()
    n = want.norm().item()
    d = (got - want).norm().item()
    return d / n if n > 0 else d


@contextlib.contextmanager
def eager_fast_path(enabled: bool):
    """group_norm()'s eager fast path (hipgn.torch.set_eager_fast_path) on or off for a block,
    then on again, as by default."""
    import hipgn.torch as hgn
    hgn.set_eager_fast_path(enabled)
    try:
        yield
    finally:
        hgn.set_eager_fast_path(True)
