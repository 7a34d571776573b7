"""Command line: `python3 -m codegen --list|--generate [selection]`, `--vocabulary`.

--list prints the files --generate would write (CMake reads it at configure time); both modes
take the same selection arguments, so the two never disagree. --vocabulary writes what the
build needs of codegen/vocabulary.py (enums, spellings, the name grammar, CMake's defaults);
CMake runs it at configure time, before the options are declared."""
from __future__ import annotations

import argparse
import pathlib
import sys

from . import enumerate as enum
from . import render
from .select import Selection, apply


def _csv(text: str) -> tuple[str, ...]:
    return tuple(x for x in text.replace(";", ",").split(",") if x)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python3 -m codegen", description=__doc__)
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--list", action="store_true", help="print the output files, one a line")
    mode.add_argument("--generate", action="store_true", help="write the output files")
    mode.add_argument("--vocabulary", action="store_true", help="write the vocabulary's C++, C and CMake files")
    p.add_argument("--out-dir", type=pathlib.Path, default=pathlib.Path("."))
    p.add_argument("--preset", default="default", choices=sorted(enum.PRESETS))
    p.add_argument("--ops", type=_csv, default=Selection.ops)
    p.add_argument("--dtypes", type=_csv, default=Selection.dtypes)
    p.add_argument("--layouts", type=_csv, default=Selection.layouts)
    p.add_argument("--activations", type=_csv, default=Selection.activations)
    p.add_argument("--pattern", default="", help="regular expression searched in instance names")
    return p.parse_args(argv)


def main(argv=None) -> int:
    a = parse_args(argv)
    if a.vocabulary:
        written, _ = render.write_if_changed(a.out_dir, render.render_vocabulary())
        print(f"codegen: vocabulary: {written} files written")
        return 0
    sel = Selection(ops=a.ops, dtypes=a.dtypes, layouts=a.layouts, activations=a.activations,
                    pattern=a.pattern)
    specs, report = apply(enum.enumerate_specs(a.preset), sel)
    if not specs:
        print("codegen: the selection keeps no instance: " + "; ".join(report), file=sys.stderr)
        return 2
    if a.list:
        for rel in render.output_files(specs):
            print((a.out_dir / rel).as_posix())
        return 0
    files = render.render_all(specs, dict(preset=a.preset, selection=vars(sel), filtered=report,
                                          dropped=enum.dropped(a.preset)))
    written, removed = render.write_if_changed(a.out_dir, files)
    for line in report:
        print(f"codegen: {line}")
    print(f"codegen: {len(specs)} instances; {written} files written, {removed} stale removed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
