"""The instance spec: one frozen dataclass per kernel instance, and its name.

The name encodes every parameter in a fixed order and parses back to the same spec; it is the
instance's one identity (file name, registry key, build filter target, profiler --instance,
test name). Its grammar is vocabulary.NAME_FIELDS; the C++ printer and parser are generated
from the same declaration (templates/vocabulary/instance_name.cpp.j2), and a test checks
that every instance of a build parses back in C++ to the name the generator gave it.

    gn_<op>_<x dtype>_<gamma dtype>_<layout>_<act>_<family>_b<block>_v<vector>_e<per thread>
    e.g. gn_fwd_f16_f32_cl_swish_onchip_b256_v8_e4
"""
from __future__ import annotations

import dataclasses
import re

from . import families
from .vocabulary import (ACTIVATIONS, DTYPES, FAMILIES, KEY_FIELDS, LAYOUTS, NAME_FIELDS, NAME_PREFIX,
                         OPS)

DTYPE_BYTES = {t.name: t.bytes for t in DTYPES.terms}

_NAME_RE = re.compile("^" + "_".join(
    [NAME_PREFIX] + [f"(?P<{f.attr}>{'|'.join(f.enum.names)})" if f.enum else f"{f.prefix}(?P<{f.attr}>[1-9][0-9]*)"
                     for f in NAME_FIELDS]) + "$")


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
        for field in NAME_FIELDS:
            if field.enum and getattr(self, field.attr) not in field.enum:
                raise ValueError(f"unknown value {getattr(self, field.attr)!r}; "
                                 f"expected one of {sorted(field.enum.names)}")
        if self.gamma_dtype not in (self.x_dtype, "f32"):
            raise ValueError("gamma dtype must be the x dtype or f32")
        if self.block not in (64, 128, 256, 512, 1024):
            raise ValueError(f"block {self.block} is not a power of two in [64, 1024]")
        if self.vector * DTYPE_BYTES[self.x_dtype] > 16 or self.vector not in (1, 2, 4, 8):
            raise ValueError(f"vector {self.vector} of {self.x_dtype} is over 16 bytes")
        if not 1 <= self.per_thread <= 32:
            raise ValueError(f"per_thread {self.per_thread} out of [1, 32]")

    @property
    def name(self) -> str:
        return "_".join([NAME_PREFIX] + [f"{f.prefix}{getattr(self, f.attr)}" for f in NAME_FIELDS])

    @property
    def bucket(self) -> str:
        """The functional key: instances in one bucket are interchangeable for a problem."""
        return "_".join(getattr(self, f.attr) for f in KEY_FIELDS)

    @property
    def generic(self) -> bool:
        """Supports every valid problem of its bucket: no size limit, no alignment need."""
        return families.DESCRIPTORS[self.family].generic_vector == self.vector

    @staticmethod
    def parse(name: str) -> "InstanceSpec":
        m = _NAME_RE.match(name)
        if not m:
            raise ValueError(f"not an instance name: {name!r}")
        return InstanceSpec(**{f.attr: m[f.attr] if f.enum else int(m[f.attr]) for f in NAME_FIELDS})
