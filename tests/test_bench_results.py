"""bench/merge_results.py and heuristic_check.py's choice of rows, on written bench.py outputs: a
GPU's first run starts its set, a later run replaces the rows it measured (but not one that would
lose a peer's time), another GPU's run is refused and leaves the set as it was, --instances takes
a --best run's per-instance times only into rows that dispatched the same instance, and the
heuristic check takes the set measured on the GPU present; bench.py's plan of problems, from its
options (refusing an --only name that is no shape) or from a --rows file, and its --shape specs;
merge_results refuses a run of such probe shapes."""
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import unittest

BENCH = pathlib.Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent / "python"))
import bench  # noqa: E402
import heuristic_check  # noqa: E402


# three shapes of the suite: merge_results keeps no other shape's rows
A, B, C = "sd15_64x320", "sd15_32x320", "tiny"


def row(name, op, hipgn, chosen, **extra):
    r = dict(name=name, shape=[2, 320, 64, 64, 32], dtype="float16", layout="cf", op=op, bytes=5242880,
             floor_bytes=5242880 * (2 if op == "fwd" else 3), copy=4.4, copy_warm=3.0, sets=15,
             hipgn_name=chosen, hipgn=hipgn, hipgn_warm=hipgn * 0.8, eager=50.0, compile=11.0)
    r.update(extra)
    return r


def run_file(folder, gpu, rows):
    meta = dict(date="2026-11-28", gpu=gpu, l2_bytes=62914560, torch="2.11", act="swish",
                method="CUDA graph replay over rotating buffer sets (>3x L2), device events, median of 15 replays")
    path = pathlib.Path(folder) / f"run{len(os.listdir(folder))}.json"
    path.write_text(json.dumps(dict(meta=meta, rows=rows)))
    return path


