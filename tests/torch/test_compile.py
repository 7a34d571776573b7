"""torch.compile(fullgraph=True) of a small conv-GroupNorm-SiLU network built on hipgn: the
operators stay in the graph (no graph break, nothing traced into), and the compiled network's
outputs and gradients equal eager's; and of a block written as diffusion code writes it (norm,
then SiLU, called from forward()): compiled, each SiLU that reads nothing but a GroupNorm's
output is fused into it (fuse_silu), the others not, with eager's results. Exits 77 (ctest:
skipped), saying why, where PyTorch or a GPU is missing."""

import copy
import os
import re
import subprocess
import sys
import unittest

from _common import PACKAGE_DIR, channels_last, fresh, rel_err, torch

import hipgn.torch as hgn
from torch import nn


def network():
    net = nn.Sequential(
        nn.Conv2d(16, 64, 3, padding=1), nn.GroupNorm(16, 64), nn.SiLU(),
        nn.Conv2d(64, 64, 3, padding=1), nn.GroupNorm(32, 64),
        nn.Conv2d(64, 32, 3, padding=1), nn.GroupNorm(8, 32), nn.SiLU(),
    ).cuda().to(memory_format=torch.channels_last)
    for m in net.modules():
        if isinstance(m, nn.GroupNorm):
            with torch.no_grad():
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
    hgn.patch(net)
    return net


class ForwardBlock(nn.Module):
    """GroupNorm then SiLU called in turn, as diffusers (one shared nn.SiLU) and ldm (x *
    sigmoid(x)) write them: patch() cannot fuse these, the compiled graph can where the norm's
    output has no other reader."""

    def __init__(self):
        super().__init__()
        self.conv_in, self.norm1, self.act = nn.Conv2d(16, 64, 3, padding=1), nn.GroupNorm(16, 64), nn.SiLU()
        self.conv1, self.norm2 = nn.Conv2d(64, 64, 3, padding=1), nn.GroupNorm(32, 64)
        self.conv2, self.norm3 = nn.Conv2d(64, 30, 3, padding=1), nn.GroupNorm(10, 30)
        self.norm4 = nn.GroupNorm(3, 30, affine=False)

    def forward(self, x):
        h = self.act(self.norm1(self.conv_in(x)))  # fused
        h = self.norm2(self.conv1(h))
        h = self.conv2(h * torch.sigmoid(h))  # fused
        n = self.norm3(h)
        h = n + self.act(n)  # n read twice: not fused
        return torch.nn.functional.silu(self.norm4(h))  # no weight: not fused (the Swish backward reads it)


def forward_block():
    net = ForwardBlock().cuda().to(memory_format=torch.channels_last)
    for m in net.modules():
        if isinstance(m, nn.GroupNorm) and m.affine:
            with torch.no_grad():
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
    hgn.patch(net)
    return net


def forward_activations(codes):
    """The act argument of each hipgn.group_norm_fwd call in inductor's code, sorted."""
    calls = re.findall(r"torch\.ops\.hipgn\.group_norm_fwd\.default\(([^)]*)\)", "\n".join(codes))
    return sorted(int(call.split(", ")[5]) for call in calls)


