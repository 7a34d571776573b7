"""hipgn.torch against F.group_norm (+ SiLU/Swish) in float64: forward and every gradient, ranks
3 to 5, contiguous and channels-last, fp32/fp16/bf16 with weights of x's dtype or fp32; the
operators through torch.library.opcheck; errors and the fallback; the modules, patch(),
streams, autocast, and tune() with its database. Exits 77 (ctest: skipped), saying why, where
PyTorch or a GPU is missing."""

import copy
import itertools
import json
import os
import subprocess
import sys
import tempfile
import unittest

from _common import F, eager_fast_path, fresh, max_violation, reference, rel_err, torch

import hipgn
import hipgn.torch as hgn
from torch import nn

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
# (shape, G): odd sizes on purpose (prime spatial sizes, C/G of 1, 3, 10), every rank 3..5,
# size-1 dimensions whose strides are arbitrary
SHAPES = [((2, 64, 97), 8), ((3, 30, 7), 3), ((2, 320, 13, 11), 32), ((1, 64, 32, 32), 32), ((2, 96, 17, 19), 32),
          ((4, 16, 1, 1), 4), ((2, 8, 5, 5), 8), ((2, 48, 6, 6), 1), ((1, 32, 3, 5, 7), 8), ((2, 64, 4, 8, 8), 32)]
ACTS = (None, "silu", ("swish", 1.7))


def affine(c, dtype, weight_dtype, requires_grad=True):
    w = (1 + 0.5 * torch.rand(c, device="cuda")).to(weight_dtype or dtype).requires_grad_(requires_grad)
    b = (0.5 * torch.randn(c, device="cuda")).to(weight_dtype or dtype).requires_grad_(requires_grad)
    return w, b


def check_case(test, shape, g, layout, dtype, weight_dtype, act, with_weight=True, with_bias=True):
    """hipgn's y, dx, dweight, dbias against float64 autograd of F.group_norm (+ Swish)."""
    x = fresh(shape, dtype, layout).requires_grad_()
    w, b = affine(shape[1], dtype, weight_dtype)
    w, b = (w if with_weight else None), (b if with_bias else None)
    eps = 1e-5
    y = hgn.group_norm(x, g, w, b, eps, act)
    test.assertEqual(y.dtype, dtype)
    test.assertEqual(y.stride(), x.stride(), "y must come back in x's layout")
    dy = fresh(shape, dtype, layout)
    y.backward(dy)
    code, beta = (0, 1.0) if act is None else (1, 1.0 if act == "silu" else act[1])
    x64 = x.detach().double().requires_grad_()
    w64 = None if w is None else w.detach().double().requires_grad_()
    b64 = None if b is None else b.detach().double().requires_grad_()
    ref = reference(x64, g, w64, b64, eps, code, beta)
    ref.backward(dy.double())
    what = f"{shape} G={g} {layout} {dtype} weight {weight_dtype} act {act} w={with_weight} b={with_bias}"
    test.assertLessEqual(max_violation(y, ref, dtype), 1, f"y: {what}")
    # dx: a sum over the group feeds every element; allow twice the output tolerance
    test.assertLessEqual(max_violation(x.grad, x64.grad, dtype) / 2, 1, f"dx: {what}")
    # dweight/dbias sum N * spatial terms of random sign: about sqrt(terms) in size; compared
    # after dividing by that, in the weight's dtype
    terms = (x.numel() / shape[1]) ** 0.5
    for name, got, want in (("dweight", w, w64), ("dbias", b, b64)):
        if got is None:
            continue
        test.assertEqual(got.grad.dtype, got.dtype)
        test.assertLessEqual(max_violation(got.grad.double() / terms, want.grad / terms, got.dtype), 1,
                             f"{name}: {what}")


