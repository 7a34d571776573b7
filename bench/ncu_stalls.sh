#!/usr/bin/env bash
# On the GPU machine: where one instance's warps wait. Nsight Compute's warp-state sections and
# its per-SASS-instruction stall sampling for each probe (PROBES: "instance:n:c:spatial:g:dtype:layout";
# the op is the instance name's), the 25 instructions with the most samples printed. Needs a build
# in $BUILD. Logs under $OUT. NCU_ARGS go to the sampling run: a kernel of a few microseconds
# wants `--warp-sampling-interval 0` (a sample every 32 cycles), else it leaves ~150 samples.
set -uo pipefail
OUT=${OUT:-/tmp/hipgn-out}
BUILD=${BUILD:-build-gpu}
P=$BUILD/profiler/hipgn_profiler
for probe in ${PROBES}; do
  IFS=: read -r inst n c sp g dt lay <<< "$probe"
  op=$(echo "$inst" | cut -d_ -f2) fam=$(echo "$inst" | cut -d_ -f7)
  args=(--op $op --instance $inst -n $n -c $c -s $sp -g $g --dtype $dt --layout $lay --act swish --iters 2 --warmup 1)
  ncu --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy -k regex:$fam \
      --launch-skip 2 --launch-count 1 $P "${args[@]}" > "$OUT/ncu_$inst.txt" 2>&1
  echo "== $inst $n $c $sp $g $lay"
  grep -E "Duration|DRAM Throughput|Achieved Occupancy|Grid Size|Cluster Size|Warp Cycles Per Issued|Registers Per" "$OUT/ncu_$inst.txt" | head -12
  ncu --section SourceCounters --section WarpStateStats ${NCU_ARGS:-} -k regex:$fam --launch-skip 2 --launch-count 1 \
      --page source --print-source sass --csv $P "${args[@]}" > "$OUT/src_$inst.csv" 2>/dev/null
  python3 - "$OUT/src_$inst.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr = next((i for i, r in enumerate(rows) if any("Source" == c or c.startswith("Address") for c in r)), None)
if hdr is None:
    print("no source table"); sys.exit()
h = rows[hdr]
def col(name):
    for i, c in enumerate(h):
        if c.startswith(name): return i
    return None
ci, cs = col("Source"), col("Warp Stall Sampling (All")
if cs is None: cs = col("Warp Stall Sampling")
data = [r for r in rows[hdr + 1:] if len(r) > max(ci, cs)]
tot = sum(float(r[cs] or 0) for r in data) or 1
print(f"instructions {len(data)}, stall samples {tot:.0f}")
for i, r in sorted(enumerate(data), key=lambda x: -float(x[1][cs] or 0))[:25]:
    print(f"{100 * float(r[cs] or 0) / tot:5.1f}%  #{i:4d}  {r[ci][:110]}")
PY
done
