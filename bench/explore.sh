#!/usr/bin/env bash
# On the GPU machine: a quick build of a subset (BUILD_ARGS) and the profiler over a few
# shapes (every supporting instance verified against the CPU reference and timed), then
# bench.py over the shapes in BENCH_ONLY. Logs under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/hipgn-out}
mkdir -p "$OUT"
BUILD=${BUILD:-/tmp/build-explore}
cmake -S . -B $BUILD -G Ninja -DCMAKE_PREFIX_PATH="$PWD/.deps/root/usr" -DHIPGN_BUILD_TESTS=OFF ${BUILD_ARGS:-} \
  > "$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
start=$(date +%s)
cmake --build $BUILD -j 16 > "$OUT/build.log" 2>&1 || { grep -E "error|FAILED" "$OUT/build.log" | head -30; exit 1; }
echo "build: $(( $(date +%s) - start )) s, $(grep -c 'spill' "$OUT/build.log") spill warnings"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
P=$BUILD/profiler/hipgn_profiler
for s in ${PROFILE_SHAPES:-}; do
  IFS=: read -r n c sp g dt lay op <<< "$s"
  log="$OUT/prof_${n}_${c}_${sp}_${g}_${dt}_${lay}_${op}.txt"
  $P --op $op -n $n -c $c -s $sp -g $g --dtype $dt --layout $lay --act swish --iters 20 --warmup 3 > "$log" 2>&1
  echo "== $s: copy $(grep '^copy:' "$log" | awk '{print $2}')us wrong=$(grep -c ' NO ' "$log")"
  grep -E "resident|heuristic|fastest" "$log" | awk '{printf "   %-50s %s %8s %6s %s %s %s\n", $1, $2, $3, $5, $6, $7, $8}'
done
if [ -n "${BENCH_ARGS:-}" ]; then
  PYTHONUNBUFFERED=1 timeout ${BENCH_TIMEOUT:-300} python3 bench/bench.py --lib $BUILD/runtime/libhipgn.so --out "$OUT" $BENCH_ARGS \
    > "$OUT/bench.log" 2>&1; echo "bench rc=$?"; grep -vE "^\|" "$OUT/bench.log" | tail -60
fi
