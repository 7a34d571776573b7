"""hipgn's benchmark: the suite's shapes against a same-size device copy, PyTorch eager,
torch.compile and (with --apex) NVIDIA Apex's NHWC GroupNorm, in one process, on the GPU machine.

Every timed op is captured in a CUDA graph over K rotating buffer sets whose total exceeds 3x
the L2 (L2-cold, the headline); beside it the same op K times on one set (L2-warm). A graph
replay is timed with device events; the median of the replays over K is the op's time (the
copy's cold time: the median of three such graphs, bench/copy_spread_probe.py). The
forward is GroupNorm (+SiLU); the backward is hipgn's fused backward (dx, dgamma, dbeta) and,
for the peers, their training step (forward + backward) minus their forward.

    python3 bench/bench.py --lib build-gpu/runtime/libhipgn.so [--peers all|eager|none] [--apex PATH] ...

Writes bench/results/latest.json (one row per shape, dtype, layout and op; with --best also
every supporting instance's time, `instances`, which the dispatch rules cite), latest.md (the
summary and the table) and latest.png (% of copy per shape), under --out.

A shape outside the suite, to settle a dispatch rule by this method rather than hipgn_profiler's
single launches (which can disagree on a close choice by several percent: bench/NOTES.md, "The
channels-last backward of 20-byte runs in parts"): `--shape probe_c384=2,384,32x32,32 --best
--peers none` times the shapes --shape names, alone; bench/merge_results.py keeps them out of
bench/results, which holds the suite and the odd shapes.
"""
from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import math
import multiprocessing as mp
import os
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "python"))
from hipgn._library import MAX_SPATIAL_RANK, Problem  # noqa: E402  (the package of this checkout: no GPU, no torch)

HERE = pathlib.Path(__file__).resolve().parent
# A copy of ../shared/bench/suite.json: the GPU machine gets only this repository.
SUITE = HERE / "suite.json"

# Odd shapes (N, C, spatial, G): prime and odd spatial sizes, C/G = 3, 1-D and 3-D spatial,
# channels that the vector width does not divide into a group; and few large groups of an odd
# spatial size (the last two: 16 groups of 172660 elements, one of 1048448), which the
# channels-first resident forward takes and no other row does (bench/NOTES.md, "Where the
# seventh session of 2026-11-28 ended": retiring it wants their times).
ODD = {
    "odd_31x31_c640": (2, 640, (31, 31), 32),
    "odd_97x89_c96_cg3": (2, 96, (97, 89), 32),
    "odd_1d_8191_c256": (4, 256, (8191,), 32),
    "odd_3d_7x31x37_c120_cg3": (2, 120, (7, 31, 37), 40),
    "odd_127x127_c320": (1, 320, (127, 127), 32),
    "odd_61x67_c1280": (2, 1280, (61, 67), 32),
    "odd_97x89_c160_g8": (2, 160, (97, 89), 8),
    "odd_1d_8191_c128_g1": (1, 128, (8191,), 1),
}
VIDEO = ("video_5d_20x256x256", (1, 128, (20, 256, 256), 32))
PEERS = ("eager", "compile", "apex")


def load_shapes(which: str):
    suite = json.loads(SUITE.read_text())
    shapes = {}
    if which in ("suite", "all"):
        for name, (n, c, h, w, g) in suite["shapes"].items():
            shapes[name] = (n, c, (h, w), g)
        shapes[VIDEO[0]] = VIDEO[1]
    if which in ("odd", "all"):
        shapes.update(ODD)
    return shapes, set(suite["fp32"])


