"""torch.compile(fullgraph=True) of a small conv-GroupNorm-SiLU network built on hipgn: the
operators stay in the graph (no graph break, nothing traced into), and the compiled network's
outputs and gradients equal eager's. Exits 77 (ctest: skipped), saying why, where PyTorch or
a GPU is missing."""

import copy
import unittest

from _common import channels_last, fresh, rel_err, torch

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


if __name__ == "__main__":
    # the convolutions in fp32 exactly, so that only hipgn and inductor's fusion could differ
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    unittest.main(verbosity=2)
