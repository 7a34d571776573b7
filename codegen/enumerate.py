"""Enumerate instance specs: every (dtype pair, layout, activation) bucket times the block
configurations of each family, for a preset. Pure: same arguments, same list, same order."""
from __future__ import annotations

import itertools

from . import families
from .spec import ACTIVATIONS, DTYPE_BYTES, LAYOUTS, InstanceSpec

# (x dtype, gamma dtype): gamma/beta are the x dtype or fp32.
DTYPE_PAIRS = [("f32", "f32"), ("f16", "f16"), ("f16", "f32"), ("bf16", "bf16"), ("bf16", "f32")]


def _vmax(x_dtype: str) -> int:
    return 16 // DTYPE_BYTES[x_dtype]  # 16-byte accesses


# Block configurations per preset, as (family, block, vector, per_thread) where vector is
# "max" (16 bytes), 2 (channels-last groups whose C/G is even but not a multiple of 8), or 1.
# Onchip capacities (elements) for fp16 at vector "max" are block * 8 * per_thread: the default
# set steps 1K, 2K, 4K, 8K, 16K, 32K so that the heuristic finds one within 2x of any group
# that fits; groups past 32K elements loop or split.
PRESETS = {
    "minimal": [
        ("looped", 256, 1, 4),  # the generic instance
        ("onchip", 256, "max", 4),
        ("looped", 256, "max", 4),
        ("split", 256, "max", 8),
        ("resident", 512, "max", 4),
    ],
    "default": [
        ("looped", 256, 1, 4),
        ("onchip", 128, "max", 1),
        ("onchip", 256, "max", 1),
        ("onchip", 256, "max", 2),
        ("onchip", 256, "max", 4),
        ("onchip", 256, "max", 8),
        ("onchip", 512, "max", 8),
        ("onchip", 256, 2, 8),
        ("onchip", 512, 2, 16),
        ("onchip", 1024, 2, 16),
        ("looped", 256, "max", 4),
        ("looped", 512, "max", 4),
        ("looped", 256, 2, 4),
        ("split", 256, "max", 4),
        ("split", 256, "max", 8),
        ("split", 256, 2, 16),
        ("resident", 256, "max", 2),
        ("resident", 256, "max", 4),
        ("resident", 256, "max", 8),
        ("resident", 512, "max", 2),
        ("resident", 512, "max", 4),
        ("resident", 512, "max", 8),
    ],
}


def _full(default: list, values_per_thread: int, looped_per_thread: int) -> list:
    """The default set and every configuration whose registers fit: block * values per thread
    within `values_per_thread` * 1024 (of a 64K-register file)."""
    return sorted(set(default) | {
        (family, block, vector, per_thread)
        for family, block, vector, per_thread in itertools.product(
            ("onchip", "looped", "split", "resident"), (64, 128, 256, 512, 1024), ("max", 2, 1), (1, 2, 4, 8, 16))
        if block * per_thread * (8 if vector == "max" else vector) <= 1024 * values_per_thread
        and not (family == "looped" and per_thread > looped_per_thread)
    }, key=str)


PRESETS["full"] = _full(PRESETS["default"], 32, 8)

# Backward (ops dx, dgb, bwd). The looped family walks a group one vector per thread at a
# time, so per_thread is 1 there. Onchip holds x and dy in registers and stages per-channel
# sums in shared memory: block * per_thread slots (channels-first) or * vector (channels-last),
# at most 4096 (32 KB for two arrays).
BWD_PRESETS = {
    "minimal": [
        ("looped", 256, 1, 1),  # the generic instance
        ("onchip", 256, "max", 2),
        ("looped", 256, "max", 1),
        ("split", 256, "max", 4),
        ("resident", 512, "max", 4),
    ],
    "default": [
        ("looped", 256, 1, 1),
        ("onchip", 128, "max", 1),
        ("onchip", 256, "max", 1),
        ("onchip", 256, "max", 2),
        ("onchip", 256, 2, 8),
        ("looped", 256, "max", 1),
        ("looped", 256, 2, 1),
        ("split", 256, "max", 4),
        ("split", 256, 2, 8),
        ("resident", 256, "max", 2),
        ("resident", 512, "max", 2),
        ("resident", 256, "max", 4),
        ("resident", 512, "max", 4),
    ],
}
BWD_PRESETS["full"] = _full(BWD_PRESETS["default"], 16, 1)  # x and dy both in registers
BWD_OPS = ("dx", "dgb", "bwd")


def _fits(op: str, layout: str, family: str, block: int, vector: int, per_thread: int) -> bool:
    return families.fits(op, layout, family, block, vector, per_thread)  # its ops, static limits


def enumerate_specs(preset: str) -> list[InstanceSpec]:
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; expected one of {sorted(PRESETS)}")
    specs = set()
    configs = [("fwd", c) for c in PRESETS[preset]] + [(op, c) for op in BWD_OPS for c in BWD_PRESETS[preset]]
    for (x, gamma), layout, act, (op, (family, block, vector, per_thread)) in itertools.product(
            DTYPE_PAIRS, LAYOUTS, ACTIVATIONS, configs):
        v = _vmax(x) if vector == "max" else vector
        if _fits(op, layout, family, block, v, per_thread):
            specs.add(InstanceSpec(op, x, gamma, layout, act, family, block, v, per_thread))
    return sorted(specs)
