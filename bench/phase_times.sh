#!/usr/bin/env bash
# On the GPU machine: where a stream kernel's time goes, phase by phase. Builds the profiler with
# HIPGN_PHASE_TIMES (primitives/phase_clock.hpp: clock64() at each phase's end and each grid
# barrier's, printed by a few workgroups) in $BUILD with PRESET (default minimal, a minute), runs
# each probe of PROBES ("instance:n:c:spatial:g:dtype:layout", as bench/ncu_stalls.sh) a few
# times, and prints, per interval between marks, the cycles' min, median and max over the
# workgroups that printed, and the median in microseconds at the SM clock nvidia-smi reports.
# The marks: fwd_stream_cl phase 1 | barrier | merge | barrier | phase 3; fwd_stream_cf phase 1
# | barrier | phase 2; bwd_stream_cl phase 1 | barrier | phase 2 | barrier | phase 3. Logs under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/hipgn-out}
mkdir -p "$OUT"
BUILD=${BUILD:-/tmp/build-phase}
cmake -S . -B "$BUILD" -G Ninja -DHIPGN_PRESET=${PRESET:-minimal} -DCMAKE_CUDA_FLAGS=-DHIPGN_PHASE_TIMES \
  -DCMAKE_PREFIX_PATH="$PWD/.deps/root/usr" > "$OUT/phase_configure.log" 2>&1 || { tail -20 "$OUT/phase_configure.log"; exit 1; }
cmake --build "$BUILD" -j 16 --target hipgn_profiler > "$OUT/phase_build.log" 2>&1 ||
  { grep -E -A5 "error|FAILED" "$OUT/phase_build.log" | head -30; exit 1; }
mhz=$(nvidia-smi --query-gpu=clocks.sm --format=csv,noheader,nounits | head -1)
for probe in ${PROBES}; do
  IFS=: read -r inst n c sp g dt lay <<< "$probe"
  op=$(echo "$inst" | cut -d_ -f2)
  "$BUILD/profiler/hipgn_profiler" --instance "$inst" -n "$n" -c "$c" -s "$sp" -g "$g" --dtype "$dt" --layout "$lay" \
    --act swish --warmup 2 --iters 3 > "$OUT/phase_$inst.txt" 2>&1
  echo "== $inst n $n c $c spatial $sp g $g $lay ($op), SM clock $mhz MHz"
  python3 - "$OUT/phase_$inst.txt" "$mhz" <<'PY'
import statistics, sys
rows = [l.split(":", 1)[1].split() for l in open(sys.argv[1]) if l.startswith("phase_times ")]
if not rows:
    print("no phase_times lines: was the instance a stream kernel, and the build made with HIPGN_PHASE_TIMES?")
    sys.exit()
mhz = float(sys.argv[2])
for i in range(5):
    v = [int(r[i]) for r in rows if int(r[i]) >= 0]
    if v:
        m = statistics.median(v)
        print(f"  interval {i + 1}: cycles min {min(v)}, median {m:.0f}, max {max(v)} ({m / mhz:.2f} us median), {len(v)} lines")
PY
done
