"""hipgn against PyTorch autograd of F.group_norm (+ F.silu): the forward, its saved mean and
rstd, and dx, dgamma, dbeta, through the shared library's C API (ctypes), both layouts.

Usage: test_torch.py path/to/libhipgn.so. Exits 77 (ctest: skipped), saying why, where
PyTorch or a GPU is missing."""
import ctypes
import sys

sys.stdout.reconfigure(line_buffering=True)  # what printed before a crash still shows

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:
    print(f"skipped: PyTorch is not importable here ({e})")
    sys.exit(77)
if not torch.cuda.is_available():
    print("skipped: PyTorch sees no GPU")
    sys.exit(77)

OP = {"fwd": 0, "dx": 1, "dgb": 2, "bwd": 3}
DTYPE = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}


class Problem(ctypes.Structure):
    _fields_ = [("op", ctypes.c_int), ("n", ctypes.c_int64), ("c", ctypes.c_int64), ("groups", ctypes.c_int64),
                ("spatial_rank", ctypes.c_int32), ("spatial", ctypes.c_int64 * 8), ("x_dtype", ctypes.c_int),
                ("gamma_dtype", ctypes.c_int), ("layout", ctypes.c_int), ("act", ctypes.c_int),
                ("eps", ctypes.c_float), ("swish_beta", ctypes.c_float)]


lib = ctypes.CDLL(sys.argv[1])
lib.hipgn_last_error.restype = ctypes.c_char_p
handle = ctypes.c_void_p()
assert lib.hipgn_create(ctypes.byref(handle)) == 0, lib.hipgn_last_error()
P = ctypes.c_void_p


def ptr(t):
    return P(t.data_ptr())


def check(status):
    if status != 0:
        raise RuntimeError(lib.hipgn_last_error().decode())


def compare(name, got, want, tol):
    err = ((got.float() - want.float()).abs() / (1 + want.float().abs())).max().item()
    ok = err <= tol
    print(f"  {name:6s} max rel err {err:.2e} {'ok' if ok else 'FAIL'}")
    return ok


def case(n, c, h, w, g, layout, silu, dtype):
    fmt = torch.channels_last if layout == "cl" else torch.contiguous_format
    x = (torch.randn(n, c, h, w, device="cuda") * 2 + 0.5).to(dtype).contiguous(memory_format=fmt)
    dy = torch.randn_like(x).contiguous(memory_format=fmt)
    gamma = (1 + 0.5 * torch.rand(c, device="cuda")).to(dtype)
    beta = (0.5 * torch.randn(c, device="cuda")).to(dtype)
    eps = 1e-5

    # PyTorch: forward and autograd in fp32 from the same values
    xr, gr, br = (t.detach().float().requires_grad_() for t in (x, gamma, beta))
    y_ref = F.group_norm(xr, g, gr, br, eps)
    if silu:
        y_ref = F.silu(y_ref)
    (y_ref * dy.float()).sum().backward()
    _, mean_ref, rstd_ref = torch.ops.aten.native_group_norm(x.float().contiguous(), gamma.float(), beta.float(), n, c,
                                                              h * w, g, eps)

    p = Problem(op=OP["fwd"], n=n, c=c, groups=g, spatial_rank=2, x_dtype=DTYPE[dtype], gamma_dtype=DTYPE[dtype],
                layout=1 if layout == "cl" else 0, act=1 if silu else 0, eps=eps, swish_beta=1.0)
    p.spatial[0], p.spatial[1] = h, w
    y = torch.empty_like(x)
    mean = torch.empty(n, g, device="cuda")
    rstd = torch.empty(n, g, device="cuda")
    torch.cuda.synchronize()
    check(lib.hipgn_groupnorm_fwd(handle, ctypes.byref(p), ptr(x), ptr(y), ptr(gamma), ptr(beta), ptr(mean),
                                  ptr(rstd), None, None))
    p.op = OP["bwd"]
    dx = torch.empty_like(x)
    dgamma = torch.empty_like(gamma)
    dbeta = torch.empty_like(beta)
    check(lib.hipgn_groupnorm_bwd(handle, ctypes.byref(p), ptr(dy), ptr(x), ptr(mean), ptr(rstd), ptr(gamma),
                                  ptr(beta), ptr(dx), ptr(dgamma), ptr(dbeta), None, None))
    torch.cuda.synchronize()
    tol = {torch.float32: 1e-4, torch.float16: 4e-3, torch.bfloat16: 3e-2}[dtype]
    print(f"N={n} C={c} {h}x{w} G={g} {layout} {'silu' if silu else 'none'} {dtype}")
    scale = float(n * h * w)  # dgamma/dbeta sum n * h * w terms: compare per term
    return all([
        compare("y", y, y_ref.detach(), tol),
        compare("mean", mean, mean_ref.view(n, g), 1e-5),
        compare("rstd", rstd, rstd_ref.view(n, g), 1e-4),
        compare("dx", dx, xr.grad, tol),
        compare("dgamma", dgamma.float() / scale, gr.grad / scale, tol),
        compare("dbeta", dbeta.float() / scale, br.grad / scale, tol),
    ])


torch.manual_seed(0)
results = []
for layout in ("cf", "cl"):
    for silu in (False, True):
        results.append(case(2, 64, 16, 16, 32, layout, silu, torch.float32))
        results.append(case(1, 30, 7, 9, 3, layout, silu, torch.float32))
    results.append(case(2, 320, 32, 32, 32, layout, True, torch.float16))
    results.append(case(2, 128, 13, 11, 8, layout, True, torch.bfloat16))
lib.hipgn_destroy(handle)
print(f"{sum(results)} passed, {len(results) - sum(results)} failed")
sys.exit(0 if all(results) else 1)
