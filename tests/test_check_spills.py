"""scripts/check_spills.py on hand-written ptxas logs: a kernel past the baseline fails, one
within it passes, and --against judges one build's log by another's (bench/ab_trees.sh: A's
spills against B's), over the objects both built."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "scripts", "check_spills.py")
LINE = ("ptxas warning : Registers are spilled to local memory in function '{k}', "
        "{s} bytes spill stores, {l} bytes spill loads\n")


def log(dirname, name, spills):
    path = os.path.join(dirname, name)
    with open(path, "w") as f:
        f.write("[1/2] Building CUDA object generated/tu/fwd_cl_0.cu.o\n")
        for k, (s, l) in spills.items():
            f.write(LINE.format(k=k, s=s, l=l))
    return path


def run(*args):
    p = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)
    return p.returncode, p.stdout


class CheckSpillsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name
        self.baseline = os.path.join(self.d, "baseline.json")
        with open(self.baseline, "w") as f:
            json.dump({"about": "test", "kernels": {"kernel_a": 16}}, f)

    def tearDown(self):
        self.tmp.cleanup()

    def test_within_the_baseline_passes(self):
        rc, out = run(log(self.d, "b.log", {"kernel_a": (8, 8)}), "--baseline", self.baseline)
        self.assertEqual(rc, 0, out)
        self.assertIn("none past the baseline", out)

    def test_past_the_baseline_or_unlisted_fails(self):
        rc, out = run(log(self.d, "b.log", {"kernel_a": (8, 12), "kernel_b": (4, 4)}), "--baseline", self.baseline)
        self.assertEqual(rc, 1, out)
        self.assertIn("kernel_a: 16 -> 20", out)
        self.assertIn("kernel_b: 0 -> 8", out)

    def test_against_another_log(self):
        b = log(self.d, "build_b.log", {"kernel_a": (8, 8)})
        a = log(self.d, "build_a.log", {"kernel_a": (8, 8), "kernel_c": (136, 244)})
        rc, out = run(a, "--against", b)
        self.assertEqual(rc, 1, out)
        self.assertIn("kernel_c: 0 -> 380", out)
        self.assertNotIn("kernel_a:", out)
        self.assertIn("1 kernels spill more in build_a.log than in build_b.log", out)
        rc, out = run(b, "--against", a)
        self.assertEqual(rc, 0, out)
        self.assertIn("0 kernels spill more", out)

    def test_against_a_log_that_built_nothing_judges_nothing(self):
        # a warm machine's build of B that was up to date: no object built, no warning to compare
        b = os.path.join(self.d, "build_b.log")
        with open(b, "w") as f:
            f.write("ninja: no work to do.\n")
        a = log(self.d, "build_a.log", {"kernel_c": (136, 244)})
        rc, out = run(a, "--against", b)
        self.assertEqual(rc, 0, out)
        self.assertIn("1 of build_a.log's 1 CUDA objects were not built in build_b.log", out)
        self.assertNotIn("kernel_c:", out)
        self.assertIn("0 kernels spill more", out)


if __name__ == "__main__":
    unittest.main()