class MergeResults(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.runs = pathlib.Path(self.tmp.name) / "runs"
        self.runs.mkdir()
        self.into = pathlib.Path(self.tmp.name) / "h200"

    def tearDown(self):
        self.tmp.cleanup()

    def merge(self, path, *args):
        return subprocess.run([sys.executable, str(BENCH / "merge_results.py"), str(path), "--into", str(self.into),
                               *args], capture_output=True, text=True)

    def kept(self):
        doc = json.loads((self.into / "latest.json").read_text())
        return {(r["name"], r["op"]): r for r in doc["rows"]}, doc["meta"]

    def start(self):
        first = run_file(self.runs, "NVIDIA H200", [row(A, "fwd", 9.0, "gn_x_onchip"), row(A, "bwd", 13.0, "gn_y_split"),
                                                    row(B, "fwd", 7.0, "gn_x_onchip")])
        self.assertEqual(self.merge(first, "--note", "first").returncode, 0)

    def test_first_run_starts_a_set_and_a_later_one_replaces_its_rows(self):
        self.start()
        rows, meta = self.kept()
        self.assertEqual(len(rows), 3)
        self.assertEqual(meta["gpu"], "NVIDIA H200")
        self.assertEqual([(r["rows"], r["note"]) for r in meta["runs"]], [(3, "first")])
        self.assertTrue((self.into / "latest.md").read_text().startswith("# hipgn benchmark: NVIDIA H200"))
        again = run_file(self.runs, "NVIDIA H200", [row(A, "fwd", 8.5, "gn_x_onchip"), row(C, "fwd", 3.0, "gn_x_onchip")])
        self.assertEqual(self.merge(again, "--note", "second").returncode, 0)
        rows, meta = self.kept()
        self.assertEqual(sorted(rows), sorted([(A, "bwd"), (A, "fwd"), (B, "fwd"), (C, "fwd")]))
        self.assertEqual(rows[(A, "fwd")]["hipgn"], 8.5)  # replaced
        self.assertEqual(rows[(A, "bwd")]["hipgn"], 13.0)  # kept
        self.assertEqual([r["rows"] for r in meta["runs"]], [3, 2])

    def test_a_kept_row_with_a_peer_the_new_run_lacks_stays_whole_unless_told(self):
        first = run_file(self.runs, "NVIDIA H200", [row(A, "fwd", 9.0, "gn_x_onchip", apex=12.0),
                                                    row(B, "fwd", 7.0, "gn_x_onchip")])
        self.assertEqual(self.merge(first).returncode, 0)
        again = run_file(self.runs, "NVIDIA H200", [row(A, "fwd", 8.0, "gn_x_onchip"), row(B, "fwd", 6.0, "gn_x_onchip")])
        done = self.merge(again, "--note", "no apex")
        self.assertEqual(done.returncode, 0)
        self.assertIn("1 kept rows stay whole", done.stdout)
        rows, meta = self.kept()
        self.assertEqual((rows[(A, "fwd")]["hipgn"], rows[(A, "fwd")]["apex"]), (9.0, 12.0))  # whole
        self.assertEqual(rows[(B, "fwd")]["hipgn"], 6.0)  # replaced: it had no Apex time
        self.assertEqual(meta["runs"][-1]["rows"], 1)
        self.assertEqual(self.merge(again, "--drop-peers").returncode, 0)
        rows, _ = self.kept()
        self.assertEqual(rows[(A, "fwd")]["hipgn"], 8.0)
        self.assertNotIn("apex", rows[(A, "fwd")])

    def test_another_gpus_run_is_refused_and_changes_nothing(self):
        self.start()
        before = (self.into / "latest.json").read_text()
        other = run_file(self.runs, "NVIDIA H100 80GB HBM3", [row(A, "fwd", 12.0, "gn_x_onchip")])
        done = self.merge(other)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("ran on NVIDIA H200", done.stderr)
        self.assertEqual((self.into / "latest.json").read_text(), before)

    def test_a_run_of_probe_shapes_is_refused_and_changes_nothing(self):
        self.start()
        before = (self.into / "latest.json").read_text()
        probe = run_file(self.runs, "NVIDIA H200", [row(A, "fwd", 8.0, "gn_x_onchip"),
                                                    row("probe_c384", "bwd", 11.0, "gn_y_onchip")])
        done = self.merge(probe)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("probe_c384", done.stderr)
        self.assertEqual((self.into / "latest.json").read_text(), before)

    def test_instances_need_kept_rows(self):
        best = run_file(self.runs, "NVIDIA H200", [row(A, "fwd", 9.2, "gn_x_onchip", hipgn_best=9.2,
                                                       hipgn_best_name="gn_x_onchip", instances={"gn_x_onchip": 9.2})])
        done = self.merge(best, "--instances")
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("has none", done.stderr)
        self.assertFalse(self.into.exists())

    def test_instances_go_only_into_rows_of_the_same_dispatched_instance(self):
        self.start()
        times_a = {"gn_x_onchip": 9.2, "gn_x_split": 8.8}
        best = run_file(self.runs, "NVIDIA H200", [
            row(A, "fwd", 9.2, "gn_x_onchip", hipgn_best=8.8, hipgn_best_name="gn_x_split", instances=times_a),
            # dispatched otherwise than the kept row: its times would judge another choice
            row(A, "bwd", 12.0, "gn_y_onchip", hipgn_best=12.0, hipgn_best_name="gn_y_onchip",
                instances={"gn_y_onchip": 12.0, "gn_y_split": 13.1}),
        ])
        done = self.merge(best, "--instances", "--note", "best")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("1 of the run's rows had no kept row of the same dispatched instance", done.stdout)
        rows, meta = self.kept()
        a = rows[(A, "fwd")]
        self.assertEqual(a["instances"], times_a)
        self.assertEqual((a["hipgn_best"], a["hipgn_best_name"]), (8.8, "gn_x_split"))
        self.assertEqual((a["hipgn"], a["compile"]), (9.0, 11.0))  # the peers run's, untouched
        self.assertNotIn("instances", rows[(A, "bwd")])
        self.assertEqual(rows[(A, "bwd")]["hipgn_name"], "gn_y_split")
        self.assertNotIn("instances", rows[(B, "fwd")])
        self.assertEqual([(r["rows"], r["note"], r.get("instances")) for r in meta["runs"]],
                         [(3, "first", None), (1, "best", True)])
        self.assertIn("1 rows (instances only): best", (self.into / "latest.md").read_text())


class Handle:
    def __init__(self, has_device, device_name):
        self.has_device, self.device_name = has_device, device_name


class HeuristicCheckRows(unittest.TestCase):
    def test_the_set_of_the_gpu_present_else_the_default(self):
        with tempfile.TemporaryDirectory() as d:
            results = pathlib.Path(d)
            (results / "h200").mkdir()
            (results / "older").mkdir()
            for folder, gpu in ((results, "NVIDIA H100 80GB HBM3"), (results / "h200", "NVIDIA H200"),
                                (results / "older", "NVIDIA H100 80GB HBM3")):
                (folder / "latest.json").write_text(json.dumps(dict(meta=dict(gpu=gpu), rows=[])))
            saved = heuristic_check.RESULTS
            heuristic_check.RESULTS = results
            try:
                pick = lambda *h: heuristic_check.results_of(Handle(*h))  # noqa: E731
                self.assertEqual(pick(True, "NVIDIA H200"), results / "h200" / "latest.json")
                self.assertEqual(pick(True, "NVIDIA H100 80GB HBM3"), results / "latest.json")
                # no device: the runtime assumes its default target whatever the name says, whose
                # rows are the H200's
                self.assertEqual(pick(False, "none"), results / "h200" / "latest.json")
                self.assertEqual(pick(False, "NVIDIA H100 80GB HBM3"), results / "h200" / "latest.json")
                self.assertEqual(pick(True, "AMD Instinct MI300X"), results / "latest.json")
                (results / "h200" / "latest.json").unlink()  # a checkout without them: the default
                self.assertEqual(pick(False, "none"), results / "latest.json")
            finally:
                heuristic_check.RESULTS = saved


class Plan(unittest.TestCase):
    SHAPES = {"sd": (2, 320, (64, 64), 32), "tiny": (1, 32, (8, 8), 8), "odd_1d": (1, 128, (8191,), 1)}

    def test_options_take_fp32_on_its_subset_and_the_odd_shapes(self):
        got = bench.plan(self.SHAPES, {"tiny"}, ["float16", "float32"], ["cf", "cl"], ["fwd", "bwd"])
        self.assertEqual([(p[0], p[2], p[3]) for p in got],
                         [("sd", "float16", "cf"), ("sd", "float16", "cl"), ("tiny", "float16", "cf"),
                          ("tiny", "float16", "cl"), ("tiny", "float32", "cf"), ("tiny", "float32", "cl"),
                          ("odd_1d", "float16", "cf"), ("odd_1d", "float16", "cl"), ("odd_1d", "float32", "cf"),
                          ("odd_1d", "float32", "cl")])
        self.assertTrue(all(p[4] == ("fwd", "bwd") for p in got))

    def test_only_takes_the_named_shapes_and_refuses_a_name_that_is_none(self):
        got = bench.plan(self.SHAPES, set(), ["float16"], ["cl"], ["bwd"], only=["odd_1d", "tiny"])
        self.assertEqual([(p[0], p[2], p[3], p[4]) for p in got],
                         [("tiny", "float16", "cl", ("bwd",)), ("odd_1d", "float16", "cl", ("bwd",))])
        with self.assertRaises(SystemExit) as e:
            bench.plan(self.SHAPES, set(), ["float16"], ["cl"], ["bwd"], only=["tiny", "a", "b"])
        self.assertIn("'a', 'b'", str(e.exception))
        with self.assertRaises(SystemExit):  # fp32 of a shape outside its subset: nothing to time
            bench.plan(self.SHAPES, set(), ["float32"], ["cf"], ["fwd"], only=["sd"])

    def test_shape_specs_parse_any_rank_and_refuse_what_is_not_a_new_valid_shape(self):
        self.assertEqual(bench.parse_shape("probe_c384=2,384,32x32,32", self.SHAPES),
                         ("probe_c384", (2, 384, (32, 32), 32)))
        self.assertEqual(bench.parse_shape("p3d=1,120,7x31x37,40", self.SHAPES), ("p3d", (1, 120, (7, 31, 37), 40)))
        self.assertEqual(bench.parse_shape("p1d=4,96,8191,3", self.SHAPES), ("p1d", (4, 96, (8191,), 3)))
        for spec, why in (("p=2,384,32x32,36", "does not divide"), ("sd=2,320,64x64,32", "suite or the odd"),
                          ("p=2,384,32x32", "four fields"), ("p=2,384,32*32,32", "whole numbers"),
                          ("p=0,384,32x32,32", "positive"), ("=2,384,32x32,32", "name"),
                          ("p-1=2,384,32x32,32", "name"), ("p=2,8,1x1x1x1x1x1x1x1x1,8", "at most 8")):
            with self.assertRaises(SystemExit, msg=spec) as e:
                bench.parse_shape(spec, self.SHAPES)
            self.assertIn(why, str(e.exception), spec)

    def test_rows_file_names_exactly_its_rows_a_problems_ops_together(self):
        with tempfile.TemporaryDirectory() as d:
            path = pathlib.Path(d) / "rows"
            path.write_text("# stale rows\nsd float32 cf fwd\n\nodd_1d bfloat16 cl bwd  # one group\n"
                            "sd float32 cf bwd\nsd float32 cf fwd\n")
            rows = bench.read_rows(path)
            self.assertEqual(rows[1], ("odd_1d", "bfloat16", "cl", "bwd"))
            got = bench.plan(self.SHAPES, set(), ["float16"], ["cf"], ["fwd"], rows)
            self.assertEqual([(p[0], p[1], p[2], p[3], p[4]) for p in got],
                             [("sd", self.SHAPES["sd"], "float32", "cf", ("fwd", "bwd")),
                              ("odd_1d", self.SHAPES["odd_1d"], "bfloat16", "cl", ("bwd",))])
            with self.assertRaises(SystemExit):
                bench.plan(self.SHAPES, set(), [], [], [], [("nope", "float16", "cf", "fwd")])


if __name__ == "__main__":
    unittest.main()
