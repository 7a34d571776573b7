"""Family descriptors: what each kernel family (vocabulary.FAMILIES) is, declared once.

The generator reads them (which ops a family has kernels for, its static limits, which of its
instances is generic), and `codegen --vocabulary` writes from them the runtime's table
(templates/family_table.cpp.j2): capacity, support constraints, launch shape and the heuristic
tie-break are read from that table instead of switches on the family. The presets (the
parameter space each preset builds) stay in enumerate.py; the test of this file checks that
every preset configuration names a family declared here.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

from .vocabulary import FAMILIES, LAYOUTS, OPS

# The backward's onchip kernels stage per-channel sums in shared memory: channels-first a slot per
# vector held (block * per_thread), channels-last a slot per thread and channel of its vector
# column (block * vector: fwd's rows mapping, families/onchip.hpp bwd_onchip_rows); two float
# arrays of 16 KB each at most (families/onchip.hpp asserts the same constant, kBwdStagedSlots).
BWD_STAGED_SLOTS = 4096

# The onchip backward holds x and dy of its vectors in registers, a workgroup's at most:
# channels-first as fp32 terms, a quarter of the 256 KB register file (the 256 x 16-byte x 4
# configuration, 64 KB, spilled 16 bytes: enumerate.SPILLS); channels-last as loaded, half of it
# (bwd_onchip_rows keeps the fp32 terms where they fit the same half, else loads' bits and
# computes the terms again for dx).
BWD_ONCHIP_HELD_BYTES = {"cf": 32 << 10, "cl": 128 << 10}

# The channels-first forward of a family that peels it (peels_forward) takes the peeled path with
# 16-byte vectors only: the 1024-thread, 4-byte-vector onchip instance spilled 48 bytes with it
# (64 registers a thread), and a 16-byte vector serves every spatial size the narrow ones did.
PEELED_FORWARD_VECTOR_BYTES = 16


@dataclasses.dataclass(frozen=True)
class FamilyDescriptor:
    name: str
    ops: tuple[str, ...]  # the ops it has kernels for
    holds_group: bool  # a group must fit on chip: block * vector * per_thread elements (capacity)
    splits_group: bool  # several workgroups share a group through the workspace (at most 65535)
    persistent: bool  # a co-resident grid of slices (support and workspace: Instance::resident_shape)
    generic_vector: Optional[int]  # the vector at which an instance runs every valid problem
    chunk_order: int  # tie-break within one vector: -1 the smallest chunk first, +1 the largest,
    #                   0 the family's own rule (heuristics.cpp: better_resident)
    why: str  # the reason for the tie-break (heuristics.cpp cites the measurements)
    # the layouts its backward ops have kernels for (support: Instance::supports)
    backward_layouts: tuple[str, ...] = LAYOUTS.names
    # a static limit of its backward kernels on vectors per thread (None: none)
    backward_max_per_thread: Optional[int] = None
    # the layouts it has kernels for, every op (support: Instance::supports)
    layouts: tuple[str, ...] = LAYOUTS.names
    # two passes over x in one cooperative launch (Instance::stream_shape)
    streams: bool = False
    # runs opt-in uneven groups (Problem::uneven_groups: C % G != 0, the last group wider); its
    # kernels take each group's size from GroupView (primitives/view.hpp: UnevenGroups)
    uneven_groups: bool = False
    # the backward kernel writes dgamma and dbeta itself, the last of a group's samples to finish
    # adding them up (families/grid.hpp: gamma_beta_by_arrival): a count a group of a sample in
    # the launch's counters (Instance::counter_bytes), else a kernel of their own follows
    gamma_beta_arrivals: bool = False
    # its channels-first forward also peels runs the vector does not divide or align (a scalar
    # head and tail around 16-byte vectors: Params::span), as every grid family's backward does
    peels_forward: bool = False
    # channels-last, it holds a group as rows: a thread keeps one vector column and walks the
    # rows block / columns apart, so a workgroup holds per_thread * (block / columns) rows
    # (params.hpp: onchip_cl_rows), fewer than its capacity where block is not a multiple of
    # the columns
    rows_channels_last: bool = False
    # its channels-last kernels also take groups narrower than its vector (V a multiple of C/G,
    # C a multiple of V, even groups): a workgroup a column of V channels of a sample, V / (C/G)
    # groups, its rows walked block apart, per_thread * block of them at most
    # (families/onchip.hpp: fwd_onchip_columns, bwd_onchip_columns)
    columns_channels_last: bool = False


DESCRIPTORS = {d.name: d for d in (
    FamilyDescriptor("onchip", OPS.names, holds_group=True, splits_group=False, persistent=False,
                     generic_vector=None, chunk_order=-1,
                     why="the tightest fit leaves the fewest threads idle", gamma_beta_arrivals=True,
                     peels_forward=True, rows_channels_last=True, columns_channels_last=True),
    FamilyDescriptor("looped", OPS.names, holds_group=False, splits_group=False, persistent=False,
                     generic_vector=1, chunk_order=+1,
                     why="more loads in flight per workgroup hide more latency", uneven_groups=True,
                     gamma_beta_arrivals=True),
    FamilyDescriptor("split", OPS.names, holds_group=False, splits_group=True, persistent=False,
                     generic_vector=None, chunk_order=-1,
                     why="the smallest slices, so the most workgroups in flight"),
    # the channels-first resident backward is not written yet; the backward holds x and dy, so
    # at most 4 vectors of each a thread (resident_bwd.hpp)
    FamilyDescriptor("resident", OPS.names, holds_group=False, splits_group=False, persistent=True,
                     generic_vector=None, chunk_order=0,
                     why="one slice when an instance holds the unit, then the fewest slices or "
                         "256-thread workgroups",
                     backward_layouts=("cl",), backward_max_per_thread=4),
    # per_thread, channels-last: the column vectors a thread sums, so C <= block * vector *
    # per_thread; the backward holds five constants a channel (stream_bwd.hpp), so one column
    # vector a thread. Channels-first (the forward only, stream_fwd_cf.hpp): 4 x per_thread
    # vectors a thread in flight.
    FamilyDescriptor("stream", OPS.names, holds_group=False, splits_group=False, persistent=False,
                     generic_vector=None, chunk_order=-1,
                     why="the fewest column vectors a thread: the fewest registers, the most "
                         "workgroups in flight",
                     backward_layouts=("cl",), backward_max_per_thread=1, streams=True),
)}
assert tuple(DESCRIPTORS) == FAMILIES.names, "one descriptor per family, in the vocabulary's order"


def fits(op: str, layout: str, family: str, block: int, vector: int, per_thread: int, x_bytes: int) -> bool:
    """Whether the family has a kernel for the op and the configuration (vector elements of
    x_bytes each) is within its static limits."""
    d = DESCRIPTORS[family]
    if op not in d.ops or layout not in d.layouts:
        return False
    if op == "fwd":
        return True
    if layout not in d.backward_layouts:
        return False
    if d.backward_max_per_thread is not None and per_thread > d.backward_max_per_thread:
        return False
    if d.holds_group:
        held = 2 * block * per_thread * vector * (x_bytes if layout == "cl" else 4)
        return bwd_staged_slots(layout, block, vector, per_thread) <= BWD_STAGED_SLOTS and \
            held <= BWD_ONCHIP_HELD_BYTES[layout]
    return True


def bwd_staged_slots(layout: str, block: int, vector: int, per_thread: int) -> int:
    """The onchip backward's shared-memory slots a sum array (BWD_STAGED_SLOTS)."""
    return block * per_thread if layout == "cf" else block * vector
