#!/usr/bin/env bash
# On the GPU machine: an A/B of two source trees in one session, for changes no environment
# variable can switch off (bench/ab_round.sh is for those that can): A, this working tree; B,
# another tree at $B_TREE (default ab_old/, git-ignored). Make B on the CPU machine and carry it:
#     rm -rf ab_old && mkdir ab_old && git archive HEAD | tar -x -C ab_old
#     device run, carry [".deps", "ab_old"]:  TEST_FILTER=... BENCH_ARGS=... bash bench/ab_trees.sh
# Or two variants of this one tree, told apart by macros (B_TREE=. and A_DEFINES="-DHIPGN_EXP_X"
# beside an empty B_DEFINES): each side's CUDA code compiles with its *_DEFINES (CMAKE_CUDA_FLAGS,
# set on every call, so a warm machine's cache keeps no earlier call's flags).
# Both build with PRESET (default `minimal`: a minute where the default preset takes two each,
# and it has the generic and one instance a family) and AB_CMAKE_ARGS (say, `-DHIPGN_OPS=fwd
# -DHIPGN_LAYOUTS=cf -DHIPGN_DTYPES=f16` with PRESET=default: every configuration of a few
# buckets; a backward's rows need the forward built too, for its statistics: -DHIPGN_OPS="fwd;bwd";
# and on a warm machine the build folders keep their CMake cache, so an option left out keeps
# the last call's value: name every option you narrow), in parallel; A's instance tests of
# TEST_FILTER run; then bench.py with BENCH_ARGS, B then A, ROUNDS times (run-to-run spread
# shows between rounds), each round's comparison printed by bench/ab_compare.py (with --best in
# BENCH_ARGS, AB_FAMILY's instances one by one: default resident; AB_CONTROL, a regular
# expression over the dispatched instance, names the rows the change does not touch, whose
# geomean is the run's drift: ab_compare.py --control). Logs under $OUT, in one archive
# (ab_logs.tar.xz).
set -uo pipefail
OUT=${OUT:-/tmp/hipgn-out}
mkdir -p "$OUT"
R=$PWD
B_TREE=${B_TREE:-$R/ab_old}
[ -f "$B_TREE/CMakeLists.txt" ] || { echo "ab_trees: no tree at $B_TREE (see the header)"; exit 2; }
B_TREE=$(cd "$B_TREE" && pwd)  # absolute, as CMake's cache names its source
for side in a b; do
  src=$R; [ $side = b ] && src=$B_TREE
  # a warm machine keeps the build folders: one configured from another tree (an earlier call's
  # B_TREE) makes CMake refuse the source, so it starts afresh
  cache=/tmp/ab_$side/CMakeCache.txt
  [ -f "$cache" ] && ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$src" "$cache" && rm -rf /tmp/ab_$side
  defines=${A_DEFINES:-}; [ $side = b ] && defines=${B_DEFINES:-}
  cmake -S "$src" -B /tmp/ab_$side -G Ninja -DHIPGN_PRESET=${PRESET:-minimal} ${AB_CMAKE_ARGS:-} -DCMAKE_PREFIX_PATH="$R/.deps/root/usr" \
    -DCMAKE_CUDA_FLAGS="$defines" \
    > "$OUT/configure_$side.log" 2>&1 || { tail -20 "$OUT/configure_$side.log"; exit 1; }
done
for side in a b; do
  (cmake --build /tmp/ab_$side -j 8 > "$OUT/build_$side.log" 2>&1 || { grep -E -A5 "error|FAILED" "$OUT/build_$side.log" | head -30; exit 1; }) &
done
wait
for side in a b; do [ -f /tmp/ab_$side/runtime/libhipgn.so ] || { echo "ab_trees: build $side failed"; exit 1; }; done
# a variant that spills where B does not is timed with its spills (scripts/check_spills.py --against)
python3 "$R/scripts/check_spills.py" "$OUT/build_a.log" --against "$OUT/build_b.log" | tail -5
if [ -n "${TEST_FILTER:-}" ]; then
  /tmp/ab_a/tests/hipgn_tests --gtest_filter="$TEST_FILTER" > "$OUT/tests_a.log" 2>&1
  echo "tests (A): rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests_a.log" | tr '\n' ' ')"
  grep -E "^\[  FAILED" "$OUT/tests_a.log" | head -20
fi
if [ -n "${BENCH_ARGS:-}" ]; then
  for round in $(seq 1 ${ROUNDS:-2}); do
    for side in b a; do
      mkdir -p /tmp/ab_res_$side$round
      PYTHONUNBUFFERED=1 timeout ${BENCH_TIMEOUT:-200} python3 bench/bench.py --lib /tmp/ab_$side/runtime/libhipgn.so \
        --out /tmp/ab_res_$side$round $BENCH_ARGS > "$OUT/bench_$side$round.log" 2>&1 || tail -5 "$OUT/bench_$side$round.log"
    done
    python3 bench/ab_compare.py /tmp/ab_res_a$round/latest.json /tmp/ab_res_b$round/latest.json --family ${AB_FAMILY:-resident} \
      ${AB_CONTROL:+--control "$AB_CONTROL"}
  done
  cp /tmp/ab_res_a1/latest.json "$OUT/a1.json"
  cp /tmp/ab_res_b1/latest.json "$OUT/b1.json"
fi
# The device tool brings back at most 8 files from $OUT: the logs go back as one archive, so
# that a caller's own files under $OUT come back beside them.
(cd "$OUT" && logs=$(ls configure_?.log build_?.log tests_a.log bench_??.log 2> /dev/null) &&
  [ -n "$logs" ] && tar -cJf ab_logs.tar.xz $logs && rm -f $logs)
