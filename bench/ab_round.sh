#!/usr/bin/env bash
# On the GPU machine: one A/B round for a launch-path choice that an environment variable turns
# off (AB_ENV, e.g. HIPGN_CLUSTERS=0): the default preset built in build-gpu/ (kept on a warm
# machine), the instance tests of TEST_FILTER run both ways, then bench.py with BENCH_ARGS both
# ways (B first, so that A's numbers are taken on a machine as warm). Logs under $OUT: tests_a.log,
# tests_b.log, a/ and b/ (bench.py's latest.*), bench_a.log, bench_b.log.
set -uo pipefail
OUT=${OUT:-/tmp/hipgn-out}
mkdir -p "$OUT"
BUILD=build-gpu
cmake -S . -B $BUILD -G Ninja -DHIPGN_PRESET=${PRESET:-default} -DCMAKE_PREFIX_PATH="$PWD/.deps/root/usr" \
  > "$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
start=$(date +%s)
cmake --build $BUILD -j 16 > "$OUT/build.log" 2>&1 || { grep -E -A5 "error|FAILED" "$OUT/build.log" | head -40; exit 1; }
echo "build: $(( $(date +%s) - start )) s, $(grep -c 'spill' "$OUT/build.log") spill warnings"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
if [ -n "${TEST_FILTER:-}" ]; then
  $BUILD/tests/hipgn_tests --gtest_filter="$TEST_FILTER" > "$OUT/tests_a.log" 2>&1
  echo "tests (A): rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests_a.log" | tr '\n' ' ')"
  env ${AB_ENV:-HIPGN_AB=1} $BUILD/tests/hipgn_tests --gtest_filter="$TEST_FILTER" > "$OUT/tests_b.log" 2>&1
  echo "tests (B: ${AB_ENV:-}): rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests_b.log" | tr '\n' ' ')"
  grep -E "^\[  FAILED" "$OUT"/tests_?.log | head -20
fi
if [ -n "${BENCH_ARGS:-}" ]; then
  for side in b a; do
    envs=""; [ $side = b ] && envs=${AB_ENV:-HIPGN_AB=1}
    mkdir -p "$OUT/$side"
    env $envs PYTHONUNBUFFERED=1 timeout ${BENCH_TIMEOUT:-200} python3 bench/bench.py --lib $BUILD/runtime/libhipgn.so \
      --out "$OUT/$side" $BENCH_ARGS > "$OUT/bench_$side.log" 2>&1
    echo "bench ($side): rc=$?"
  done
  python3 bench/ab_compare.py "$OUT/a/latest.json" "$OUT/b/latest.json"
fi
