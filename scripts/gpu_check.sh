#!/usr/bin/env bash
# On the GPU machine (the device tool): configure, build, run the whole test suite and profile
# a few benchmark shapes, logging under $OUT. Header-only Debian packages the machine lacks
# (CLI11, nlohmann-json) travel in .deps/ (scripts/fetch_deps.sh).
set -uo pipefail
OUT=${OUT:-/tmp/hipgn-out}
mkdir -p "$OUT"
PRESET=${PRESET:-default}
BUILD=build-gpu
cmake -S . -B $BUILD -G Ninja -DHIPGN_PRESET=$PRESET -DCMAKE_PREFIX_PATH="$PWD/.deps/root/usr" \
  > "$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
start=$(date +%s)
cmake --build $BUILD -j 16 > "$OUT/build.log" 2>&1 || { grep -E "error|FAILED" "$OUT/build.log" | head -30; exit 1; }
echo "build: $(( $(date +%s) - start )) s"
grep -c "spill" "$OUT/build.log" | sed 's/^/ptxas spill warnings: /'
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
(cd $BUILD && ctest -j 4 --output-on-failure --output-junit ctest.xml > "$OUT/ctest.log" 2>&1)
rc=$?
cp $BUILD/ctest.xml "$OUT/" 2> /dev/null
python3 scripts/test_summary.py $BUILD/ctest.xml "$OUT/ctest.log" | tee "$OUT/summary.txt" | tail -n 30
grep -E "instances tested|registry holds" "$OUT/ctest.log" | sort | uniq
$BUILD/tests/hipgn_tests --gtest_filter='FwdInstance*:FwdDispatch*' 2>&1 | grep -E "instances tested|PASSED|FAILED" | head -5
grep -E "^\s+[0-9]+ - .*(Failed|Timeout)" "$OUT/ctest.log" | head -20
# the README's main job, timed for real: every instance verified (exit 0), the CSV written
$BUILD/profiler/hipgn_profiler --csv "$OUT/sd.csv" > "$OUT/profiler_sd.txt" 2>&1
echo "profiler on the SD problem: exit $? (0: all verified), $(($(wc -l < "$OUT/sd.csv" 2> /dev/null || echo 1) - 1)) CSV rows"
scripts/check_install.sh $BUILD 2>&1 | tail -n 6
shift_args="$*"
[ -n "$shift_args" ] && eval "$shift_args"
exit $rc
