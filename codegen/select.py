"""Filters: which enumerated instances a build compiles. Each filter says what it dropped."""
from __future__ import annotations

import dataclasses
import re

from .spec import InstanceSpec
from .vocabulary import ACTIVATIONS, DTYPES, LAYOUTS, OPS


@dataclasses.dataclass(frozen=True)
class Selection:
    ops: tuple[str, ...] = OPS.names
    dtypes: tuple[str, ...] = DTYPES.names  # x dtypes; gamma f32 or the same follows
    layouts: tuple[str, ...] = LAYOUTS.names
    activations: tuple[str, ...] = ACTIVATIONS.names
    pattern: str = ""  # a regular expression searched in the instance name; empty keeps all


def apply(specs: list[InstanceSpec], sel: Selection) -> tuple[list[InstanceSpec], list[str]]:
    """Return the kept specs and one report line per filter that dropped anything.

    The name pattern never drops a bucket's generic instance: every bucket that is built can
    run every valid problem of its key, whatever the pattern."""
    filters = [
        ("op", lambda s: s.op in sel.ops),
        ("dtype", lambda s: s.x_dtype in sel.dtypes),
        ("layout", lambda s: s.layout in sel.layouts),
        ("activation", lambda s: s.act in sel.activations),
    ]
    if sel.pattern:
        rx = re.compile(sel.pattern)
        filters.append(("pattern", lambda s: s.generic or rx.search(s.name) is not None))
    report = []
    for what, keep in filters:
        kept = [s for s in specs if keep(s)]
        if len(kept) != len(specs):
            report.append(f"filter {what}: dropped {len(specs) - len(kept)} of {len(specs)} instances")
        specs = kept
    return specs, report
