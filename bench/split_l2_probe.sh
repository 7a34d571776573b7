#!/usr/bin/env bash
# On the GPU machine: where the channels-first split backward's time goes, kernel by kernel:
# Nsight Compute in application replay with the caches left alone (each pass a fresh run, so the
# dx kernel sees the L2 that the sums kernel left), for PROBES ("instance:n:c:spatial:g:dtype:
# layout"): each kernel's duration, DRAM bytes read and written, L2 hit rate and issue activity.
# Builds the profiler in $BUILD with PRESET (default `default`) and PROBE_CMAKE_ARGS (say,
# -DHIPGN_OPS=bwd -DHIPGN_LAYOUTS=cf -DHIPGN_DTYPES=f16); KREGEX picks the kernels (default
# split|fold; any multi-kernel instance's names work). Logs under $OUT. REPLAY=kernel replays each
# kernel alone (the caches as ncu's save and restore of memory leave them, not as the kernel
# before left them): application replay reruns the profiler, its float64 reference included,
# once a pass, which on large tensors outruns a device call (a 335 MB forward and a 128 MB
# backward each past 90 s with 13 metrics on an H200; bench/NOTES.md, "Where the seventh
# session of 2026-11-28 ended").
set -uo pipefail
OUT=${OUT:-/tmp/hipgn-out}
BUILD=${BUILD:-/tmp/build-probe}
mkdir -p "$OUT"
cmake -S . -B "$BUILD" -G Ninja -DHIPGN_PRESET=${PRESET:-default} ${PROBE_CMAKE_ARGS:-} \
  -DCMAKE_PREFIX_PATH="$PWD/.deps/root/usr" > "$OUT/probe_configure.log" 2>&1 || { tail -20 "$OUT/probe_configure.log"; exit 1; }
cmake --build "$BUILD" -j 16 --target hipgn_profiler > "$OUT/probe_build.log" 2>&1 ||
  { grep -E -A5 "error|FAILED" "$OUT/probe_build.log" | head -30; exit 1; }
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size
for probe in ${PROBES}; do
  IFS=: read -r inst n c sp g dt lay <<< "$probe"
  op=$(echo "$inst" | cut -d_ -f2)
  P="$BUILD/profiler/hipgn_profiler --instance $inst --op $op -n $n -c $c -s $sp -g $g --dtype $dt --layout $lay --act swish"
  echo "== $inst n $n c $c spatial $sp g $g $lay"
  $P --warmup 2 --iters 20 2>&1 | grep -E "^copy|$inst" | head -3
  ncu --replay-mode ${REPLAY:-application} --cache-control none --clock-control none --print-units base --metrics $M -k "regex:${KREGEX:-split|fold}" \
    --csv $P --warmup 0 --iters 2 > "$OUT/ncu_$inst.$n.$c.csv" 2> "$OUT/ncu_$inst.$n.$c.err"
  python3 - "$OUT/ncu_$inst.$n.$c.csv" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows: print("no ncu rows"); sys.exit()
h = rows[0]; idx = {k: h.index(k) for k in ("ID", "Kernel Name", "Metric Name", "Metric Value")}
k = collections.OrderedDict()
for r in rows[1:]:
    key = (r[idx["ID"]], r[idx["Kernel Name"]].split("<")[0].split("(")[0][-28:])
    k.setdefault(key, {})[r[idx["Metric Name"]]] = r[idx["Metric Value"]]
for (i, name), m in k.items():
    f = lambda s: float(m.get(s, "nan").replace(",", ""))
    print(f"{i:>3} {name:28s} {f('gpu__time_duration.sum')/1e3:8.2f} us  rd {f('dram__bytes_read.sum')/1e6:8.1f} MB"
          f"  wr {f('dram__bytes_write.sum')/1e6:8.1f} MB  L2hit {f('lts__t_sector_hit_rate.pct'):5.1f}%"
          f"  issue {f('smsp__issue_active.avg.pct_of_peak_sustained_active'):5.1f}%  warps {f('sm__warps_active.avg.pct_of_peak_sustained_active'):5.1f}%  grid {f('launch__grid_size'):.0f}")
PY
done