def parse_shape(spec: str, known) -> tuple:
    """A --shape spec, `name=N,C,S1xS2...,G` (spatial sizes joined by x, any rank from 1), as
    (name, (N, C, spatial, G)); refused (SystemExit) where malformed, where G does not divide C,
    or where the name is one of `known` (the suite's and the odd ones: a probe's rows must not pass
    for theirs)."""
    def bad(why):
        raise SystemExit(f"bench.py: --shape {spec!r}: {why} (expected name=N,C,S1xS2...,G, say "
                         f"probe_c384=2,384,32x32,32)")

    name, sep, dims = spec.partition("=")
    if not sep or not name or not all(ch.isalnum() or ch == "_" for ch in name):
        bad("a name of letters, digits and _ first")
    if name in known:
        bad(f"{name!r} is a shape of the suite or the odd ones")
    parts = dims.split(",")
    if len(parts) != 4:
        bad("four fields after the name")
    try:
        n, c, g = int(parts[0]), int(parts[1]), int(parts[3])
        spatial = tuple(int(s) for s in parts[2].split("x"))
    except ValueError:
        bad("whole numbers")
    if min(n, c, g, *spatial) < 1 or len(spatial) > MAX_SPATIAL_RANK:
        bad(f"positive sizes and at most {MAX_SPATIAL_RANK} spatial dimensions")
    if c % g:
        bad(f"G = {g} does not divide C = {c}")
    return name, (n, c, spatial, g)


def read_rows(path):
    """The rows a --rows file names, (name, dtype, layout, op) each: 'name dtype layout op' a line,
    blank lines and # comments skipped (heuristic_check.py --stale-rows writes such a file)."""
    keys = []
    for line in pathlib.Path(path).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, dtype, layout, op = line.split()
            keys.append((name, dtype, layout, op))
    return keys


def plan(shapes, fp32_subset, dtypes, layouts, ops, rows=None, only=None):
    """The problems to time, (name, shape, dtype, layout, ops) each: the shapes' (or those of them
    `only` names) dtypes (fp32 on its subset and the odd shapes), layouts and ops; or, given rows,
    exactly those rows, a problem's ops together (one set of tensors for its forward and backward).
    A name that is no shape, or options that leave nothing to time, stop the run before it starts
    (an --only of no shape's name once spent a device call timing nothing)."""
    if rows is None:
        if only:
            unknown = [name for name in only if name not in shapes]
            if unknown:
                raise SystemExit(f"bench.py: --only: no shape named {', '.join(map(repr, unknown))} in --shapes' set "
                                 f"(the suite, the odd ones or both)")
            shapes = {name: shapes[name] for name in shapes if name in only}
        got = [(name, shape, dt, layout, tuple(ops)) for name, shape in shapes.items() for dt in dtypes
               if dt != "float32" or name in fp32_subset or name.startswith("odd") for layout in layouts]
        if not got:
            raise SystemExit("bench.py: the options leave no problem to time")
        return got
    wanted = {}
    for name, dt, layout, op in rows:
        if name not in shapes:
            raise SystemExit(f"bench.py: --rows names {name!r}, which is no shape of the suite or the odd ones")
        wanted.setdefault((name, dt, layout), [])
        if op not in wanted[(name, dt, layout)]:
            wanted[(name, dt, layout)].append(op)
    return [(name, shapes[name], dt, layout, tuple(o)) for (name, dt, layout), o in wanted.items()]


