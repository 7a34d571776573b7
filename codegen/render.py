"""Render specs into sources with Jinja2, writing only files whose content changed.

Outputs, under one directory:
  instances/<instance name>.inc   one per instance: its traits struct and register function
  tu/<op>_<layout>_<k>.cpp        translation units, an op's .inc files of one layout (up to
                                  INSTANCES_PER_TU each), so that few units pay for the headers
  register_all.cpp                the explicit registry: one call per instance
  manifest.json                   what this build compiles, what the filters dropped, and the
                                  configurations the preset left out with the reason for each
"""
from __future__ import annotations

import itertools
import json
import os
import pathlib

import jinja2

from .spec import InstanceSpec
from . import families, vocabulary
from .vocabulary import ACTIVATIONS, DTYPES, FAMILIES, LAYOUTS, OPS

TEMPLATE_DIR = pathlib.Path(__file__).resolve().parent.parent / "templates"
# A unit's headers cost more than its instances: nvcc 13 (sm_90) takes 3.9 s of CPU for a unit
# of none (cudafe++ 1.4, cicc 1.4, the host compiler 1.3) and ~0.8 s an instance after that; the
# four units of 8 of one forward bucket took 45.4 s, the same 30 instances in one unit 26.7 s
# (312 MB at most); HIP's clang 4.6 s for none (gfx90a and gfx1100). So an op's instances of one
# layout share units of up to 32 (larger sets in even parts), bucket by bucket in order, so that
# a change to one bucket's instances moves no other op's or layout's: the default's 1308
# instances take 47 units (its 1432 took 230 at 8 a unit), the minimal preset's 340, which the
# AMD build compiles, 13 (80 at a bucket a unit).
INSTANCES_PER_TU = 32


def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                              trim_blocks=True, lstrip_blocks=True)


def _context(s: InstanceSpec) -> dict:
    return dict(name=s.name, op=OPS.qualified(s.op), x_type=DTYPES[s.x_dtype].storage,
                gamma_type=DTYPES[s.gamma_dtype].storage, x_dtype=s.x_dtype, gamma_dtype=s.gamma_dtype,
                layout=LAYOUTS.qualified(s.layout), act=ACTIVATIONS.qualified(s.act), family=s.family,
                family_enum=FAMILIES.qualified(s.family), block=s.block, vector=s.vector,
                per_thread=s.per_thread)


def translation_units(specs: list[InstanceSpec]) -> dict[str, list[InstanceSpec]]:
    """Group specs by op and layout, each group into the fewest even parts of at most
    INSTANCES_PER_TU, in bucket order."""
    units = {}
    for (op, layout), group in itertools.groupby(sorted(specs, key=lambda s: (s.op, s.layout, s.bucket, s)),
                                                 key=lambda s: (s.op, s.layout)):
        group = list(group)
        parts = -(-len(group) // INSTANCES_PER_TU)
        size = -(-len(group) // parts)
        for k in range(parts):
            units[f"tu/{op}_{layout}_{k}.cpp"] = group[k * size:(k + 1) * size]
    return units


def output_files(specs: list[InstanceSpec]) -> list[str]:
    """Every file --generate writes, relative to the output directory; sorted."""
    files = [f"instances/{s.name}.inc" for s in specs]
    files += list(translation_units(specs))
    files += ["register_all.cpp", "manifest.json"]
    return sorted(files)


def render_all(specs: list[InstanceSpec], manifest_extra: dict) -> dict[str, str]:
    env = _env()
    out = {}
    inc = env.get_template("instance.inc.j2")
    for s in specs:
        out[f"instances/{s.name}.inc"] = inc.render(**_context(s))
    tu = env.get_template("tu.cpp.j2")
    for path, group in translation_units(specs).items():
        out[path] = tu.render(names=[s.name for s in group])
    out["register_all.cpp"] = env.get_template("register_all.cpp.j2").render(
        names=[s.name for s in specs])
    manifest = dict(manifest_extra, count=len(specs),
                    instances=[dict(name=s.name, bucket=s.bucket, generic=s.generic) for s in specs])
    out["manifest.json"] = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
    return out


VOCABULARY_FILES = {  # output (relative to its directory) -> template
    "include/hipgn/types.hpp": "types.hpp.j2",
    "include/hipgn/types.h": "types.h.j2",
    "instance_name.cpp": "instance_name.cpp.j2",
    "vocabulary.cmake": "vocabulary.cmake.j2",
    "internal/hipgn/family_limits.hpp": "family_limits.hpp.j2",
    "family_table.cpp": "family_table.cpp.j2",
    "internal/hipgn/targets.hpp": "targets.hpp.j2",
}


def render_vocabulary() -> dict[str, str]:
    """What the build needs of codegen/vocabulary.py and codegen/families.py, in C++, C and CMake."""
    v = vocabulary
    context = dict(enums=v.ENUMS, dtype_bytes=[t.bytes for t in v.DTYPES.terms], grammar=v.name_grammar(),
                   prefix=v.NAME_PREFIX, fields=v.NAME_FIELDS, key_fields=v.KEY_FIELDS,
                   default_targets={p: v.default_targets(p) for p in v.PLATFORMS},
                   families=list(families.DESCRIPTORS.values()), bwd_staged_slots=families.BWD_STAGED_SLOTS,
                   peeled_forward_vector_bytes=families.PEELED_FORWARD_VECTOR_BYTES,
                   targets=v.TARGETS)
    env = _env()
    env.filters["op_bit"] = lambda op: f"(1u << int({v.OPS.qualified(op)}))"
    env.filters["layout_bit"] = lambda layout: f"(1u << int({v.LAYOUTS.qualified(layout)}))"
    return {out: env.get_template(t).render(**context) for out, t in VOCABULARY_FILES.items()}


def write_if_changed(out_dir: pathlib.Path, files: dict[str, str]) -> tuple[int, int]:
    """Write files whose content differs; delete files of ours that are no longer produced.
    Returns (written, removed)."""
    written = removed = 0
    for rel, text in files.items():
        path = out_dir / rel
        if path.exists() and path.read_text() == text:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
        written += 1
    for sub, suffix in (("instances", ".inc"), ("tu", ".cpp")):
        folder = out_dir / sub
        if not folder.is_dir():
            continue
        for path in folder.iterdir():
            if path.suffix == suffix and f"{sub}/{path.name}" not in files:
                path.unlink()
                removed += 1
    return written, removed