class Numerics(unittest.TestCase):
    def test_every_rank_layout_dtype_activation(self):
        cases = 0
        for (shape, g), layout, dtype in itertools.product(SHAPES, ("cf", "cl"), DTYPES):
            for weight_dtype, act in itertools.product((None, torch.float32), ACTS):
                if weight_dtype is torch.float32 and dtype is torch.float32:
                    continue
                with self.subTest(shape=shape, layout=layout, dtype=dtype, weight=weight_dtype, act=act):
                    check_case(self, shape, g, layout, dtype, weight_dtype, act)
                    cases += 1
        print(f"  {cases} forward+backward cases against float64")

    def test_affine_variants(self):
        for layout, act, (w, b) in itertools.product(("cf", "cl"), (None, "silu"),
                                                     ((False, False), (True, False), (False, True))):
            with self.subTest(layout=layout, act=act, weight=w, bias=b):
                check_case(self, (2, 64, 9, 7), 16, layout, torch.float16, None, act, w, b)

    def test_frozen_weights_and_inputs_without_grad(self):
        # dx alone (op dx) and dweight/dbias alone (op dgb)
        for dtype in DTYPES:
            x = fresh((2, 64, 12, 12), dtype, "cl")
            w, b = affine(64, dtype, None)
            hgn.group_norm(x, 16, w, b, activation="silu").sum().backward()
            x2 = x.detach().double()
            w2, b2 = w.detach().double().requires_grad_(), b.detach().double().requires_grad_()
            F.silu(F.group_norm(x2, 16, w2, b2)).sum().backward()
            terms = (2 * 12 * 12) ** 0.5  # as in check_case
            self.assertLessEqual(max_violation(w.grad.double() / terms, w2.grad / terms, dtype), 1)
            self.assertLessEqual(max_violation(b.grad.double() / terms, b2.grad / terms, dtype), 1)
            xg = x.detach().requires_grad_()
            wf, bf = w.detach(), b.detach()
            dy = fresh(x.shape, dtype, "cl")
            hgn.group_norm(xg, 16, wf, bf, activation="silu").backward(dy)
            x3 = x.detach().double().requires_grad_()
            F.silu(F.group_norm(x3, 16, wf.double(), bf.double())).backward(dy.double())
            self.assertLessEqual(max_violation(xg.grad, x3.grad, dtype) / 2, 1)

    def test_saved_statistics_match_pytorch(self):
        x = fresh((2, 320, 16, 16), torch.float32, "cl")
        w, b = affine(320, torch.float32, None, requires_grad=False)
        y, mean, rstd = torch.ops.hipgn.group_norm_fwd(x, w, b, 32, 1e-5, 0, 1.0)
        _, m_ref, r_ref = torch.ops.aten.native_group_norm(x.double().contiguous(), None, None, 2, 320, 256, 32, 1e-5)
        torch.testing.assert_close(mean.double(), m_ref.view(2, 32), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(rstd.double(), r_ref.view(2, 32), rtol=1e-4, atol=1e-5)

    def test_gradient_in_another_layout_and_expanded(self):
        # autograd may hand back dy in another layout, or an expanded one (sum().backward())
        x = fresh((2, 32, 8, 8), torch.float32, "cl").requires_grad_()
        hgn.group_norm(x, 8).sum().backward()
        x2 = x.detach().double().requires_grad_()
        F.group_norm(x2, 8).sum().backward()
        self.assertLessEqual(max_violation(x.grad, x2.grad, torch.float32) / 2, 1)
        x.grad = None
        dy = fresh(x.shape, torch.float32, "cf")  # contiguous gradient for a channels-last y
        hgn.group_norm(x, 8).backward(dy)
        x2.grad = None
        F.group_norm(x2, 8).backward(dy.double())
        self.assertLessEqual(max_violation(x.grad, x2.grad, torch.float32) / 2, 1)

    def test_fast_path_and_operator_agree_bitwise(self):
        # group_norm()'s eager routes (forward_impl without autograd, _EagerGroupNorm with it)
        # against the operator's (set_eager_fast_path(False)): one kernel each, the same bits
        if hgn.cpp_operators():
            self.skipTest("the C++ operators have one route (test_cpp_and_python_operators_agree_bitwise)")
        for dtype, weight_dtype, layout in ((torch.float16, torch.float32, "cl"), (torch.float32, None, "cf")):
            x = fresh((2, 64, 15, 16), dtype, layout)
            w, b = affine(64, dtype, weight_dtype)
            dy = fresh(x.shape, dtype, layout)
            results = []
            for fast in (True, False):
                with eager_fast_path(fast):
                    with torch.no_grad():
                        y0 = hgn.group_norm(x, 32, w, b, activation="silu")
                    xg = x.detach().clone().requires_grad_()
                    w.grad = b.grad = None
                    y = hgn.group_norm(xg, 32, w, b, activation="silu")
                    eager_node = type(y.grad_fn).__name__ == "_EagerGroupNormBackward"
                    self.assertEqual(eager_node, fast, f"fast path {fast}: autograd node {type(y.grad_fn).__name__}")
                    y.backward(dy)
                    results.append((y0, y.detach(), xg.grad, w.grad, b.grad))
            for name, fast, slow in zip(("y no grad", "y", "dx", "dweight", "dbias"), *results):
                self.assertTrue(torch.equal(fast, slow), f"{name}, {dtype} {layout}")

    def test_double_backward_raises(self):
        # hipgn's backward has no derivative of its own: a second one must fail, not return zeros
        x = fresh((2, 16, 6, 7), torch.float32, "cf").requires_grad_()
        w, b = affine(16, torch.float32, None)
        (gx,) = torch.autograd.grad(hgn.group_norm(x, 4, w, b).square().sum(), x, create_graph=True)
        # (the Python operators' once_differentiable says "twice", the C++ ones' fallback "not implemented")
        with self.assertRaisesRegex(RuntimeError, "twice|not implemented"):
            gx.sum().backward()

    def test_cpp_and_python_operators_agree_bitwise(self):
        # the C++ operators (this process) against the Python ones (a child process with
        # HIPGN_TORCH_EXTENSION=0) on the same inputs: the same kernels, so the same bits
        path = hgn.cpp_operators()
        if not path:
            self.skipTest("libhipgn_torch.so is not loaded: the Python operators are the only ones here")
        x = fresh((2, 64, 15, 16), torch.float16, "cl")
        w, b = affine(64, torch.float16, torch.float32)
        dy = fresh(x.shape, torch.float16, "cl")
        xg = x.detach().clone().requires_grad_()
        y = hgn.group_norm(xg, 32, w, b, activation="silu")
        self.assertIn("GroupNormFunction", type(y.grad_fn).__name__ + str(y.grad_fn.name()))
        y.backward(dy)
        with tempfile.TemporaryDirectory() as tmp:
            torch.save({"x": x, "w": w.detach(), "b": b.detach(), "dy": dy}, os.path.join(tmp, "in.pt"))
            child = (f"import sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); "
                     "from _common import torch; import hipgn.torch as hgn; "
                     "assert hgn.cpp_operators() is None; "
                     f"d = torch.load({os.path.join(tmp, 'in.pt')!r}); "
                     "x = d['x'].requires_grad_(); w = d['w'].requires_grad_(); b = d['b'].requires_grad_(); "
                     "y = hgn.group_norm(x, 32, w, b, activation='silu'); y.backward(d['dy']); "
                     f"torch.save([y.detach(), x.grad, w.grad, b.grad], {os.path.join(tmp, 'out.pt')!r})")
            env = dict(os.environ, HIPGN_TORCH_EXTENSION="0")
            subprocess.run([sys.executable, "-c", child], env=env, check=True)
            want = torch.load(os.path.join(tmp, "out.pt"))
        for name, got, expected in zip(("y", "dx", "dweight", "dbias"), (y.detach(), xg.grad, w.grad, b.grad), want):
            self.assertTrue(torch.equal(got, expected), name)

    def test_empty_batch(self):
        x = torch.empty((0, 32, 4, 4), device="cuda", requires_grad=True)
        y = hgn.group_norm(x, 8)
        self.assertEqual(y.shape, x.shape)
        y.sum().backward()
        self.assertEqual(x.grad.shape, x.shape)


class Operator(unittest.TestCase):
    def test_opcheck(self):
        samples = [
            ((2, 64, 97), 8, "cl", torch.float32, None, 0, 1.0),
            ((2, 320, 13, 11), 32, "cl", torch.float16, torch.float32, 1, 1.0),
            ((1, 32, 3, 5, 7), 8, "cf", torch.bfloat16, None, 1, 1.7),
            ((2, 64, 8, 8), 16, "cf", torch.float32, None, 1, 1.0),
        ]
        for shape, g, layout, dtype, wdt, act, beta in samples:
            with self.subTest(shape=shape, layout=layout, dtype=dtype):
                x = fresh(shape, dtype, layout).requires_grad_()
                w, b = affine(shape[1], dtype, wdt)
                torch.library.opcheck(torch.ops.hipgn.group_norm_fwd.default, (x, w, b, g, 1e-5, act, beta))
                y, mean, rstd = torch.ops.hipgn.group_norm_fwd(x.detach(), w.detach(), b.detach(), g, 1e-5, act, beta)
                dy = fresh(shape, dtype, layout)
                for need_dx, need_dgb in ((True, True), (True, False), (False, True)):
                    torch.library.opcheck(torch.ops.hipgn.group_norm_bwd.default,
                                          (dy, x.detach(), mean, rstd, w.detach(), b.detach(), g, 1e-5, act, beta,
                                           need_dx, need_dgb))
        # without weights
        x = fresh((2, 16, 5, 5), torch.float32, "cf").requires_grad_()
        torch.library.opcheck(torch.ops.hipgn.group_norm_fwd.default, (x, None, None, 4, 1e-5, 0, 1.0))

    def test_errors_say_why(self):
        x = fresh((2, 32, 8, 8), torch.float32)
        cases = [
            (lambda: hgn.group_norm(x.cpu(), 8), "is on cpu"),
            (lambda: hgn.group_norm(x.double(), 8), "torch.float64"),
            (lambda: hgn.group_norm(x.transpose(2, 3), 8), "neither contiguous nor channels-last"),
            (lambda: hgn.group_norm(x, 8, torch.ones(32, device="cuda", dtype=torch.float16)), "weight is torch.float16"),
            (lambda: hgn.group_norm(x.half(), 8, torch.ones(32, device="cuda"),
                                    torch.zeros(32, device="cuda", dtype=torch.float16)), "one dtype for both"),
            (lambda: hgn.group_norm(x, 8, torch.ones(32)), "weight is on cpu"),
        ]
        for fn, says in cases:
            with self.assertRaises(hgn.UnsupportedError) as cm:
                fn()
            self.assertIn(says, str(cm.exception))
        with self.assertRaises(ValueError):
            hgn.group_norm(x, 7)  # 32 channels, 7 groups: PyTorch refuses it too
        with self.assertRaises(ValueError):
            hgn.group_norm(x, 8, activation="gelu")

    def test_operator_arguments_checked(self):
        # callers of the operators themselves skip group_norm()'s checks: the operators check
        # what the kernels would otherwise read out of bounds or through an unusable pointer
        fwd, bwd = torch.ops.hipgn.group_norm_fwd.default, torch.ops.hipgn.group_norm_bwd.default
        x = fresh((2, 32, 8, 8), torch.float32)
        w, b = torch.rand(32, device="cuda") + 0.5, torch.randn(32, device="cuda")
        y, mean, rstd = fwd(x, w, b, 8, 1e-5, 0, 1.0)
        dy = torch.randn_like(y)
        strided = torch.empty_strided((2, 8), (1, 2), device="cuda").copy_(mean)
        cases = [
            (lambda: fwd(x.flatten(), w, b, 8, 1e-5, 0, 1.0), r"\(N, C, \*spatial\)"),
            (lambda: fwd(x, w, b, 7, 1e-5, 0, 1.0), "not divisible by num_groups = 7"),
            (lambda: fwd(x, w[:31], b, 8, 1e-5, 0, 1.0), r"weight has shape \(?\[?31"),
            (lambda: fwd(x, w, b.repeat(2), 8, 1e-5, 1, 1.0), r"bias has shape \(?\[?64"),
            (lambda: fwd(x, w, b.cpu(), 8, 1e-5, 0, 1.0), "bias is on cpu, x on cuda"),
            (lambda: fwd(x, w.double(), b.double(), 8, 1e-5, 0, 1.0), "weight is .*x's dtype"),
            (lambda: bwd(dy, x, mean[:, :7], rstd, w, b, 8, 1e-5, 0, 1.0, True, True), "mean .*must be the forward's"),
            (lambda: bwd(dy, x, mean, rstd.double(), w, b, 8, 1e-5, 0, 1.0, True, False), "rstd .*must be the forward's"),
            (lambda: bwd(dy, x, strided, rstd, w, b, 8, 1e-5, 0, 1.0, True, True), "mean .*contiguous"),
            (lambda: bwd(dy, x, mean.cpu(), rstd, w, b, 8, 1e-5, 0, 1.0, False, True), "mean .*must be the forward's"),
            (lambda: bwd(dy.half(), x, mean, rstd, w, b, 8, 1e-5, 0, 1.0, True, True), "dy is .*x's dtype"),
            (lambda: bwd(dy[:1], x, mean, rstd, w, b, 8, 1e-5, 0, 1.0, True, True), "dy \\(shape"),
            (lambda: bwd(dy, x, mean, rstd, w[:16], b, 8, 1e-5, 0, 1.0, True, True), "weight has shape"),
        ]
        for i, (fn, says) in enumerate(cases):
            with self.assertRaisesRegex(ValueError, says, msg=f"case {i}"):
                fn()
        torch.cuda.synchronize()  # and nothing reached the GPU that faults

    def test_fallback_only_when_asked(self):
        for x in (fresh((2, 32, 8, 8), torch.float32).cpu(), fresh((2, 32, 8, 8), torch.float64),
                  fresh((2, 32, 8, 8), torch.float32).transpose(2, 3)):
            w, b = torch.rand(32, dtype=x.dtype, device=x.device) + 0.5, torch.randn(32, dtype=x.dtype, device=x.device)
            with self.assertRaises(hgn.UnsupportedError):
                hgn.group_norm(x, 8, w, b, activation="silu")
            y = hgn.group_norm(x, 8, w, b, activation="silu", fallback=True)
            torch.testing.assert_close(y, F.silu(F.group_norm(x, 8, w, b)))
            m = hgn.GroupNormSiLU(8, 32, fallback=True).to(x.device, x.dtype)
            m(x)

    def test_streams(self):
        # work on a side stream: hipgn launches on the current stream, reads what was written
        # there before, and its result is there for what follows
        s = torch.cuda.Stream()
        x = fresh((4, 128, 64, 64), torch.float16, "cl")
        w, b = affine(128, torch.float16, torch.float32, requires_grad=False)
        want = reference(x, 32, w, b, 1e-5, 1, 1.0)
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            x2 = x * 1.0  # written on s
            y = hgn.group_norm(x2, 32, w, b, activation="silu")
            y2 = y + 0.0  # read on s
        torch.cuda.current_stream().wait_stream(s)
        self.assertLessEqual(max_violation(y2, want, torch.float16), 1)

    def test_autocast_mixed_precision(self):
        # under autocast a conv gives fp16, the GroupNorm's parameters stay fp32: hipgn takes
        # that pair as it is (PyTorch's own GroupNorm would upcast x to fp32)
        conv = nn.Conv2d(16, 64, 3, padding=1).cuda().to(memory_format=torch.channels_last)
        norm = hgn.GroupNormSiLU(32, 64).cuda()
        x = fresh((2, 16, 24, 24), torch.float32, "cl")
        with torch.autocast("cuda", dtype=torch.float16):
            h = conv(x)
            y = norm(h)
        self.assertEqual(h.dtype, torch.float16)
        self.assertEqual(norm.weight.dtype, torch.float32)
        self.assertEqual(y.dtype, torch.float16)
        self.assertEqual(hgn.layout_of(y), "cl")
        want = reference(h, 32, norm.weight, norm.bias, norm.eps, 1, 1.0)
        self.assertLessEqual(max_violation(y, want, torch.float16), 1)
        y.float().sum().backward()
        self.assertEqual(norm.weight.grad.dtype, torch.float32)


class Modules(unittest.TestCase):
    def test_drop_in_for_nn_group_norm(self):
        ref = nn.GroupNorm(8, 64).cuda()
        with torch.no_grad():
            ref.weight.uniform_(0.5, 1.5)
            ref.bias.uniform_(-0.5, 0.5)
        mine = hgn.GroupNorm(8, 64).cuda()
        mine.load_state_dict(ref.state_dict())
        self.assertEqual(set(mine.state_dict()), set(ref.state_dict()))
        self.assertIsInstance(mine, nn.GroupNorm)
        fused = hgn.GroupNormSiLU(8, 64).cuda()
        fused.load_state_dict(ref.state_dict())
        x = fresh((2, 64, 10, 10), torch.float32, "cl")
        torch.testing.assert_close(mine(x), ref(x), rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(fused(x), F.silu(ref(x)), rtol=1e-4, atol=1e-4)
        self.assertIn("activation='silu'", repr(fused))
        no_affine = hgn.GroupNorm(8, 64, affine=False).cuda()
        torch.testing.assert_close(no_affine(x), F.group_norm(x, 8), rtol=1e-4, atol=1e-4)

    def test_patch_fuses_only_where_the_structure_is_safe(self):
        class Block(nn.Module):  # forward() calls norm then act: not provably fusable
            def __init__(self):
                super().__init__()
                self.norm = nn.GroupNorm(8, 32)
                self.act = nn.SiLU()

            def forward(self, x):
                return self.act(self.norm(x)) + x

        class TimestepSequential(nn.Sequential):  # a Sequential subclass may route differently
            pass

        shared = nn.GroupNorm(8, 32)
        hooked = nn.GroupNorm(8, 32)
        hooked.register_forward_hook(lambda m, i, o: None)
        model = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1),
            nn.Sequential(nn.GroupNorm(8, 32), nn.SiLU(), nn.Conv2d(32, 32, 1)),  # fused
            Block(),
            TimestepSequential(nn.GroupNorm(8, 32), nn.SiLU()),  # subclass: not fused
            nn.Sequential(shared, nn.SiLU()), nn.Sequential(shared, nn.SiLU()),  # shared: not fused
            nn.Sequential(hooked, nn.SiLU()),  # hooked: not fused
            nn.Sequential(nn.GroupNorm(8, 32), nn.ReLU()),
        ).cuda()
        for m in model.modules():
            if isinstance(m, nn.GroupNorm):
                with torch.no_grad():
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.uniform_(-0.5, 0.5)
        reference_model = copy.deepcopy(model)
        state = copy.deepcopy(model.state_dict())
        params = {n: p for n, p in model.named_parameters()}
        replaced = hgn.patch(model)
        names = {r.name: r for r in replaced}
        self.assertEqual(len(replaced), 7)
        self.assertEqual(names["1.0"].fused, "1.1")
        self.assertIsInstance(model[1][0], hgn.GroupNormSiLU)
        self.assertIsInstance(model[1][1], nn.Identity)
        for unfused in ("2.norm", "3.0", "4.0", "5.0", "6.0", "7.0"):
            self.assertIsNone(names[unfused].fused, unfused)
            self.assertIs(type(names[unfused].new), hgn.GroupNorm, unfused)
        self.assertIs(model[4][0], model[5][0], "a shared module stays shared")
        self.assertEqual(len(model[6][0]._forward_hooks), 1, "hooks come along")
        # the same Parameter objects: an optimizer built before patch() keeps working
        for n, p in model.named_parameters():
            self.assertIs(p, params[n], n)
        self.assertEqual(set(model.state_dict()), set(state))
        self.assertEqual(hgn.patch(model), [], "a patched model has nothing left to patch")
        x = fresh((2, 3, 12, 12), torch.float32, "cl").requires_grad_()
        x_ref = x.detach().clone().requires_grad_()
        y, y_ref = model(x), reference_model(x_ref)
        torch.testing.assert_close(y, y_ref, rtol=1e-4, atol=1e-4)
        y.square().sum().backward()
        y_ref.square().sum().backward()
        torch.testing.assert_close(x.grad, x_ref.grad, rtol=1e-3, atol=1e-4)
        for (n, p), (_, q) in zip(model.named_parameters(), reference_model.named_parameters()):
            self.assertLess(rel_err(p.grad, q.grad), 1e-4, n)
        with self.assertRaises(ValueError):
            hgn.patch(nn.GroupNorm(2, 4))