class Compile(unittest.TestCase):
    def test_operators_stay_in_one_graph(self):
        graphs = []

        def record(gm, example_inputs):  # a backend that keeps the FX graph dynamo made
            graphs.append(gm)
            return gm.forward

        net = network()
        x = fresh((2, 16, 20, 20), torch.float32, "cl")
        torch._dynamo.reset()
        torch.compile(net, backend=record, fullgraph=True)(x)
        self.assertEqual(len(graphs), 1)
        code = str(graphs[0].graph)
        self.assertEqual(code.count("hipgn.group_norm_fwd"), 3, code)

    def test_compiled_equals_eager(self):
        torch._dynamo.reset()
        net = network()
        eager = copy.deepcopy(net)
        compiled = torch.compile(net, fullgraph=True)
        for step in range(2):  # the second call runs the cached graph
            x = fresh((2, 16, 20, 20), torch.float32, "cl").requires_grad_()
            xe = x.detach().clone().requires_grad_()
            y, ye = compiled(x), eager(xe)
            self.assertEqual(y.shape, ye.shape)
            self.assertLess(rel_err(y, ye), 1e-5, f"step {step}: output")
            dy = channels_last(torch.randn_like(ye))
            y.backward(dy)
            ye.backward(dy)
            self.assertLess(rel_err(x.grad, xe.grad), 1e-5, f"step {step}: dx")
            for (name, p), (_, q) in zip(net.named_parameters(), eager.named_parameters()):
                self.assertLess(rel_err(p.grad, q.grad), 1e-5, f"step {step}: grad of {name}")
                p.grad = q.grad = None
        with torch.no_grad():
            x = fresh((2, 16, 20, 20), torch.float32, "cl")
            self.assertLess(rel_err(compiled(x), eager(x)), 1e-5, "inference")

    def test_silu_fused_where_the_graph_proves_it(self):
        from torch._inductor.utils import run_and_get_code
        net = forward_block()
        x = fresh((2, 16, 20, 20), torch.float32, "cl")
        torch._dynamo.reset()
        with torch.no_grad():
            _, codes = run_and_get_code(torch.compile(net, fullgraph=True), x)
        self.assertEqual(forward_activations(codes), [0, 0, 1, 1], "\n".join(codes))
        xg = x.detach().clone().requires_grad_()
        torch._dynamo.reset()
        _, codes = run_and_get_code(lambda: torch.compile(net, fullgraph=True)(xg).sum().backward())
        self.assertEqual(forward_activations(codes), [0, 0, 1, 1], "training")
        self.assertEqual(len(re.findall(r"hipgn\.group_norm_bwd\.default\(", "\n".join(codes))), 4, "training")
        try:
            hgn.set_compile_fusion(False)
            torch._dynamo.reset()
            with torch.no_grad():
                _, codes = run_and_get_code(torch.compile(net, fullgraph=True), x)
            self.assertEqual(forward_activations(codes), [0, 0, 0, 0], "fusion off")
        finally:
            hgn.set_compile_fusion(True)

    def test_import_leaves_inductor_unloaded(self):
        # the pass is set at the first trace: importing inductor at `import hipgn.torch` took 5-6 s
        probe = "import sys, hipgn.torch; print('torch._inductor.config' in sys.modules)"
        # the child finds this tree's package as _common put it on this process's path: under
        # plain ctest no PYTHONPATH names it (scripts/gpu_torch_check.sh sets one)
        path = os.pathsep.join(p for p in (PACKAGE_DIR, os.environ.get("PYTHONPATH")) if p)
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                             env=dict(os.environ, PYTHONPATH=path))
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.strip(), "False", out.stderr)

    def test_fused_equals_eager(self):
        torch._dynamo.reset()
        net = forward_block()
        eager = copy.deepcopy(net)
        compiled = torch.compile(net, fullgraph=True)
        x = fresh((2, 16, 23, 19), torch.float32, "cl").requires_grad_()
        xe = x.detach().clone().requires_grad_()
        y, ye = compiled(x), eager(xe)
        self.assertLess(rel_err(y, ye), 1e-5, "output")
        dy = channels_last(torch.randn_like(ye))
        y.backward(dy)
        ye.backward(dy)
        self.assertLess(rel_err(x.grad, xe.grad), 1e-5, "dx")
        for (name, p), (_, q) in zip(net.named_parameters(), eager.named_parameters()):
            self.assertLess(rel_err(p.grad, q.grad), 1e-5, f"grad of {name}")


if __name__ == "__main__":
    # the convolutions in fp32 exactly, so that only hipgn and inductor's fusion could differ
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    unittest.main(verbosity=2)
