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
# "max" (16 bytes), 4 or 2 elements (channels-last groups whose C/G is a multiple of 4 or of 2
# but not of 8), or 1.
# Onchip capacities (elements) for fp16 at vector "max" are block * 8 * per_thread: the default
# set steps 1K, 2K, 4K, 8K, 16K, 32K so that the heuristic finds one within 2x of any group
# that fits; groups past 32K elements loop or split.
PRESETS = {
    "minimal": [
        ("looped", 256, 1, 4),  # the generic instance, the looped family's one
        ("onchip", 256, "max", 4),
        ("split", 256, "max", 8),
        ("resident", 512, "max", 4),
        ("stream", 512, "max", 1),
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
        # 8-byte vectors for channels-last groups of C/G a multiple of 4 but not of 8 (SD's 20
        # and 60): 0.89-0.98x the 4-byte instances' time (bench/NOTES.md, "8-byte vectors for
        # the channels-last onchip forward"); at fp32 these are the 16-byte tiles
        ("onchip", 256, 4, 8),
        ("onchip", 512, 4, 8),
        ("onchip", 1024, 4, 8),
        # four slots a thread, loaded at once (kOnchipAtOnceSlots), of 8- and 4-byte vectors:
        # sd15_16x640 (5120 elements) 512 x 4 x 4 3.78 us against 256 x 4 x 8 4.44, sd15_32x640
        # 256 x 4 x 4 in parts 6.20 against 256 x 2 x 8 6.76, sd15_32x320 256 x 2 x 4 5.46
        # against 5.89 (bench/NOTES.md, "Four slots at once"; 512 x 2 x 4 won nowhere)
        ("onchip", 256, 4, 4),
        ("onchip", 512, 4, 4),
        ("onchip", 256, 2, 4),
        # The looped family's vectorized configurations are retired here and from the minimal
        # preset (the generic instance above stays; the full preset, the autotuner's space, keeps
        # the forward tiles its own rules pick): the heuristic chose none of them over 1.84 M problems
        # (bench/dispatch_census.py) once the onchip and split families took the tiny tensors
        # they had (bench/NOTES.md, "What the heuristic sent off the suite"), and of the suite's
        # 420 rows timed with every instance one had a looped instance fastest, by 0.2%
        # 1024-element slices for tiny tensors of few large groups (layer_norm_32x64, 2 groups of
        # 65536: 5.5 us against 8192-element slices' 6.5 and the resident family's 6.2;
        # bench/NOTES.md, "Small slices for the split forward")
        ("split", 128, "max", 1),
        # 4096-element slices where 8192 leave compute units idle or overrun a wave
        # (runtime/src/heuristics.cpp, better(); bench/NOTES.md, "Slices of 4096 for the split
        # forward")
        ("split", 128, "max", 4),
        ("split", 256, "max", 4),
        ("split", 256, "max", 8),
        ("split", 256, 2, 16),
        ("resident", 256, "max", 2),
        ("resident", 256, "max", 4),
        ("resident", 256, "max", 8),
        ("resident", 512, "max", 2),
        ("resident", 512, "max", 4),
        ("resident", 512, "max", 8),
        ("stream", 256, "max", 1),
        ("stream", 512, "max", 1),
        ("stream", 512, "max", 2),
    ],
}


def config_name(config: tuple) -> str:
    family, block, vector, per_thread = config
    return f"{family}_b{block}_v{vector}_e{per_thread}"


# The full preset is the autotuner's search space: the default set and every configuration
# whose registers fit, less those a build should not pay for (issue 9: untrimmed, it was 13,930
# instances in 1,786 translation units, over an hour on 2 cores, with 484 spill warnings).
# Each candidate meets the rules below in order; the first that matches drops it, and
# manifest.json lists it with that reason. Default configurations are measured and always kept.
#
# Rule 1. 64 threads: the tile of 128 threads with half the vectors a thread. Two warps
# reduce no faster than four, and an SM runs at most 32 workgroups (sm_90), so a 64-thread
# workgroup fills it only at 32 registers a thread or fewer: few of these kernels (measured at 64
# threads: 30 to 200 registers). On gfx9 64 threads are one wavefront; AMD is not measured.
MIN_BLOCK = 128

