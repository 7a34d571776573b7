"""fuse_silu as inductor's pre-grad pass (a CustomGraphPass), in a module of its own: it imports
inductor, which takes seconds, so hipgn.torch imports it only when torch.compile first traces
hipgn's operator (_fusion.apply_setting)."""

import os

import torch
from torch._inductor.custom_graph_pass import CustomGraphPass, get_hash_for_files

from . import _fusion


class FuseSiLU(CustomGraphPass):
    """The uuid (a hash of the pass's source) keys inductor's caches; without one, inductor warns
    and bypasses its pre-grad cache."""

    def __call__(self, graph: torch.fx.Graph) -> None:
        _fusion.fuse_silu(graph)

    def uuid(self):
        return get_hash_for_files((_fusion.__file__, os.path.abspath(__file__)))


PASS = FuseSiLU()
