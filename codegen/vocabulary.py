"""The vocabulary: every enumeration hipgn speaks, declared once, and the instance-name grammar.

The generator reads it (spec.py, enumerate.py, select.py), and `python3 -m codegen --vocabulary
DIR` (CMake runs it at configure time) writes from it what the rest of the build needs
(templates/vocabulary/): the public C++ enums with their spellings and parsing (types.hpp), the
C header's enums (types.h), the name grammar's C++ printer and parser (instance_name.cpp) and
the CMake options' values and defaults (vocabulary.cmake). The profiler's choices come from
types.hpp. What cannot be generated (the Python package's tables, the README's tables) is
checked against this file by codegen/tests/test_vocabulary.py.

An enumerator's value is its position: append new terms at the end, never reorder (the C API's
values are an ABI).
"""
from __future__ import annotations

import dataclasses
from typing import Optional


@dataclasses.dataclass(frozen=True)
class Term:
    name: str  # the short name: instance names, CMake options, the profiler, Python
    cpp: str  # the C++ enumerator
    c: Optional[str]  # the C API's enumerator (None: the enum is not in the C API)
    doc: str
    bytes: int = 0  # dtypes: the storage size
    storage: str = ""  # dtypes: the C++ storage type


@dataclasses.dataclass(frozen=True)
class Enum:
    cpp: str  # the C++ type, hipgn::<cpp>
    c: Optional[str]  # the C API's typedef (None: not in the C API)
    option: Optional[str]  # the CMake option that selects which are built (None: none)
    doc: str
    terms: tuple[Term, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.terms)

    def __getitem__(self, name: str) -> Term:
        for t in self.terms:
            if t.name == name:
                return t
        raise KeyError(f"unknown {self.cpp} {name!r}; expected one of {list(self.names)}")

    def __contains__(self, name: str) -> bool:
        return name in self.names

    def __iter__(self):
        return iter(self.names)

    def qualified(self, name: str) -> str:
        """The C++ spelling of a term: hipgn::Layout::channels_last."""
        return f"hipgn::{self.cpp}::{self[name].cpp}"


OPS = Enum("Op", "hipgn_op_t", "HIPGN_OPS", "what a call computes", (
    Term("fwd", "fwd", "HIPGN_OP_FWD", "forward: y, and the saved mean/rstd"),
    Term("dx", "dx", "HIPGN_OP_DX", "backward data"),
    Term("dgb", "dgb", "HIPGN_OP_DGB", "backward gamma/beta"),
    Term("bwd", "bwd", "HIPGN_OP_BWD", "fused backward: dx, dgamma and dbeta in one call"),
))
DTYPES = Enum("DataType", "hipgn_dtype_t", "HIPGN_DTYPES", "x/y dtypes (gamma/beta: the same or f32)", (
    Term("f32", "f32", "HIPGN_F32", "IEEE binary32", bytes=4, storage="float"),
    Term("f16", "f16", "HIPGN_F16", "IEEE binary16", bytes=2, storage="hipgn::f16_t"),
    Term("bf16", "bf16", "HIPGN_BF16", "bfloat16", bytes=2, storage="hipgn::bf16_t"),
))
LAYOUTS = Enum("Layout", "hipgn_layout_t", "HIPGN_LAYOUTS", "memory layouts", (
    Term("cf", "channels_first", "HIPGN_CHANNELS_FIRST", "channels-first: N, C, spatial"),
    Term("cl", "channels_last", "HIPGN_CHANNELS_LAST", "channels-last: N, spatial, C"),
))
ACTIVATIONS = Enum("Activation", "hipgn_activation_t", "HIPGN_ACTIVATIONS", "fused activations", (
    Term("none", "none", "HIPGN_ACT_NONE", "no activation"),
    Term("swish", "swish", "HIPGN_ACT_SWISH", "z * sigmoid(swish_beta * z); SiLU at swish_beta 1"),
))
FAMILIES = Enum("Family", None, None, "kernel families (kernels/include/hipgn/kernels/)", (
    Term("onchip", "onchip", None,
         "one workgroup per (n, g); the whole group lives in registers: x read once"),
    Term("looped", "looped", None,
         "one workgroup per (n, g); loops over groups too large for registers: x read twice"),
    Term("split", "split", None,
         "several workgroups per group (partial statistics through a workspace), for problems "
         "with fewer groups than compute units"),
    Term("resident", "resident", None,
         "a persistent grid; each slice of a group (channels-first) or of a sample's rows "
         "(channels-last) stays in registers from load to store, slices exchange statistics "
         "through the workspace: x read once, 16-byte accesses on any shape"),
    Term("stream", "stream", None,
         "one cooperative grid, two streaming passes: per-channel sums of x, then y from a second "
         "read of x that the L2 still holds (the rows read last are normalized first); "
         "channels-last forward, whole rows at 16 bytes an access"),
))
ENUMS = (OPS, DTYPES, LAYOUTS, ACTIVATIONS, FAMILIES)


