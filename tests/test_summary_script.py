"""scripts/test_summary.py on a hand-written ctest JUnit file: skips grouped by reason, per-instance
runs folded into their test, GPU-only tests named, failures shown with their output."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "scripts"))
import test_summary  # noqa: E402

GTEST_SKIP = """[ RUN      ] {name}
/src/tests/test_fwd_gpu.cpp:40: Skipped
no GPU on this machine: the GPU runtime reports: no driver

[  SKIPPED ] {name} (0 ms)
"""

JUNIT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="(empty)" tests="7" failures="1" disabled="0" skipped="4" time="12">
<testcase name="Registry.HasInstances" status="run"><system-out>[  PASSED  ] 1 test.</system-out></testcase>
<testcase name="Validation.GoodProblemIsValid" status="run"><system-out>ok</system-out></testcase>
<testcase name="All/FwdInstance.MatchesReferenceOnCorpus/gn_fwd_a" status="notrun">
  <skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/><system-out>{skip_a}</system-out></testcase>
<testcase name="All/FwdInstance.MatchesReferenceOnCorpus/gn_fwd_b" status="notrun">
  <skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/><system-out>{skip_b}</system-out></testcase>
<testcase name="CApi.RunsOnTheGpu" status="notrun">
  <skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/><system-out>{skip_c}</system-out></testcase>
<testcase name="torch_autograd" status="notrun">
  <skipped message="SKIP_RETURN_CODE=77"/><system-out>skipped: PyTorch is not importable here (No module named 'torch')
</system-out></testcase>
<testcase name="ProfilerCli.iters_zero" status="fail">
  <failure message="Failed"/><system-out>iters_zero: exit status 105, expected 2
iters_zero: FAILED</system-out></testcase>
</testsuite>
""".format(skip_a=GTEST_SKIP.format(name="All/FwdInstance.MatchesReferenceOnCorpus/gn_fwd_a"),
           skip_b=GTEST_SKIP.format(name="All/FwdInstance.MatchesReferenceOnCorpus/gn_fwd_b"),
           skip_c=GTEST_SKIP.format(name="CApi.RunsOnTheGpu"))


class SummaryTest(unittest.TestCase):
    def summary(self, xml):
        with tempfile.NamedTemporaryFile("w", suffix=".xml", delete=False) as f:
            f.write(xml)
        try:
            return test_summary.summarize(f.name, "build/ctest.log")
        finally:
            os.unlink(f.name)

    def test_counts_ran_skipped_and_failed(self):
        text, ok = self.summary(JUNIT)
        self.assertFalse(ok)
        self.assertIn("==== test summary: 7 tests in 12 s; full output in build/ctest.log ====", text)
        self.assertIn("ran:     3 (2 passed, 1 failed)", text)
        self.assertIn("skipped: 4, by reason:", text)
        self.assertIn("result: FAILED: 1 failed, 2 passed, 4 skipped", text)

    def test_groups_skips_by_reason_and_folds_instances(self):
        text, _ = self.summary(JUNIT)
        lines = text.splitlines()
        gpu = lines.index("      3  no GPU on this machine: the GPU runtime reports: no driver")
        self.assertEqual(lines[gpu + 1].strip(), "FwdInstance.MatchesReferenceOnCorpus (x2), CApi.RunsOnTheGpu")
        torch = lines.index("      1  PyTorch is not importable here (No module named 'torch')")
        self.assertEqual(lines[torch + 1].strip(), "torch_autograd")
        self.assertLess(gpu, torch)  # the largest group first
        self.assertIn("GPU only: the 3 tests skipped for want of a GPU run on a GPU machine (scripts/gpu_check.sh)",
                      text)

    def test_shows_each_failure_with_its_output(self):
        text, _ = self.summary(JUNIT)
        self.assertIn("FAILED: ProfilerCli.iters_zero; the end of its output:\n"
                      "    iters_zero: exit status 105, expected 2\n    iters_zero: FAILED", text)

    def test_all_passed(self):
        xml = JUNIT.split("<testcase name=\"ProfilerCli")[0] + "</testsuite>\n"
        text, ok = self.summary(xml)
        self.assertTrue(ok)
        self.assertIn("result: passed: 0 failed, 2 passed, 4 skipped", text)


if __name__ == "__main__":
    unittest.main()