# --- hipgn through its C API (ctypes; the checkout's bindings declare hipgn_problem_t) ---------
class Hipgn:
    OP = {"fwd": 0, "bwd": 3}

    ACT = {"none": 0, "swish": 1}

    def __init__(self, path: str, torch, act: str):
        self.torch = torch
        self.act = act
        self.lib = ctypes.CDLL(path)
        self.lib.hipgn_last_error.restype = ctypes.c_char_p
        self.lib.hipgn_instance_name.restype = ctypes.c_char_p
        self.handle = ctypes.c_void_p()
        if self.lib.hipgn_create(ctypes.byref(self.handle)) != 0:
            raise RuntimeError(self.lib.hipgn_last_error().decode())
        self.names = [self.lib.hipgn_instance_name(i).decode() for i in range(self.lib.hipgn_instance_count())]
        self.dtype = {torch.float32: (0, "f32"), torch.float16: (1, "f16"), torch.bfloat16: (2, "bf16")}

    def problem(self, op, n, c, spatial, g, dtype, layout):
        p = Problem()
        p.op, p.n, p.c, p.groups = self.OP[op], n, c, g
        p.spatial_rank = len(spatial)
        for i, s in enumerate(spatial):
            p.spatial[i] = s
        p.x_dtype = p.gamma_dtype = self.dtype[dtype][0]
        p.layout = 0 if layout == "cf" else 1
        p.act, p.eps, p.swish_beta = self.ACT[self.act], 1e-5, 1.0
        return p

    def bucket(self, op, dtype, layout):
        short = self.dtype[dtype][1]
        prefix = f"gn_{op}_{short}_{short}_{layout}_{self.act}_"
        return [n for n in self.names if n.startswith(prefix)]

    def chosen(self, p):
        name = ctypes.c_char_p()
        if self.lib.hipgn_choose_instance(self.handle, ctypes.byref(p), ctypes.byref(name)) != 0:
            return None
        return name.value.decode()

    def fwd(self, p, s, instance=None):
        P = ctypes.c_void_p
        stream = P(self.torch.cuda.current_stream().cuda_stream)
        return self.lib.hipgn_groupnorm_fwd(self.handle, ctypes.byref(p), P(s["x"].data_ptr()), P(s["y"].data_ptr()),
                                            P(s["w"].data_ptr()), P(s["b"].data_ptr()), P(s["mean"].data_ptr()),
                                            P(s["rstd"].data_ptr()), instance.encode() if instance else None, stream)

    def bwd(self, p, s, instance=None):
        P = ctypes.c_void_p
        stream = P(self.torch.cuda.current_stream().cuda_stream)
        return self.lib.hipgn_groupnorm_bwd(self.handle, ctypes.byref(p), P(s["dy"].data_ptr()), P(s["x"].data_ptr()),
                                            P(s["mean"].data_ptr()), P(s["rstd"].data_ptr()), P(s["w"].data_ptr()),
                                            P(s["b"].data_ptr()), P(s["dx"].data_ptr()), P(s["dw"].data_ptr()),
                                            P(s["db"].data_ptr()), instance.encode() if instance else None, stream)

    def error(self):
        return self.lib.hipgn_last_error().decode()


# --- tensors and timing -----------------------------------------------------------------------
def make_set(torch, n, c, spatial, g, dtype, layout, backward):
    shape = (n, c, *spatial)
    fmt = {4: torch.channels_last, 5: torch.channels_last_3d}.get(len(shape))
    x = torch.randn(shape, device="cuda", dtype=dtype) * 2 + 0.5
    if layout == "cl":
        if fmt is None:  # 1-D spatial: (N, L, C) storage viewed as (N, C, L)
            x = x.transpose(1, 2).contiguous().transpose(1, 2)
        else:
            x = x.contiguous(memory_format=fmt)
    s = {"x": x, "y": torch.empty_like(x), "w": torch.rand(c, device="cuda", dtype=dtype) + 0.5,
         "b": torch.rand(c, device="cuda", dtype=dtype) - 0.5,
         "mean": torch.empty(n * g, device="cuda", dtype=torch.float32),
         "rstd": torch.empty(n * g, device="cuda", dtype=torch.float32)}
    if backward:
        s["dy"] = torch.randn_like(x)
        s["dx"] = torch.empty_like(x)
        s["dw"] = torch.empty_like(s["w"])
        s["db"] = torch.empty_like(s["b"])
    return s


def set_count(l2, x_bytes, backward):
    """How many tensor sets a timed graph rotates over: more than 3x the L2 of traffic (x and y,
    or x, dy and dx), 2 to 256 of them."""
    return max(2, min(256, math.ceil(3 * l2 / (x_bytes * (3 if backward else 2)))))


