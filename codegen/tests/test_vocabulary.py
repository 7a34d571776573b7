"""Drift: what cannot be generated from codegen/vocabulary.py is checked against it here: the
Python package's tables, the README's option table and name grammar, and the hand-written C++
(no list of spellings may reappear there; types.hpp, types.h and instance_name.cpp are generated)."""
from __future__ import annotations

import importlib.util
import pathlib
import re
import unittest

from codegen import vocabulary as v
from codegen.spec import InstanceSpec

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _load(path: pathlib.Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class PythonPackage(unittest.TestCase):
    def test_tables_match_the_vocabulary(self):
        lib = _load(ROOT / "python" / "hipgn" / "_library.py")
        for table, enum in ((lib.OPS, v.OPS), (lib.DTYPES, v.DTYPES), (lib.LAYOUTS, v.LAYOUTS),
                            (lib.ACTIVATIONS, v.ACTIVATIONS)):
            self.assertEqual(table, {name: i for i, name in enumerate(enum.names)}, enum.cpp)


class Readme(unittest.TestCase):
    text = (ROOT / "README.md").read_text()

    def test_option_defaults(self):
        for enum in v.ENUMS:
            if enum.option:
                row = re.search(rf"^\| `{enum.option}` \| `([^`]*)` \|", self.text, re.M)
                self.assertIsNotNone(row, f"README: no row for {enum.option}")
                self.assertEqual(row[1], ";".join(enum.names), enum.option)
        row = re.search(r"^\| `HIPGN_GPU_TARGETS` \| `([^`]*)` / `([^`]*)` \|", self.text, re.M)
        self.assertEqual((row[1], row[2]), tuple(";".join(v.default_targets(p)) for p in v.PLATFORMS))

    def test_name_grammar_and_examples(self):
        self.assertIn("    " + v.name_grammar() + "\n", self.text)
        for example in re.findall(r"^    (gn_\w+)$", self.text, re.M):
            if "<" not in example:
                self.assertEqual(InstanceSpec.parse(example).name, example)

    def test_layout_table_names_real_folders_and_every_kernel_header(self):
        table = self.text[self.text.index("## Layout"):self.text.index("## Instances and their names")]
        folders = re.findall(r"`([\w.]+)/`", table)
        self.assertTrue(folders)
        kernels = ROOT / "kernels" / "include" / "hipgn" / "kernels"
        for folder in folders:  # a top-level folder, or one of kernels/' (families/, primitives/)
            self.assertTrue((ROOT / folder).is_dir() or (kernels / folder).is_dir(),
                            f"README's layout names {folder}/, which does not exist")
        for header in kernels.rglob("*.hpp"):
            self.assertIn(f"`{header.name}`", table, f"README's layout misses kernels/{header.relative_to(kernels)}")

    def test_every_family_is_described(self):
        for family in v.FAMILIES.names:
            self.assertTrue(re.search(rf"^- `{family}`", self.text, re.M), f"README: family {family} not described")


class HandWrittenCode(unittest.TestCase):
    def test_no_list_of_spellings_outside_the_vocabulary(self):
        """A line quoting two or more terms of one enum is a table written again."""
        offenders = []
        sources = [p for d in ("api", "runtime", "abi", "profiler", "kernels", "cmake")
                   for p in (ROOT / d).rglob("*") if p.suffix in (".cpp", ".hpp", ".h", ".cmake", ".txt")]
        sources.append(ROOT / "CMakeLists.txt")
        for path in sources:
            for number, line in enumerate(path.read_text().splitlines(), 1):
                for enum in v.ENUMS:
                    quoted = {n for n in enum.names if re.search(rf"\"{n}\"|\b{n};|;{n}\b", line)}
                    if len(quoted) >= 2:
                        offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
        self.assertEqual(offenders, [])

    def test_the_c_header_declares_no_vocabulary_enum(self):
        header = (ROOT / "api" / "include" / "hipgn" / "hipgn.h").read_text()
        for enum in v.ENUMS:
            for term in enum.terms:
                if term.c:
                    self.assertNotRegex(header, rf"\b{term.c}\s*=", "types.h (generated) declares it")


class Declaration(unittest.TestCase):
    def test_terms_are_unique_and_spellable(self):
        for enum in v.ENUMS:
            self.assertEqual(len(set(enum.names)), len(enum.names), enum.cpp)
            for name in enum.names:
                self.assertRegex(name, r"^[a-z][a-z0-9]*$", "a name field is split on '_'")
        self.assertEqual([t.bytes > 0 and t.storage != "" for t in v.DTYPES.terms], [True] * len(v.DTYPES.terms))

    def test_generated_files_are_pure(self):
        from codegen import render
        self.assertEqual(render.render_vocabulary(), render.render_vocabulary())
        files = render.render_vocabulary()
        for enum in v.ENUMS:
            self.assertIn(f"enum class {enum.cpp} : int", files["include/hipgn/types.hpp"])


class Targets(unittest.TestCase):
    def test_targets_are_unique_and_described(self):
        self.assertEqual(len({t.arch for t in v.TARGETS}), len(v.TARGETS))
        for t in v.TARGETS:
            self.assertIn(t.platform, v.PLATFORMS)
            self.assertIn(t.wavefront, (32, 64))
            self.assertGreater(t.compute_units * t.l2_bytes, 0)
            self.assertGreater(t.shared_bytes_per_cu, 0)
            self.assertLessEqual(t.shared_bytes_per_block, t.shared_bytes_per_cu)
            # thread-block clusters are NVIDIA's (sm_90 on); hipgn's cluster code compiles on
            # NVIDIA only (kernels/.../primitives/cluster.hpp), so an AMD part declares none
            self.assertTrue(t.cluster_workgroups == 0 or t.platform == "nvidia", t.arch)
        for platform in v.PLATFORMS:
            self.assertTrue(v.default_targets(platform), platform)


    def test_rule_tables_are_named_by_a_measured_target(self):
        # a target's rules are its own arch's (measured there) or a measured target's (its
        # fallback); the C++ test Heuristics.EachTargetReadsTheTablesItNames checks the tables exist
        by_arch = {t.arch: t for t in v.TARGETS}
        for t in v.TARGETS:
            self.assertIn(t.rules, by_arch, t.arch)
            self.assertEqual(by_arch[t.rules].rules, t.rules, t.arch)


class Families(unittest.TestCase):
    def test_every_preset_configuration_names_a_declared_family(self):
        from codegen import enumerate as enum
        from codegen.families import DESCRIPTORS
        for presets in (enum.PRESETS, enum.BWD_PRESETS):
            for preset, configs in presets.items():
                for family, *_ in configs:
                    self.assertIn(family, DESCRIPTORS, preset)

    def test_enumeration_keeps_to_each_family(self):
        from codegen import enumerate as enum
        from codegen.families import BWD_STAGED_SLOTS, DESCRIPTORS, bwd_staged_slots
        for s in enum.enumerate_specs("default"):
            d = DESCRIPTORS[s.family]
            self.assertIn(s.op, d.ops, s.name)
            if s.op != "fwd":
                self.assertIn(s.layout, d.backward_layouts, s.name)
                self.assertLessEqual(s.per_thread, d.backward_max_per_thread or s.per_thread, s.name)
            if s.op != "fwd" and d.holds_group:
                self.assertLessEqual(bwd_staged_slots(s.layout, s.block, s.vector, s.per_thread), BWD_STAGED_SLOTS)

    def test_the_kernels_assert_the_generated_limit(self):
        from codegen import render
        from codegen.families import BWD_STAGED_SLOTS
        self.assertIn(f"kBwdStagedSlots = {BWD_STAGED_SLOTS};", render.render_vocabulary()["internal/hipgn/family_limits.hpp"])
        kernel = (ROOT / "kernels" / "include" / "hipgn" / "kernels" / "families" / "onchip.hpp").read_text()
        self.assertIn("kSlots <= kBwdStagedSlots", kernel)


if __name__ == "__main__":
    unittest.main()
