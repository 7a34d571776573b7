"""The generator: names parse back, enumeration is deterministic, filters report, rendering is
strict, and writing touches only what changed."""
import contextlib
import io
import json
import pathlib
import tempfile
import unittest

from codegen.vocabulary import ACTIVATIONS, LAYOUTS, OPS

import jinja2

from codegen import __main__ as cli
from codegen import enumerate as enum
from codegen import render
from codegen.select import Selection, apply
from codegen.spec import InstanceSpec


class Names(unittest.TestCase):
    def test_every_name_parses_back(self):
        for preset in enum.PRESETS:
            for spec in enum.enumerate_specs(preset):
                self.assertEqual(InstanceSpec.parse(spec.name), spec)

    def test_malformed_names_are_rejected(self):
        for bad in ("", "gn_fwd_f16_f16_cf_none_onchip_b256_v8", "gn_fwd_f64_f16_cf_none_onchip_b256_v8_e4",
                    "gn_fwd_f16_bf16_cf_none_onchip_b256_v8_e4", "gn_fwd_f32_f32_cf_none_onchip_b256_v8_e4"):
            with self.assertRaises(ValueError, msg=bad):
                InstanceSpec.parse(bad)

    def test_vectors_are_at_most_16_bytes(self):
        with self.assertRaises(ValueError):
            InstanceSpec("fwd", "f32", "f32", "cf", "none", "onchip", 256, 8, 1)


class Enumeration(unittest.TestCase):
    def test_deterministic_and_unique(self):
        for preset in enum.PRESETS:
            a, b = enum.enumerate_specs(preset), enum.enumerate_specs(preset)
            self.assertEqual(a, b)
            self.assertEqual(len({s.name for s in a}), len(a))

    def test_every_bucket_has_its_generic_instance(self):
        for preset in enum.PRESETS:
            specs = enum.enumerate_specs(preset)
            buckets = {s.bucket for s in specs}
            # every op x dtype pair x layout x activation of the vocabulary
            self.assertEqual(len(buckets), len(OPS.names) * len(enum.DTYPE_PAIRS) * len(LAYOUTS.names) * len(ACTIVATIONS.names))
            self.assertEqual(buckets, {s.bucket for s in specs if s.generic})

    def test_every_family_in_every_bucket(self):
        specs = enum.enumerate_specs("default")
        for bucket in {s.bucket for s in specs}:
            # the resident family: forward kernels, and the channels-last backward so far
            resident = bucket.startswith("fwd_") or "_cl_" in bucket
            stream = bucket.startswith("fwd_") or "_cl_" in bucket  # the backward channels-last only
            want = {"onchip", "looped", "split"} | ({"resident"} if resident else set()) | (
                {"stream"} if stream else set())
            self.assertEqual({s.family for s in specs if s.bucket == bucket}, want)

    def test_presets_nest(self):
        minimal, default, full = (set(enum.enumerate_specs(p)) for p in ("minimal", "default", "full"))
        self.assertTrue(minimal < default, sorted(s.name for s in minimal - default)[:5])
        self.assertTrue(default < full, sorted(s.name for s in default - full)[:5])


class FullPreset(unittest.TestCase):
    """The full preset is the default set and the candidates the trimming rules keep."""
    SETS = (("fwd", enum.PRESETS, "fwd"), ("bwd", enum.BWD_PRESETS, "dx,dgb,bwd"))

    def test_nothing_beyond_the_default_spills(self):
        for op, presets, _ in self.SETS:
            added = set(presets["full"]) - set(presets["default"])
            self.assertFalse(added & set(enum.SPILLS[op]), op)

    def test_every_dropped_configuration_has_a_reason_and_is_not_built(self):
        dropped = enum.dropped("full")
        for op, presets, key in self.SETS:
            self.assertTrue(dropped[key], op)
            self.assertTrue(all(dropped[key].values()), op)
            self.assertFalse({enum.config_name(c) for c in presets["full"]} & set(dropped[key]), op)
        self.assertEqual(enum.dropped("default"), {})

    def test_one_configuration_per_tile_beyond_the_default(self):
        for op, presets, _ in self.SETS:
            added = set(presets["full"]) - set(presets["default"])
            tiles = [(f, v, b * e) for f, b, v, e in added]
            self.assertEqual(len(tiles), len(set(tiles)), op)

    def test_manifest_lists_what_the_preset_dropped(self):
        with tempfile.TemporaryDirectory() as d:
            with contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(cli.main(["--generate", "--preset=full", "--pattern=^$", f"--out-dir={d}"]), 0)
            manifest = json.loads((pathlib.Path(d) / "manifest.json").read_text())
        self.assertEqual(manifest["dropped"], enum.dropped("full"))