def graph_time_us(torch, fn, sets, replays=15):
    """Median time of fn(set) per set, with fn over every set captured in one graph."""
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for s in sets[:2]:
            fn(s)  # warm-up on the capture stream: workspaces, compilation, lazy init
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for s in sets:
            fn(s)
    graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(replays):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0 / len(sets))
    del graph
    return statistics.median(times)


def timings(torch, fn, cold_sets, warm_set):
    return graph_time_us(torch, fn, cold_sets), graph_time_us(torch, fn, [warm_set] * len(cold_sets))


# --- the peers --------------------------------------------------------------------------------
def raise_recompile_limits(torch):
    # Every problem compiles its own specialization of the same function (as a network's
    # GroupNorm layers of distinct shapes do); past Dynamo's default limit of 8 it would
    # silently run eager instead.
    import torch._dynamo
    torch._dynamo.config.recompile_limit = 100000
    torch._dynamo.config.accumulated_recompile_limit = 100000


def peer_fns(torch, g, compiled):
    import torch.nn.functional as F

    def fwd(x, w, b):
        return F.silu(F.group_norm(x, g, w, b, 1e-5))

    f = torch.compile(fwd, dynamic=False) if compiled else fwd

    def forward(s):
        s["y"] = f(s["x"], s["w"], s["b"])

    def step(s):
        y = f(s["xg"], s["w"], s["b"])
        y.backward(s["dy"])

    return forward, step


def prepare_step_sets(torch, sets):
    for s in sets:
        s["xg"] = s["x"].detach().requires_grad_(True)
        s["w"].requires_grad_(True)
        s["b"].requires_grad_(True)


def warm_compile_worker(args):
    """Compile (filling the on-disk inductor caches) one problem's forward and step."""
    name, (n, c, spatial, g), dtype_name, layout = args
    import torch
    raise_recompile_limits(torch)
    dtype = getattr(torch, dtype_name)
    s = make_set(torch, n, c, spatial, g, dtype, layout, True)
    prepare_step_sets(torch, [s])
    fwd, step = peer_fns(torch, g, True)
    fwd(s)
    step(s)
    torch.cuda.synchronize()
    return name


def apex_checked(torch, forward, backward, s, g, op):
    """Apex's output on one set against PyTorch's in fp32 (y, or dx for the backward): None, or
    what differs, so that a wrong call is not timed as a result."""
    import torch.nn.functional as F
    x = s["x"].float().requires_grad_(op == "bwd")
    with torch.enable_grad():
        ref = F.silu(F.group_norm(x, g, s["w"].detach().float(), s["b"].detach().float(), 1e-5))
        if op == "bwd":
            ref.backward(s["dy"].float())
            ref = x.grad
    forward(s)
    if op == "bwd":
        backward(s)
    got = s["y" if op == "fwd" else "dx"].float()
    err = (got - ref).abs().max().item()
    return None if err <= 0.05 * max(1.0, ref.abs().max().item()) else f"{op} differs from PyTorch's by {err:.3g}"


def time_apex(torch, apex, row, op, problem, sets):
    """Apex's forward, or its backward alone (its forward's sums made first), on the same sets."""
    forward, backward = apex.fns(*problem)
    try:
        with torch.no_grad():
            differs = apex_checked(torch, forward, backward, sets[0], problem[2], op)
            if differs:
                row["apex_error"] = differs
                return
            if op == "fwd":
                row["apex"], row["apex_warm"] = timings(torch, forward, sets, sets[0])
            else:
                for s in sets:
                    forward(s)
                row["apex"], row["apex_warm"] = timings(torch, backward, sets, sets[0])
    except Exception as e:  # recorded, not fatal
        row["apex_error"] = repr(e)[:200]