@dataclasses.dataclass(frozen=True)
class Target:
    name: str  # as the compiler spells it (nvcc's sm number, AMD's gfx name)
    arch: str  # as the runtime reports it (sm_<major><minor>, gcnArchName before ':')
    platform: str  # "nvidia" or "amd"
    built_by_default: bool
    # What the heuristics weigh, for the part the target names (the device's own counts win
    # where there is a device; these serve where there is none, and document the part)
    compute_units: int
    l2_bytes: int
    wavefront: int
    shared_bytes_per_block: int  # the most one workgroup may ask for (NVIDIA: with opt-in)
    shared_bytes_per_cu: int
    # The most workgroups one thread-block cluster may have (0: no clusters): the onchip
    # forward's groups in parts exist only where clusters do (runtime Instance::onchip_parts)
    cluster_workgroups: int
    # The heuristic rule tables it dispatches by (runtime/src/heuristics.cpp), named by the arch
    # they were measured on: its own arch once measured there, else a declared fallback.
    rules: str
    doc: str


# The first is the part assumed where no device is present (listing, the profiler's --list).
TARGETS = (
    Target("90", "sm_90", "nvidia", True, compute_units=132, l2_bytes=50 << 20, wavefront=32,
           shared_bytes_per_block=227 << 10, shared_bytes_per_cu=228 << 10, cluster_workgroups=16, rules="sm_90",
           doc="Hopper: H100 SXM (132 SMs, 50 MB L2, 228 KB shared memory an SM)"),
    # The AMD targets' rules are sm_90's: unmeasured, since no AMD GPU is available to us. Their
    # thresholds in groups per compute unit still scale with the device's own count.
    Target("gfx90a", "gfx90a", "amd", True, compute_units=104, l2_bytes=8 << 20, wavefront=64,
           shared_bytes_per_block=64 << 10, shared_bytes_per_cu=64 << 10, cluster_workgroups=0, rules="sm_90",
           doc="CDNA2: MI210 (104 CUs, 8 MB L2, 64 KB LDS a CU); an MI250X GCD has 110"),
    Target("gfx1100", "gfx1100", "amd", True, compute_units=96, l2_bytes=6 << 20, wavefront=32,
           shared_bytes_per_block=64 << 10, shared_bytes_per_cu=64 << 10, cluster_workgroups=0, rules="sm_90",
           doc="RDNA3: RX 7900 XTX (96 CUs, 6 MB L2, 64 KB LDS a CU in CU mode), wave32"),
)
PLATFORMS = ("nvidia", "amd")


def default_targets(platform: str) -> tuple[str, ...]:
    return tuple(t.name for t in TARGETS if t.platform == platform and t.built_by_default)


@dataclasses.dataclass(frozen=True)
class Field:
    attr: str  # the spec's member, the same in Python (spec.InstanceSpec) and C++
    enum: Optional[Enum] = None  # an enum field spells its term's name
    prefix: str = ""  # a number field spells prefix + decimal digits
    doc: str = ""


# The instance name: NAME_PREFIX, then the fields in this order, joined by '_'; e.g.
# gn_fwd_f16_f32_cl_swish_onchip_b256_v8_e4. It is an instance's one identity.
NAME_PREFIX = "gn"
NAME_FIELDS = (
    Field("op", OPS, doc="op"),
    Field("x_dtype", DTYPES, doc="x dtype"),
    Field("gamma_dtype", DTYPES, doc="gamma dtype"),
    Field("layout", LAYOUTS, doc="layout"),
    Field("act", ACTIVATIONS, doc="act"),
    Field("family", FAMILIES, doc="family"),
    Field("block", prefix="b", doc="block"),
    Field("vector", prefix="v", doc="vector"),
    Field("per_thread", prefix="e", doc="per thread"),
)
# The fields that form the functional key (bucket): instances of one key are interchangeable.
KEY_FIELDS = NAME_FIELDS[:5]


def name_grammar() -> str:
    """The grammar in words, for messages: gn_<op>_..._b<block>_v<vector>_e<per thread>."""
    parts = [f"{f.prefix}<{f.doc}>" for f in NAME_FIELDS]
    return "_".join([NAME_PREFIX] + parts)
