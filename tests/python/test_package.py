"""The hipgn Python package without PyTorch or a GPU: importing it needs neither; finding
libhipgn.so and saying where it looked when it cannot; refusing a library of another C API
version; problem descriptors and tuning keys; the tuning database through the C API (record,
save, read, load, malformed files). Runs everywhere; HIPGN_LIBRARY names the library to test.

Usage: test_package.py (HIPGN_LIBRARY=path/to/libhipgn.so)"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PACKAGE_PARENT = os.path.join(REPO, "python")
sys.path.insert(0, PACKAGE_PARENT)

import hipgn  # noqa: E402
from hipgn import _library  # noqa: E402

LIBRARY = os.environ.get("HIPGN_LIBRARY") or hipgn.find_library()


def python(code, env_extra=None, parent=PACKAGE_PARENT, drop=("HIPGN_LIBRARY",)):
    """Runs code in a fresh interpreter with the package from `parent`; (exit code, output)."""
    env = {k: v for k, v in os.environ.items() if k not in drop and k != "PYTHONPATH"}
    env["PYTHONPATH"] = parent
    env.update(env_extra or {})
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=tempfile.gettempdir())
    return r.returncode, r.stdout + r.stderr


class Import(unittest.TestCase):
    def test_import_needs_neither_torch_nor_the_library(self):
        code, out = python("import sys, hipgn; print('torch' in sys.modules, hipgn.__version__)",
                           {"HIPGN_LIBRARY": "/nonexistent/libhipgn.so"}, drop=())
        self.assertEqual(code, 0, out)
        self.assertIn("False 0.1.0", out)

    def test_torch_part_says_what_it_needs(self):
        code, out = python("import hipgn.torch")
        try:
            import torch  # noqa: F401
            has_torch = True
        except ImportError:
            has_torch = False
        if not has_torch:
            self.assertNotEqual(code, 0)
            self.assertIn("hipgn.torch needs PyTorch", out)
        else:
            self.skipTest("PyTorch is importable here: tests/torch covers hipgn.torch")


class Discovery(unittest.TestCase):
    def test_explicit_path_and_folder(self):
        for value in (LIBRARY, os.path.dirname(LIBRARY)):
            code, out = python("import hipgn; print(hipgn.library().path)", {"HIPGN_LIBRARY": value}, drop=())
            self.assertEqual(code, 0, out)
            self.assertIn(os.path.realpath(LIBRARY), os.path.realpath(out.strip()))

    def test_explicit_path_that_is_wrong_is_not_replaced(self):
        code, out = python("import hipgn; hipgn.library()", {"HIPGN_LIBRARY": "/nonexistent/libhipgn.so"}, drop=())
        self.assertNotEqual(code, 0)
        self.assertIn("LibraryNotFoundError", out)
        self.assertIn("/nonexistent/libhipgn.so (HIPGN_LIBRARY): no such file", out)
        with tempfile.NamedTemporaryFile(suffix=".so") as junk:
            junk.write(b"not an ELF file")
            junk.flush()
            code, out = python("import hipgn; hipgn.library()", {"HIPGN_LIBRARY": junk.name}, drop=())
            self.assertNotEqual(code, 0)
            self.assertIn("cannot be loaded", out)

    def test_not_found_lists_every_place_looked(self):
        with tempfile.TemporaryDirectory() as top:  # a copy of the package outside any source tree
            tmp = os.path.join(top, "checkout", "python")  # whose "checkout" has no build*/ folders
            shutil.copytree(os.path.join(PACKAGE_PARENT, "hipgn"), os.path.join(tmp, "hipgn"),
                            ignore=shutil.ignore_patterns("__pycache__", "libhipgn.so", "_install.py"))
            code, out = python("import hipgn; hipgn.library()", parent=tmp,
                               env_extra={"LD_LIBRARY_PATH": "", "LIBRARY_PATH": ""})
            if code == 0:
                self.skipTest("a libhipgn.so is installed on the system's library path")
            self.assertIn("libhipgn.so not found", out)
            self.assertIn(os.path.join(tmp, "hipgn", "libhipgn.so") + " (beside the package)", out)
            self.assertIn("HIPGN_LIBRARY", out)
            # beside the package: found
            os.symlink(LIBRARY, os.path.join(tmp, "hipgn", "libhipgn.so"))
            code, out = python("import hipgn; print(hipgn.library().path)", parent=tmp)
            self.assertEqual(code, 0, out)
            self.assertIn(os.path.join(tmp, "hipgn", "libhipgn.so"), out)

    def test_source_tree_build_is_found(self):
        code, out = python("import hipgn; print(hipgn.find_library())")
        self.assertEqual(code, 0, out)
        self.assertRegex(out.strip(), r"/build[^/]*/runtime/libhipgn\.so$")

    def test_library_of_another_api_version_is_refused(self):
        cc = shutil.which("cc") or shutil.which("gcc")
        if not cc:
            self.skipTest("no C compiler to build a stand-in library")
        with tempfile.TemporaryDirectory() as tmp:
            for name, body in (("old", "int hipgn_instance_count(void) { return 0; }"),
                               ("other", "int hipgn_api_version(void) { return 1; }")):
                src, lib = os.path.join(tmp, name + ".c"), os.path.join(tmp, name + ".so")
                with open(src, "w") as f:
                    f.write(body + "\n")
                subprocess.run([cc, "-shared", "-fPIC", "-o", lib, src], check=True)
                code, out = python("import hipgn; hipgn.library()", {"HIPGN_LIBRARY": lib}, drop=())
                self.assertNotEqual(code, 0)
                self.assertIn("predates" if name == "old" else "has C API version 1", out)


class Problems(unittest.TestCase):
    def test_make_problem(self):
        p = hipgn.make_problem("bwd", 2, 320, (64, 32), 32, "f16", "f32", "cl", "swish", 1e-6, 1.5)
        self.assertEqual((p.op, p.n, p.c, p.groups, p.spatial_rank, list(p.spatial[:2])), (3, 2, 320, 32, 2, [64, 32]))
        self.assertEqual((p.x_dtype, p.gamma_dtype, p.layout, p.act), (1, 0, 1, 1))
        self.assertAlmostEqual(p.swish_beta, 1.5)
        self.assertEqual(hipgn.make_problem("fwd", 1, 8, (), 2, "bf16").gamma_dtype, 2)
        self.assertEqual(hipgn.make_problem("fwd", 1, 10, (4,), 3, "f32").uneven_groups, 0)
        self.assertEqual(hipgn.make_problem("fwd", 1, 10, (4,), 3, "f32", uneven_groups=True).uneven_groups, 1)
        for bad in (dict(op="forward"), dict(x_dtype="f64"), dict(layout="nhwc"), dict(act="gelu"),
                    dict(spatial=(1,) * 9)):
            args = dict(op="fwd", n=1, c=8, spatial=(4,), groups=2, x_dtype="f32")
            args.update(bad)
            with self.assertRaises(ValueError):
                hipgn.make_problem(**args)

    def test_problem_key(self):
        p = hipgn.make_problem("fwd", 2, 320, (64, 64), 32, "f16", "f32", "cl", "swish", 1e-6, 1.7)
        key = hipgn.ProblemKey.of(p, "sm_90", 132)
        self.assertEqual(key, ("fwd", 2, 320, (64, 64), 32, "f16", "f32", "cl", "swish", "sm_90", 132))
        # the spelling of runtime's TuningKey::to_string()
        self.assertEqual(str(key), "fwd n2 c320 s64x64 g32 f16/f32 cl swish on sm_90 x132")
        self.assertEqual(hipgn.ProblemKey.of(key.problem(), "sm_90", 132), key)
        q = hipgn.make_problem("fwd", 2, 320, (64, 64), 32, "f16", "f32", "cl", "swish")  # other eps, slope
        self.assertEqual(hipgn.ProblemKey.of(q, "sm_90", 132), key)
        # one arch, another part: another key (an H100 PCIe has 114 SMs)
        self.assertNotEqual(hipgn.ProblemKey.of(p, "sm_90", 114), key)
        # C % G != 0 is only valid as uneven groups: the key's problem asks for them
        uneven = hipgn.ProblemKey("fwd", 2, 322, (64, 64), 32, "f16", "f16", "cl", "swish", "sm_90", 132)
        self.assertEqual(uneven.problem().uneven_groups, 1)
        self.assertEqual(key.problem().uneven_groups, 0)


class Library(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.lib = _library.Library(LIBRARY)
        cls.handle = cls.lib.handle()

    def some_key(self, op="fwd"):
        for key in sorted(self.lib.built_keys()):
            if key[0] == op:
                return key
        self.skipTest(f"no {op} instances in this build")

    def problem(self, key, n=2):
        op, x, g, layout, act = key
        return hipgn.make_problem(op, n, 64, (8, 8), 32, x, g, layout, act)

    def test_built_keys_and_names(self):
        names = self.lib.instance_names()
        self.assertGreater(len(names), 0)
        keys = self.lib.built_keys()
        for op, x, g, layout, act in keys:
            self.assertIn(op, _library.OPS)
            self.assertIn(x, _library.DTYPES)
            self.assertIn(g, (x, "f32"))
            self.assertIn(layout, _library.LAYOUTS)
            self.assertIn(act, _library.ACTIVATIONS)
        self.assertEqual(len(keys), len({tuple(n.split("_")[1:6]) for n in names}))

    def test_workspace_and_choice(self):
        p = self.problem(self.some_key("bwd"))
        self.assertGreaterEqual(self.handle.workspace_size(p), 2 * 64 * 8)  # [N, C, 2] fp32 sums
        name = self.handle.choose(p)
        self.assertIn(name, self.lib.instance_names())
        self.assertLessEqual(self.handle.workspace_size(p, name), self.handle.workspace_size(p))
        with self.assertRaises(hipgn.HipgnError) as cm:
            self.handle.workspace_size(p, "gn_not_an_instance")
        self.assertEqual(cm.exception.status, "unknown instance")
        bad = self.problem(self.some_key("bwd"))
        bad.groups = 7
        with self.assertRaises(hipgn.HipgnError) as cm:
            self.handle.choose(bad)
        self.assertIn("not divisible by G = 7", str(cm.exception))
        # asked for, uneven groups are valid: the handle chooses an instance for them
        bad.uneven_groups = 1
        self.assertIn(self.handle.choose(bad), self.lib.instance_names())
        bad.groups = 65
        with self.assertRaises(hipgn.HipgnError) as cm:
            self.handle.choose(bad)
        self.assertIn("G = 65 exceeds C = 64", str(cm.exception))

    def test_tuning_database_round_trip(self):
        key = self.some_key("fwd")
        p = self.problem(key, n=3)
        generic = next(n for n in self.lib.instance_names()
                       if n.startswith("gn_" + "_".join(key) + "_looped_") and "_v1_" in n)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "db.json")
            self.handle.set_tuned(p, generic)
            self.assertEqual(self.handle.choose(p), generic)
            self.handle.save_tuning_db(path)
            entries = hipgn.read_tuning_db(path)
            want = hipgn.ProblemKey.of(p, self.handle.arch, self.handle.compute_units)
            self.assertEqual(entries[want][0], generic)
            fresh = self.lib.handle()
            fresh.load_tuning_db(path)
            self.assertEqual(fresh.choose(p), generic)
            # HIPGN_TUNING_DB is read when a handle is made
            code, out = python(f"import hipgn; h = hipgn.library().handle(); print(h.choose(hipgn.ProblemKey{tuple(want)}"
                               f".problem()))", {"HIPGN_TUNING_DB": path, "HIPGN_LIBRARY": LIBRARY})
            self.assertEqual(code, 0, out)
            self.assertEqual(out.strip().splitlines()[-1], generic)
            # a stale entry warns on stderr and changes nothing; a malformed file raises
            with open(path) as f:
                doc = json.load(f)
            doc["entries"][0]["instance"] = "gn_gone_from_this_build"
            with open(path, "w") as f:
                json.dump(doc, f)
            code, out = python(f"import hipgn; h = hipgn.library().handle(); print(h.choose(hipgn.ProblemKey{tuple(want)}"
                               f".problem()))", {"HIPGN_TUNING_DB": path, "HIPGN_LIBRARY": LIBRARY})
            self.assertEqual(code, 0, out)
            self.assertIn("gn_gone_from_this_build is not in this build; ignored", out)
            with open(path, "w") as f:
                f.write("{ not json")
            with self.assertRaises(hipgn.HipgnError) as cm:
                fresh.load_tuning_db(path)
            self.assertIn("is skipped", str(cm.exception))
            self.assertEqual(fresh.choose(p), generic, "a bad file changes nothing already loaded")
            with self.assertRaises(ValueError):
                hipgn.read_tuning_db(path)
            # a version 1 file (keyed by device name) is read as empty, with a warning, as the library does
            with open(path, "w") as f:
                json.dump({"format": "hipgn-tuning-db", "version": 1, "entries": [
                    {"device": self.handle.device_name, "op": "fwd", "n": 3, "c": 64, "spatial": [8, 8],
                     "groups": 32, "x_dtype": "f32", "gamma_dtype": "f32", "layout": "cf", "act": "none",
                     "instance": generic, "us": 1.0}]}, f)
            with self.assertWarns(UserWarning):
                self.assertEqual(hipgn.read_tuning_db(path), {})


if __name__ == "__main__":
    unittest.main(verbosity=2)