# --- the run ----------------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True, help="path to libhipgn.so")
    ap.add_argument("--shapes", default="all", choices=["suite", "odd", "all"])
    ap.add_argument("--only", default="", help="comma-separated shape names")
    ap.add_argument("--shape", action="append", default=[], metavar="NAME=N,C,S1xS2...,G",
                    help="time this shape (repeatable), and only the shapes so named: --shapes and --only "
                         "are then ignored (fp32 too where --dtypes asks it)")
    ap.add_argument("--dtypes", default="float16,bfloat16,float32")
    ap.add_argument("--layouts", default="cf,cl")
    ap.add_argument("--ops", default="fwd,bwd")
    ap.add_argument("--rows", help="time exactly the rows this file names ('name dtype layout op' a line; "
                                   "heuristic_check.py --stale-rows writes one): --shapes, --only, --dtypes, "
                                   "--layouts and --ops are then ignored")
    ap.add_argument("--peers", default="all", choices=["all", "eager", "none"])
    ap.add_argument("--compile-dtypes", default="float16,bfloat16,float32",
                    help="dtypes on which torch.compile is timed (it compiles once per problem)")
    ap.add_argument("--best", action="store_true", help="also time every supporting instance (hipgn_best; each in instances)")
    ap.add_argument("--warm-procs", type=int, default=8, help="processes that compile ahead in parallel")
    ap.add_argument("--out", default=str(HERE / "results"))
    ap.add_argument("--budget-s", type=float, default=1e9, help="stop starting new problems after this")
    ap.add_argument("--apex", default=os.environ.get("HIPGN_APEX", ""),
                    help="time Apex's NHWC GroupNorm too: an Apex checkout or its built module (bench/apex_peer.py)")
    ap.add_argument("--apex-build", default="/tmp/hipgn-apex-build", help="where --apex's checkout is compiled")
    ap.add_argument("--act", default="swish", choices=sorted(Hipgn.ACT),
                    help="hipgn's activation (none: what Swish costs, against swish; the peers run SiLU, so --peers none)")
    a = ap.parse_args()
    if a.act != "swish" and a.peers != "none":
        ap.error("--act none times hipgn alone: the peers' forward is GroupNorm + SiLU (add --peers none)")
    shapes, fp32_subset = load_shapes("all" if a.rows or a.shape else a.shapes)
    if a.shape:
        if a.rows:
            ap.error("--rows names rows of the suite and the odd shapes; --shape times shapes of its own")
        probes = [parse_shape(s, shapes) for s in a.shape]
        shapes = dict(probes)
        if len(shapes) < len(probes):
            ap.error("--shape: two shapes of one name")
        fp32_subset = set(shapes)
    problems = plan(shapes, fp32_subset, a.dtypes.split(","), a.layouts.split(","), a.ops.split(","),
                    read_rows(a.rows) if a.rows else None, a.only.split(",") if a.only and not a.shape else None)

    import torch
    torch.backends.cudnn.benchmark = False
    raise_recompile_limits(torch)
    t_start = time.time()
    hg = Hipgn(a.lib, torch, a.act)
    apex = None
    if a.apex and a.peers != "none":
        import apex_peer
        t0 = time.time()
        apex = apex_peer.Apex(apex_peer.load(a.apex, a.apex_build))
        print(f"# Apex's group_norm_cuda loaded in {time.time() - t0:.0f} s", flush=True)
    props = torch.cuda.get_device_properties(0)
    l2 = props.L2_cache_size
    compile_dtypes = set(a.compile_dtypes.split(","))

    if a.peers == "all" and a.warm_procs > 0:
        todo = [p[:4] for p in problems if p[2] in compile_dtypes]
        t0 = time.time()
        ctx = mp.get_context("spawn")
        with ctx.Pool(a.warm_procs) as pool:
            for _ in pool.imap_unordered(warm_compile_worker, todo):
                pass
        print(f"# compiled {len(todo)} problems ahead in {time.time() - t0:.0f} s", flush=True)

    rows = []
    for name, (n, c, spatial, g), dt, layout, ops in problems:
        if time.time() - t_start > a.budget_s:
            print(f"# budget reached; stopping before {name}", flush=True)
            break
        dtype = getattr(torch, dt)
        elems = n * c * math.prod(spatial)
        bytes_ = elems * dtype.itemsize
        backward = "bwd" in ops
        k = set_count(l2, bytes_, backward)
        sets = [make_set(torch, n, c, spatial, g, dtype, layout, backward) for _ in range(k)]
        copy = lambda s: s["y"].copy_(s["x"])
        if not rows:  # the first problem's first copy graph times ~0.3 us short (bench/NOTES.md): discarded
            timings(torch, copy, sets, sets[0])
        # the median of three graphs: one graph's time of the same copy on the same sets spread up
        # to 5% (bench/copy_spread_probe.py; bench/NOTES.md, "The copy's spread"), and % of copy
        # divides by it
        copy_cold = statistics.median(graph_time_us(torch, copy, sets) for _ in range(3))
        copy_warm = graph_time_us(torch, copy, [sets[0]] * len(sets))
        for op in ops:
            p = hg.problem(op, n, c, spatial, g, dtype, layout)
            row = dict(name=name, shape=[n, c, *spatial, g], dtype=str(dt), layout=layout, op=op, bytes=bytes_,
                       floor_bytes=bytes_ * (2 if op == "fwd" else 3), copy=copy_cold, copy_warm=copy_warm, sets=k)
            run = hg.fwd if op == "fwd" else hg.bwd
            row["hipgn_name"] = hg.chosen(p)
            status = 0
            if op == "bwd":
                for s in sets:  # the forward's statistics
                    status = status or hg.fwd(hg.problem("fwd", n, c, spatial, g, dtype, layout), s)
            status = status or run(p, sets[0])
            if status != 0:
                row["error"] = hg.error()
                print(f"{name} {dt} {layout} {op}: hipgn failed: {row['error']}", flush=True)
                rows.append(row)
                continue
            row["hipgn"], row["hipgn_warm"] = timings(torch, lambda s: run(p, s), sets, sets[0])
            if a.best:
                best = (row["hipgn"], row["hipgn_name"])
                times = {row["hipgn_name"]: row["hipgn"]}  # every supporting instance: the rules' evidence
                for inst in hg.bucket(op, dtype, layout):
                    if inst == row["hipgn_name"] or run(p, sets[0], inst) != 0:
                        continue
                    t = graph_time_us(torch, lambda s: run(p, s, inst), sets)
                    times[inst] = t
                    best = min(best, (t, inst))
                row["hipgn_best"], row["hipgn_best_name"] = best
                row["instances"] = times
            if a.peers != "none":
                prepare_step_sets(torch, sets) if op == "bwd" else None
                for peer in (["eager", "compile"] if a.peers == "all" and dt in compile_dtypes else ["eager"]):
                    fwd, step = peer_fns(torch, g, peer == "compile")
                    try:
                        f_cold, f_warm = timings(torch, fwd, sets, sets[0])
                        if op == "fwd":
                            row[peer], row[peer + "_warm"] = f_cold, f_warm
                        else:
                            s_cold, s_warm = timings(torch, step, sets, sets[0])
                            row[peer], row[peer + "_warm"] = s_cold - f_cold, s_warm - f_warm
                    except Exception as e:  # a peer that cannot run a shape is recorded, not fatal
                        row[peer + "_error"] = repr(e)[:200]
                if apex and apex.supports(c, spatial, g, layout):
                    time_apex(torch, apex, row, op, (c, spatial, g), sets)
            rows.append(row)
            write_json(a.out, rows, props, a.act)  # after every problem: a timeout keeps what was measured
            pct = lambda t: 100.0 * row["copy"] * (row["floor_bytes"] / (2 * bytes_)) / t
            peers = " ".join(f"{k} {row[k]:.1f}us ({pct(row[k]):.0f}%)" for k in PEERS if k in row)
            print(f"{name:28s} {dt:8s} {layout} {op}: copy {copy_cold:7.1f}us hipgn {row['hipgn']:7.1f}us "
                  f"({pct(row['hipgn']):3.0f}%) {row['hipgn_name']} {peers}", flush=True)
        del sets
        torch.cuda.empty_cache()

    out = pathlib.Path(a.out)
    meta = write_json(a.out, rows, props, a.act)
    md = summarize(rows, meta)
    (out / "latest.md").write_text(md)
    print(md)
    try:
        plot(rows, meta, out / "latest.png")
    except Exception as e:
        print(f"# plot skipped: {e!r}")