# Rule 2. Split and looped: block * per_thread (the slice of a split workgroup, the vectors a
# looped workgroup has in flight) only tunes these families, it never decides whether a problem
# is supported, and time varies smoothly with it: steps of 4x (128, 512, 2K, 8K vectors)
# bracket any optimum within 2x. Onchip and resident keep 2x steps, as there the tile decides
# which groups fit in one workgroup or one slice.
LADDER_4X = {"split": (128, 512, 2048, 8192), "looped": (128, 512, 2048, 8192)}

# Rule 3. One configuration per tile (family, vector, block * per_thread): the others hold the
# same vectors a workgroup, split over other thread counts. The default's own configuration
# when it has one (measured), else the first per_thread in this order: 4 vectors a thread keep
# enough loads in flight, without the registers that limit occupancy.
PER_THREAD_PREFERENCE = (4, 2, 8, 1, 16)

# Rule 4. The configuration rule 3 chose spills registers to local memory in some bucket, and
# its tile goes with it: the tile's other configurations ask about the same share of their
# register cap (values a thread grow with per_thread, the cap of 64K registers a workgroup
# shrinks with block), and spilled values go through local memory, the traffic these kernels
# exist to avoid. Measured by scripts/probe_spills.py and the full build's own warnings (nvcc
# 13, sm_90, every dtype pair, layout and activation); the value is the largest spill, bytes
# stored plus loaded. Default configurations that spill stay (they are measured on the GPU):
# the backward's split b256 vmax e4 (channels-last bf16, Swish) and its generic looped b256 v1
# e1 (f32, Swish).
SPILLS = {
    "fwd": {
        ("looped", 128, 2, 4): 56, ("looped", 512, 2, 4): 40, ("resident", 1024, 2, 16): 328,
        ("split", 128, 1, 1): 16,
        # measured on the GPU machine's full build of 2026-11-23 (ptxas 13, sm_90)
        ("onchip", 1024, 1, 16): 8,
    },
    "bwd": {
        ("looped", 128, 1, 1): 32, ("looped", 128, "max", 1): 16, ("looped", 512, 2, 1): 8,
        ("looped", 512, "max", 1): 40, ("onchip", 128, 1, 4): 8, ("onchip", 128, 2, 2): 16,
        ("onchip", 128, 2, 4): 24, ("onchip", 256, 1, 4): 8, ("onchip", 256, 2, 4): 24,
        ("onchip", 256, "max", 4): 16, ("onchip", 1024, 1, 4): 8, ("onchip", 1024, 2, 4): 16,
        ("split", 128, "max", 1): 40, ("split", 128, "max", 4): 40, ("split", 512, 1, 4): 16,
        ("split", 512, "max", 4): 8, ("split", 1024, 2, 8): 20,
        # measured on the GPU machine's full build of 2026-11-23 (ptxas 13, sm_90)
        ("looped", 512, 1, 1): 16, ("looped", 128, 2, 1): 8,
    },
}


def _candidates(values_per_thread: int, looped_per_thread: int) -> list:
    """Every (family, block, vector, per_thread) whose registers fit: block * values per thread
    within `values_per_thread` * 1024 (of a 64K-register file)."""
    return [
        (family, block, vector, per_thread)
        for family, block, vector, per_thread in itertools.product(
            ("onchip", "looped", "split", "resident"), (64, 128, 256, 512, 1024), ("max", 2, 1), (1, 2, 4, 8, 16))
        if block * per_thread * (8 if vector == "max" else vector) <= 1024 * values_per_thread
        and not (family == "looped" and per_thread > looped_per_thread)
    ]


def _trim(default: list, candidates: list, spills: dict) -> tuple[list, dict]:
    """The full set (the default configurations and those rules 1-4 keep, sorted) and the
    dropped candidates: config name -> reason."""
    def tile(c):
        family, block, vector, per_thread = c
        return family, vector, block * per_thread

    dropped, kept = {}, []
    for c in candidates:
        family, block, vector, per_thread = c
        if c in default:
            continue
        if block < MIN_BLOCK:
            dropped[config_name(c)] = f"{block} threads: the tile of {MIN_BLOCK} threads with fewer vectors a thread"
        elif block * per_thread not in LADDER_4X.get(family, [block * per_thread]):
            dropped[config_name(c)] = f"{family}: {block * per_thread} vectors a workgroup is off the 4x ladder"
        else:
            kept.append(c)
    chosen = {}
    for c in sorted(kept, key=lambda c: PER_THREAD_PREFERENCE.index(c[3])):
        chosen.setdefault(tile(c), c)
    for c in default:
        chosen[tile(c)] = c
    for c in kept:
        if chosen[tile(c)] != c:
            dropped[config_name(c)] = f"the tile of {config_name(chosen[tile(c)])}"
        elif c in spills:
            dropped[config_name(c)] = f"ptxas spills {spills[c]} bytes (nvcc 13, sm_90); the tile goes with it"
    full = sorted(set(default) | {c for c in chosen.values() if c not in spills}, key=str)
    return full, dict(sorted(dropped.items()))


