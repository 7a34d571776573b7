"""The instance spec: one frozen dataclass per kernel instance, and its name.

The name encodes every parameter in a fixed order and parses back to the same spec; it is the
instance's one identity (file name, registry key, build filter target, profiler --instance,
test name). runtime/src/instance_name.cpp parses the same grammar; a test checks they agree.

    gn_<op>_<x dtype>_<gamma dtype>_<layout>_<act>_<family>_b<block>_v<vector>_e<per thread>
    e.g. gn_fwd_f16_f32_cl_swish_onchip_b256_v8_e4
"""
from __future__ import annotations

import dataclasses
import re

# One table per enum: short name -> C++ spelling. Nothing else spells them.
OPS = {
    "fwd": "hipgn::Op::fwd",  # y, and the saved mean/rstd
    "dx": "hipgn::Op::dx",  # backward data
    "dgb": "hipgn::Op::dgb",  # backward gamma/beta
    "bwd": "hipgn::Op::bwd",  # fused backward: dx, dgamma, dbeta in one call
}
DTYPES = {"f32": "float", "f16": "hipgn::f16_t", "bf16": "hipgn::bf16_t"}
DTYPE_BYTES = {"f32": 4, "f16": 2, "bf16": 2}
LAYOUTS = {"cf": "hipgn::Layout::channels_first", "cl": "hipgn::Layout::channels_last"}
ACTIVATIONS = {"none": "hipgn::Activation::none", "swish": "hipgn::Activation::swish"}
FAMILIES = {
    # one workgroup per (n, g); the whole group lives in registers: x read once
    "onchip": "hipgn::Family::onchip",
    # one workgroup per (n, g); loops over groups too large for registers: x read twice
    "looped": "hipgn::Family::looped",
    # several workgroups per group (partial statistics through a workspace), for problems
    # with fewer groups than compute units
    "split": "hipgn::Family::split",
    # a persistent grid; each slice of a group (channels-first) or of a sample's rows
    # (channels-last) stays in registers from load to store, slices exchange statistics
    # through the workspace: x read once, 16-byte accesses on any shape
    "resident": "hipgn::Family::resident",
}

_NAME_RE = re.compile(
    r"^gn_(?P<op>[a-z]+)_(?P<x>[a-z0-9]+)_(?P<gamma>[a-z0-9]+)_(?P<layout>[a-z]+)_"
    r"(?P<act>[a-z]+)_(?P<family>[a-z]+)_b(?P<block>\d+)_v(?P<vector>\d+)_e(?P<per_thread>\d+)$"
)


@dataclasses.dataclass(frozen=True, order=True)
class InstanceSpec:
    op: str
    x_dtype: str  # x and y (and dy/dx for backward)
    gamma_dtype: str  # gamma and beta: the same as x, or f32
    layout: str
    act: str
    family: str
    block: int  # threads per workgroup
    vector: int  # elements per vector access
    per_thread: int  # onchip/split: vectors per thread; looped: vectors in flight per iteration

    def __post_init__(self):
        for value, table in (
            (self.op, OPS), (self.x_dtype, DTYPES), (self.gamma_dtype, DTYPES),
            (self.layout, LAYOUTS), (self.act, ACTIVATIONS), (self.family, FAMILIES),
        ):
            if value not in table:
                raise ValueError(f"unknown value {value!r}; expected one of {sorted(table)}")
        if self.gamma_dtype not in (self.x_dtype, "f32"):
            raise ValueError("gamma dtype must be the x dtype or f32")
        if self.block not in (64, 128, 256, 512, 1024):
            raise ValueError(f"block {self.block} is not a power of two in [64, 1024]")
        if self.vector * DTYPE_BYTES[self.x_dtype] > 16 or self.vector not in (1, 2, 4, 8):
            raise ValueError(f"vector {self.vector} of {self.x_dtype} is over 16 bytes")
        if not 1 <= self.per_thread <= 16:
            raise ValueError(f"per_thread {self.per_thread} out of [1, 16]")

    @property
    def name(self) -> str:
        return (f"gn_{self.op}_{self.x_dtype}_{self.gamma_dtype}_{self.layout}_{self.act}_"
                f"{self.family}_b{self.block}_v{self.vector}_e{self.per_thread}")

    @property
    def bucket(self) -> str:
        """The functional key: instances in one bucket are interchangeable for a problem."""
        return f"{self.op}_{self.x_dtype}_{self.gamma_dtype}_{self.layout}_{self.act}"

    @property
    def generic(self) -> bool:
        """Supports every valid problem of its bucket: no size limit, no alignment need."""
        return self.family == "looped" and self.vector == 1

    @staticmethod
    def parse(name: str) -> "InstanceSpec":
        m = _NAME_RE.match(name)
        if not m:
            raise ValueError(f"not an instance name: {name!r}")
        d = m.groupdict()
        return InstanceSpec(op=d["op"], x_dtype=d["x"], gamma_dtype=d["gamma"], layout=d["layout"],
                            act=d["act"], family=d["family"], block=int(d["block"]),
                            vector=int(d["vector"]), per_thread=int(d["per_thread"]))