def write_json(out_dir, rows, props, act):
    import torch
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    meta = dict(date=datetime.date.today().isoformat(), gpu=props.name, l2_bytes=props.L2_cache_size,
                torch=torch.__version__, act=act,
                method="CUDA graph replay over rotating buffer sets (>3x L2), device events, median of 15 replays")
    (out / "latest.json").write_text(json.dumps(dict(meta=meta, rows=rows), indent=1) + "\n")
    return meta


def pct_of_copy(row, key):
    t = row.get(key)
    if not t or t <= 0:
        return None
    return 100.0 * row["copy"] * (row["floor_bytes"] / (2 * row["bytes"])) / t


def band(b):
    return "< 1 MB" if b < 2**20 else ("1-64 MB" if b < 64 * 2**20 else ">= 64 MB")


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def summarize(rows, meta):
    lines = [f"# hipgn benchmark: {meta['gpu']}, {meta['date']}", "", meta["method"] + ".", "",
             "Geometric mean of % of the same-size copy's throughput at the floor (forward: x + y; "
             "backward: x + dy + dx), L2-cold; \"-\" where some rows of the band lack the column (best: "
             "runs with --best, every instance timed).", "",
             "| op | dtype | layout | band | n | hipgn | best | eager | compile | hipgn / compile |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    keys = sorted({(r["op"], r["dtype"], r["layout"], band(r["bytes"])) for r in rows if "hipgn" in r})
    for op, dt, layout, b in keys:
        sel = [r for r in rows if (r["op"], r["dtype"], r["layout"], band(r["bytes"])) == (op, dt, layout, b) and "hipgn" in r]
        # a column's geomean over only the rows that have it would compare different shapes with
        # the hipgn column (merged runs: --best rows beside rows without): "-" unless all have it
        g = {k: f"{geomean([pct_of_copy(r, k) for r in sel]):.0f}" if all(r.get(k) for r in sel) else "-"
             for k in ("hipgn", "hipgn_best", "eager", "compile")}
        ratio = geomean([r["compile"] / r["hipgn"] for r in sel if r.get("compile")])
        lines.append(f"| {op} | {dt} | {layout} | {b} | {len(sel)} | {g['hipgn']} | {g['hipgn_best']} | "
                     f"{g['eager']} | {g['compile']} | {ratio:.2f}x |")
    timed = [r for r in rows if "hipgn" in r]
    with_c = [r for r in timed if r.get("compile")]
    if with_c:
        slower = [r for r in with_c if r["hipgn"] > r["compile"]]
        lines += ["", f"hipgn vs torch.compile: {geomean([r['compile'] / r['hipgn'] for r in with_c]):.2f}x geomean "
                      f"over {len(with_c)} problems; slower on {len(slower)}: " +
                  ", ".join(f"{r['name']} {r['dtype']} {r['layout']} {r['op']}" for r in slower[:20])]
    lines += apex_summary(timed)
    big = [r for r in timed if r["bytes"] >= 4 * 2**20]
    if big:
        worst = min(big, key=lambda r: pct_of_copy(r, "hipgn"))
        lines.append(f"worst shape of 4 MB or more: {worst['name']} {worst['dtype']} {worst['layout']} {worst['op']} "
                     f"at {pct_of_copy(worst, 'hipgn'):.0f}% of copy ({worst['hipgn_name']})")
    failed = [r for r in rows if "error" in r]
    if failed:
        lines.append(f"hipgn failed on {len(failed)}: " + "; ".join(f"{r['name']} {r['layout']} {r['op']}: {r['error']}" for r in failed[:5]))
    lines += ["", "| shape | dtype | layout | op | MB | copy us | hipgn us | %copy | best us | eager us | compile us | apex us | instance |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in timed:
        f = lambda k: f"{r[k]:.1f}" if r.get(k) else "-"
        lines.append(f"| {r['name']} | {r['dtype']} | {r['layout']} | {r['op']} | {r['bytes'] / 2**20:.1f} | "
                     f"{f('copy')} | {f('hipgn')} | {pct_of_copy(r, 'hipgn'):.0f} | {f('hipgn_best')} | {f('eager')} | "
                     f"{f('compile')} | {f('apex')} | {r['hipgn_name']} |")
    return "\n".join(lines) + "\n"


def apex_summary(timed):
    """Apex runs a subset (channels-last 4-D, G 16 or 32, its channel counts): its own table,
    hipgn's geomean taken over the same rows."""
    with_a = [r for r in timed if r.get("apex")]
    if not with_a:
        return []
    lines = ["", "Apex's NHWC GroupNorm, on the rows it supports (geomean % of copy, L2-cold; hipgn on the same rows):", "",
             "| op | dtype | band | n | hipgn | apex | hipgn / apex |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for op, dt, b in sorted({(r["op"], r["dtype"], band(r["bytes"])) for r in with_a}):
        sel = [r for r in with_a if (r["op"], r["dtype"], band(r["bytes"])) == (op, dt, b)]
        lines.append(f"| {op} | {dt} | {b} | {len(sel)} | {geomean([pct_of_copy(r, 'hipgn') for r in sel]):.0f} | "
                     f"{geomean([pct_of_copy(r, 'apex') for r in sel]):.0f} | "
                     f"{geomean([r['apex'] / r['hipgn'] for r in sel]):.2f}x |")
    slower = [r for r in with_a if r["hipgn"] > r["apex"]]
    lines += ["", f"hipgn vs Apex: {geomean([r['apex'] / r['hipgn'] for r in with_a]):.2f}x geomean over {len(with_a)} "
                  f"problems; slower on {len(slower)}" + (": " if slower else "") +
              ", ".join(f"{r['name']} {r['dtype']} {r['op']}" for r in slower[:20])]
    return lines


def plot(rows, meta, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels = sorted({(r["op"], r["layout"]) for r in rows if "hipgn" in r})
    fig, axes = plt.subplots(len(panels), 1, figsize=(18, 4.5 * len(panels)), squeeze=False)
    for ax, (op, layout) in zip(axes[:, 0], panels):
        sel = [r for r in rows if r["op"] == op and r["layout"] == layout and "hipgn" in r and r["dtype"] == "float16"]
        sel.sort(key=lambda r: r["bytes"])
        xs = range(len(sel))
        for key, style in (("hipgn", "o-"), ("compile", "s--"), ("eager", "^:"), ("apex", "d-.")):
            ax.plot(xs, [pct_of_copy(r, key) or float("nan") for r in sel], style, label=key)
        ax.set_xticks(list(xs))
        ax.set_xticklabels([r["name"] for r in sel], rotation=75, fontsize=7)
        ax.set_ylabel("% of copy")
        ax.set_ylim(0, 110)
        ax.grid(alpha=0.3)
        ax.set_title(f"{op} {layout} fp16 (L2-cold), {meta['gpu']} {meta['date']}")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=80)


if __name__ == "__main__":
    main()
