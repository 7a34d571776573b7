"""A whole training step (forward, backward, optimizer step) of a network built on hipgn,
captured in a CUDA graph and replayed, gives what the same steps give eagerly. Capture fails if
anything in it allocates outside PyTorch's graph pool, synchronizes, or launches on another
stream, so this also proves hipgn's calls do none of that. Exits 77 (ctest: skipped), saying
why, where PyTorch or a GPU is missing."""

import copy
import unittest

from _common import fresh, rel_err, torch

import hipgn.torch as hgn
from torch import nn


def network():
    net = nn.Sequential(
        nn.Conv2d(8, 64, 3, padding=1), nn.GroupNorm(16, 64), nn.SiLU(),
        nn.Conv2d(64, 64, 3, padding=1), nn.GroupNorm(32, 64), nn.SiLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10),
    ).cuda().to(memory_format=torch.channels_last)
    hgn.patch(net)
    return net


class CudaGraph(unittest.TestCase):
    def run_case(self, autocast_dtype):
        torch.manual_seed(1234 + (0 if autocast_dtype is None else 1))
        net = network()
        eager = copy.deepcopy(net)
        make_opt = lambda m: torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)  # noqa: E731
        opt, opt_e = make_opt(net), make_opt(eager)
        batches = [(fresh((4, 8, 24, 24), torch.float32, "cl"), torch.randint(0, 10, (4,), device="cuda"))
                   for _ in range(6)]
        loss_fn = nn.CrossEntropyLoss()

        def amp():  # autocast's weight cache must be off around graphs (PyTorch's CUDA graph notes)
            return torch.autocast("cuda", dtype=autocast_dtype or torch.float32, enabled=autocast_dtype is not None,
                                  cache_enabled=False)

        def step(model, optimizer, x, t):
            optimizer.zero_grad(set_to_none=True)
            with amp():
                loss = loss_fn(model(x), t)
            loss.backward()
            optimizer.step()
            return loss

        # eager: every batch in turn
        eager_losses = [step(eager, opt_e, x, t).item() for x, t in batches]

        # graphed: the first three batches eagerly on a side stream (warm-up, as PyTorch's
        # whole-network capture asks), then a capture, then a replay per remaining batch
        static_x, static_t = batches[0][0].clone(), batches[0][1].clone()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            losses = [step(net, opt, x, t).item() for x, t in batches[:3]]
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(g):
            with amp():
                static_loss = loss_fn(net(static_x), static_t)
            static_loss.backward()
            opt.step()
        for x, t in batches[3:]:
            static_x.copy_(x)
            static_t.copy_(t)
            g.replay()
            losses.append(static_loss.item())

        tol = 1e-5 if autocast_dtype is None else 2e-3
        for i, (a, b) in enumerate(zip(losses, eager_losses)):
            self.assertLess(abs(a - b) / max(abs(b), 1e-6), tol, f"loss of step {i}: graphed {a}, eager {b}")
        for (name, p), (_, q) in zip(net.named_parameters(), eager.named_parameters()):
            self.assertLess(rel_err(p, q), tol, f"{name} after {len(batches)} steps")

    def test_training_step_fp32(self):
        self.run_case(None)

    def test_training_step_bf16_autocast(self):
        # bf16 activations into hipgn with fp32 GroupNorm weights (the mixed pair)
        self.run_case(torch.bfloat16)


if __name__ == "__main__":
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.deterministic = True  # the same convolution algorithms eager and graphed
    torch.backends.cudnn.benchmark = False
    unittest.main(verbosity=2)