# values a thread: 32K forward, 16K backward (x and dy both in registers); looped backward
# walks one vector per thread at a time
CANDIDATES = {"fwd": _candidates(32, 8), "bwd": _candidates(16, 1)}
PRESETS["full"], _FWD_DROPPED = _trim(PRESETS["default"], CANDIDATES["fwd"], SPILLS["fwd"])

# Backward (ops dx, dgb, bwd). The looped family walks a group one vector per thread at a
# time, so per_thread is 1 there. Onchip holds x and dy in registers and stages per-channel
# sums in shared memory: block * per_thread slots (channels-first) or * vector (channels-last),
# at most 4096 (32 KB for two arrays).
BWD_PRESETS = {
    "minimal": [
        ("looped", 256, 1, 1),  # the generic instance, the looped family's one
        ("onchip", 256, "max", 2),
        ("split", 256, "max", 4),
        ("resident", 512, "max", 4),
        ("stream", 512, "max", 1),
    ],
    "default": [
        ("looped", 256, 1, 1),
        ("onchip", 128, "max", 1),
        ("onchip", 256, "max", 1),
        ("onchip", 256, "max", 2),
        ("onchip", 256, 2, 8),
        # channels-last only (families.fits: the channels-first flat mapping holds fp32 terms):
        # groups of up to 8K and 16K elements in 16-byte vectors, 16K and 32K in 4-byte. Not
        # 32K in 16-byte (512 x 8 x 8 spilled up to 744 bytes in bf16 and ran 1.1x behind 1024
        # x 2 x 16 on sd15_16x2560), nor 1024 threads (1024 x 2 x 16, 64 registers a thread,
        # spilled up to 300 bytes in bf16 and ran 1.05-1.16x behind 512 x 2 x 32 there, fp16
        # within 3% either way; bench/NOTES.md, "The channels-last onchip backward by rows")
        ("onchip", 256, "max", 4),
        ("onchip", 512, "max", 4),
        ("onchip", 512, 2, 16),
        ("onchip", 512, 2, 32),
        # (the looped family's vectorized configurations: the forward's comment)
        ("split", 256, "max", 4),
        ("split", 256, 2, 8),
        ("resident", 256, "max", 2),
        ("resident", 512, "max", 2),
        ("resident", 256, "max", 4),
        ("resident", 512, "max", 4),
        ("stream", 256, "max", 1),
        ("stream", 512, "max", 1),
    ],
}
BWD_PRESETS["full"], _BWD_DROPPED = _trim(BWD_PRESETS["default"], CANDIDATES["bwd"], SPILLS["bwd"])
BWD_OPS = ("dx", "dgb", "bwd")


def dropped(preset: str) -> dict:
    """What the preset left out of its search space and why, by ops: config name -> reason."""
    if preset != "full":
        return {}
    return {"fwd": _FWD_DROPPED, ",".join(BWD_OPS): _BWD_DROPPED}


def _fits(op: str, layout: str, family: str, block: int, vector: int, per_thread: int, x: str) -> bool:
    return families.fits(op, layout, family, block, vector, per_thread, DTYPE_BYTES[x])  # its ops, static limits


def enumerate_specs(preset: str) -> list[InstanceSpec]:
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; expected one of {sorted(PRESETS)}")
    return specs_of(PRESETS[preset], BWD_PRESETS[preset])


def specs_of(fwd_configs: list, bwd_configs: list) -> list[InstanceSpec]:
    """Every bucket's instances of these forward and backward configurations."""
    specs = set()
    configs = [("fwd", c) for c in fwd_configs] + [(op, c) for op in BWD_OPS for c in bwd_configs]
    for (x, gamma), layout, act, (op, (family, block, vector, per_thread)) in itertools.product(
            DTYPE_PAIRS, LAYOUTS, ACTIVATIONS, configs):
        v = _vmax(x) if vector == "max" else vector
        if _fits(op, layout, family, block, v, per_thread, x):
            specs.add(InstanceSpec(op, x, gamma, layout, act, family, block, v, per_thread))
    return sorted(specs)