class Tuning(unittest.TestCase):
    def test_tune_records_and_dispatch_uses_it(self):
        model = nn.Sequential(nn.Conv2d(8, 64, 3, padding=1), nn.GroupNorm(16, 64), nn.SiLU(),
                              nn.Conv2d(64, 64, 3, padding=1), nn.GroupNorm(16, 64)).cuda()
        model = model.to(memory_format=torch.channels_last)
        hgn.patch(model)
        x = fresh((2, 8, 40, 40), torch.float32, "cl")
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "db.json")
            with open(path, "w") as f:  # another target's entry: kept
                json.dump({"format": "hipgn-tuning-db", "version": 2, "entries": [
                    {"arch": "gfx90a", "compute_units": 104, "op": "fwd", "n": 1, "c": 8, "spatial": [4], "groups": 2,
                     "x_dtype": "f32", "gamma_dtype": "f32", "layout": "cf", "act": "none",
                     "instance": "gn_whatever", "us": 1.0}]}, f)
            results = hgn.tune(model.train(), (x,), db_path=path, verbose=False)
            tuned = [r for r in results if r.instance]
            self.assertEqual(len(tuned), 4, results)  # two problems (act differs), fwd and bwd each
            entries = hipgn.read_tuning_db(path)
            self.assertEqual(len(entries), 5)
            from hipgn.torch import _ops
            target = (_ops.handle(0).arch, _ops.handle(0).compute_units)
            lib = hipgn.library()
            for r in tuned:
                self.assertIn(r.key, entries)
                self.assertEqual(entries[r.key][0], r.instance)
                self.assertIn(r.instance, lib.instance_names())
                self.assertGreater(r.us, 0)
                self.assertEqual(r.key.layout, "cl")
                # the running handle dispatches to the winner; so does a fresh one reading the file
                self.assertEqual(_ops.handle(0).choose(r.key.problem()), r.instance)
                fresh_handle = lib.handle()
                fresh_handle.load_tuning_db(path)
                self.assertEqual(fresh_handle.choose(r.key.problem()), r.instance)
            self.assertTrue(all((r.key.arch, r.key.compute_units) == target for r in tuned), (target, tuned))
            # and the tuned model still computes GroupNorm
            with torch.no_grad():
                y = model(x)
            self.assertTrue(torch.isfinite(y).all())
        with self.assertRaises(ValueError):
            env = os.environ.pop("HIPGN_TUNING_DB", None)
            try:
                hgn.tune(model, (x,))
            finally:
                if env is not None:
                    os.environ["HIPGN_TUNING_DB"] = env


if __name__ == "__main__":
    # fp32 comparisons through convolutions need fp32 convolutions: TF32 (PyTorch's default for
    # cuDNN) differs from it by about 1e-3, which the patched and unpatched models meet apart
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    unittest.main(verbosity=2)
