#!/usr/bin/env bash
# On the GPU machine: where a stream or resident kernel's (or a channels-last onchip forward's or
# backward's) time goes, phase by phase.
# Builds the profiler with HIPGN_PHASE_TIMES (primitives/phase_clock.hpp: clock64() at each
# phase's end and each grid barrier's, printed by a few workgroups) in $BUILD with PRESET
# (default minimal, a minute), PHASE_DEFINES (more macros for the CUDA code: an experiment's) and
# PHASE_CMAKE_ARGS (e.g. "-DHIPGN_OPS=fwd -DHIPGN_LAYOUTS=cf -DHIPGN_DTYPES=f16" with
# PRESET=default: every configuration of those buckets), runs each probe of PROBES
# ("instance:n:c:spatial:g:dtype:layout", as bench/ncu_stalls.sh) a few times (ITERS, default
# 5, each after the profiler's L2 flush; the verification launch before them is left out), and
# prints, per interval, the cycles' min, median and max over the
# workgroups and launches that printed, and the median in microseconds at the SM's boost clock
# (nvidia-smi's clocks.max.sm: the clock under load; the current clock reads idle before the run).
# The intervals (each kernel's PhaseClock laps; a lap inside the item loop sums over the
# workgroup's items) are named in the summary. dtype as the profiler spells it (f16, bf16, f32),
# e.g. PROBES="gn_fwd_f16_f16_cl_swish_stream_b512_v8_e1:2:320:128x128:32:f16:cl"; ACT (default swish)
# the activation the profiler asks for, with the instance of it; PROFILER_ARGS more of its
# options (--no-flush: launches back to back, no L2 flush between them). Each workgroup's start and end
# on the GPU's global timer give the launch's skew (start and end spread, first start to last end).
# Logs under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/hipgn-out}
mkdir -p "$OUT"
BUILD=${BUILD:-/tmp/build-phase}
cmake -S . -B "$BUILD" -G Ninja -DHIPGN_PRESET=${PRESET:-minimal} ${PHASE_CMAKE_ARGS:-} -DCMAKE_CUDA_FLAGS="-DHIPGN_PHASE_TIMES ${PHASE_DEFINES:-}" \
  -DCMAKE_PREFIX_PATH="$PWD/.deps/root/usr" > "$OUT/phase_configure.log" 2>&1 || { tail -20 "$OUT/phase_configure.log"; exit 1; }
cmake --build "$BUILD" -j 16 --target hipgn_profiler > "$OUT/phase_build.log" 2>&1 ||
  { grep -E -A5 "error|FAILED" "$OUT/phase_build.log" | head -30; exit 1; }
mhz=$(nvidia-smi --query-gpu=clocks.max.sm --format=csv,noheader,nounits | head -1)
for probe in ${PROBES}; do
  IFS=: read -r inst n c sp g dt lay <<< "$probe"
  op=$(echo "$inst" | cut -d_ -f2)
  "$BUILD/profiler/hipgn_profiler" --instance "$inst" --op "$op" -n "$n" -c "$c" -s "$sp" -g "$g" --dtype "$dt" --layout "$lay" \
    --act "${ACT:-swish}" --warmup 0 --iters "${ITERS:-5}" ${PROFILER_ARGS:-} > "$OUT/phase_$inst.txt" 2>&1
  echo "== $inst n $n c $c spatial $sp g $g $lay ($op), SM boost clock $mhz MHz"
  python3 - "$OUT/phase_$inst.txt" "$mhz" "${ITERS:-5}" <<'PY'
import statistics, sys
names = {
    "fwd_stream_cl": ["phase 1 loads", "phase 1 reductions", "barrier 1", "merge", "barrier 2", "phase 3 scale, shift", "phase 3 rows"],
    "fwd_stream_cf": ["phase 1 sums", "phase 1 reductions", "barrier", "phase 2 merges", "phase 2 writes", "phase 1 setup", "phase 2 setup"],
    "fwd_resident_cf": ["loads", "block stats", "exchange", "scale, shift", "stores issued", "end barrier", "start"],
    "fwd_resident_cl": ["loads", "thread stats", "to groups (sets, groups)", "exchange", "scale, shift", "stores issued", "start", "to groups (lanes)"],
    "fwd_onchip_cl": ["loads", "mean", "squares", "parts' exchange", "stores issued"],
    "bwd_stream_cl": ["phase 1 loads", "phase 1 reductions", "barrier", "phase 2 constants", "phase 2 rows", "dgamma, dbeta",
                      "phase 2 channels", "phase 2 group sums"],
    "bwd_onchip_cl": ["loads", "thread sums", "channel sums", "block sum", "parts' exchange", "dx stores issued"],
}
lines = [l for l in open(sys.argv[1]) if l.startswith("phase_times ")]
if not lines:
    print("no phase_times lines: was the instance a stream kernel, a resident forward or a channels-last onchip kernel, and the build made with HIPGN_PHASE_TIMES? The profiler said:")
    print("".join(open(sys.argv[1]).readlines()[-8:]))
    sys.exit()
kernel = lines[0].split()[1]
# each launch prints a line from each of the same workgroups, launch after launch: keep the timed
# launches, the last ITERS, which the profiler runs after flushing the L2 (its verification
# launch before them reads x from a warm L2)
per_launch = len({l.split(":", 1)[0] for l in lines})
lines = lines[-int(sys.argv[3]) * per_launch:]
rows = [l.split(":", 1)[1].split() for l in lines]
mhz = float(sys.argv[2])
if len(rows[0]) >= 10:  # each workgroup's start and end (global timer, ns): the launch's skew
    launches = [rows[k:k + per_launch] for k in range(0, len(rows), per_launch)]
    for name, col in (("start", 8), ("end", 9)):
        spread = [max(int(r[col]) for r in L) - min(int(r[col]) for r in L) for L in launches]
        print(f"  {name + ' spread':22s} {statistics.median(spread) / 1000:.2f} us median over {len(launches)} launches")
    span = [max(int(r[9]) for r in L) - min(int(r[8]) for r in L) for L in launches]
    print(f"  {'first start-last end':22s} {statistics.median(span) / 1000:.2f} us median")
for i, name in enumerate(names.get(kernel, [f"interval {k + 1}" for k in range(8)])):
    v = [int(r[i]) for r in rows if int(r[i]) >= 0]
    if v:
        m = statistics.median(v)
        print(f"  {name:22s} cycles min {min(v)}, median {m:.0f}, max {max(v)} ({m / mhz:.2f} us median), {len(v)} lines")
PY
done