class Filters(unittest.TestCase):
    def test_filters_report_what_they_drop(self):
        specs = enum.enumerate_specs("default")
        kept, report = apply(specs, Selection(dtypes=("f16",), layouts=("cl",)))
        self.assertTrue(kept)
        self.assertTrue(all(s.x_dtype == "f16" and s.layout == "cl" for s in kept))
        self.assertEqual(len(report), 2)
        self.assertIn("filter dtype: dropped", report[0])

    def test_pattern_keeps_generic_instances(self):
        specs = enum.enumerate_specs("default")
        kept, report = apply(specs, Selection(pattern="onchip_b256_v8_e4$"))
        self.assertEqual({s.bucket for s in kept}, {s.bucket for s in specs})
        self.assertTrue(all(s.generic or s.name.endswith("onchip_b256_v8_e4") for s in kept))
        self.assertIn("pattern", report[0])

    def test_no_filter_no_report(self):
        specs = enum.enumerate_specs("minimal")
        kept, report = apply(specs, Selection())
        self.assertEqual((kept, report), (specs, []))


class Rendering(unittest.TestCase):
    def test_strict_undefined(self):
        template = render._env().get_template("instance.inc.j2")
        with self.assertRaises(jinja2.UndefinedError):
            template.render(name="x")

    def test_render_is_deterministic_and_lists_match(self):
        specs = enum.enumerate_specs("minimal")
        a = render.render_all(specs, {"preset": "minimal"})
        b = render.render_all(specs, {"preset": "minimal"})
        self.assertEqual(a, b)
        self.assertEqual(sorted(a), render.output_files(specs))

    def test_instance_file_carries_its_parameters(self):
        spec = InstanceSpec("fwd", "bf16", "f32", "cl", "swish", "split", 512, 8, 4)
        text = render.render_all([spec], {})[f"instances/{spec.name}.inc"]
        for needle in ("struct " + spec.name, "kBlockSize = 512", "kVectorSize = 8", "kPerThread = 4",
                       "hipgn::bf16_t", "GammaType = float", "channels_last", "Activation::swish",
                       "Family::split"):
            self.assertIn(needle, text)

    def test_translation_units_stay_small(self):
        units = render.translation_units(enum.enumerate_specs("default"))
        self.assertTrue(all(len(g) <= render.INSTANCES_PER_TU for g in units.values()))
        self.assertTrue(all(len({(s.op, s.layout) for s in g}) == 1 for g in units.values()))
        self.assertEqual(sum(len(g) for g in units.values()), len(enum.enumerate_specs("default")))


class CommandLine(unittest.TestCase):
    def run_cli(self, *args):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = cli.main(list(args))
        return rc, out.getvalue()

    def test_generate_writes_only_changes_and_removes_stale(self):
        with tempfile.TemporaryDirectory() as d:
            rc, listed = self.run_cli("--list", "--preset=minimal", "--dtypes=f16", f"--out-dir={d}")
            self.assertEqual(rc, 0)
            rc, out = self.run_cli("--generate", "--preset=minimal", "--dtypes=f16", f"--out-dir={d}")
            self.assertEqual(rc, 0)
            written = sorted(str(p) for p in pathlib.Path(d).rglob("*") if p.is_file())
            self.assertEqual(written, sorted(listed.split()))
            self.assertIn("filter dtype: dropped", out)
            mtimes = {p: p.stat().st_mtime_ns for p in pathlib.Path(d).rglob("*") if p.is_file()}
            rc, out = self.run_cli("--generate", "--preset=minimal", "--dtypes=f16", f"--out-dir={d}")
            self.assertIn("0 files written, 0 stale removed", out)
            self.assertEqual(mtimes, {p: p.stat().st_mtime_ns for p in pathlib.Path(d).rglob("*") if p.is_file()})
            # a narrower selection removes the files it no longer produces
            rc, out = self.run_cli("--generate", "--preset=minimal", "--dtypes=f16", "--layouts=cl", f"--out-dir={d}")
            self.assertNotIn(" 0 stale removed", out)
            self.assertFalse(any("_cf_" in p.name for p in pathlib.Path(d).rglob("*.inc")))

    def test_empty_selection_is_an_error(self):
        with contextlib.redirect_stderr(io.StringIO()):
            rc, _ = self.run_cli("--list", "--dtypes=f64")
        self.assertEqual(rc, 2)


if __name__ == "__main__":
    unittest.main()
