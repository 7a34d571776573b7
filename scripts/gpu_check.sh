#!/usr/bin/env bash
# On the GPU machine (the device tool): configure, build, run the whole test suite and profile
# a few benchmark shapes, logging under $OUT. Header-only Debian packages the machine lacks
# (CLI11, nlohmann-json) travel in .deps/ (scripts/fetch_deps.sh).
set -uo pipefail
OUT=${OUT:-/tmp/hipgn-out}
mkdir -p "$OUT"
PRESET=${PRESET:-default}
BUILD=${BUILD:-build-gpu}
cmake -S . -B $BUILD -G Ninja -DHIPGN_PRESET=$PRESET -DCMAKE_PREFIX_PATH="$PWD/.deps/root/usr" \
  > "$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
start=$(date +%s)
cmake --build $BUILD -j 16 > "$OUT/build.log" 2>&1 || { grep -E "error|FAILED" "$OUT/build.log" | head -30; exit 1; }
echo "build: $(( $(date +%s) - start )) s"
python3 scripts/check_spills.py "$OUT/build.log"
spill_rc=$?
# BUILD_ONLY=1: stop here. On a fresh machine the build (~110 s) and the suite (~480 s) no
# longer fit one 600 s device call together; a call with BUILD_ONLY=1, then one without it while
# the machine is warm (its build then compiles nothing), runs them (bench/NOTES.md, "Where the
# forty-ninth session")
[ "${BUILD_ONLY:-0}" = 1 ] && exit $spill_rc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
# The PyTorch tests (label torch) run in scripts/gpu_torch_check.sh, under their own budget.
# -j 4: the tests share the one GPU, and -j 12 ran no more of them a second (bench/NOTES.md,
# "The register loop's kernel of its own").
(cd $BUILD && ctest -j 4 --output-on-failure --output-junit ctest.xml ${CTEST_ARGS:--LE torch} > "$OUT/ctest.log" 2>&1)
rc=$?
cp $BUILD/ctest.xml "$OUT/" 2> /dev/null
python3 scripts/test_summary.py $BUILD/ctest.xml "$OUT/ctest.log" | tee "$OUT/summary.txt" | tail -n 30
grep -E "registry holds" "$OUT/ctest.log" | sort | uniq
echo "instances tested: $(grep -cE "Test +#[0-9]+: All/(Fwd|Bwd)Instance.* Passed" "$OUT/ctest.log") passed of $(grep -cE "Test +#[0-9]+: All/(Fwd|Bwd)Instance" "$OUT/ctest.log") instance tests"
grep -E "^\s+[0-9]+ - .*(Failed|Timeout)" "$OUT/ctest.log" | head -20
# the resident forward's portable exchange (the workspace and a cooperative launch), which an
# H100 otherwise takes only past 16 slices: the resident forward instances again without clusters
if [ "${PORTABLE:-1}" = 1 ]; then
  HIPGN_CLUSTERS=0 $BUILD/tests/hipgn_tests --gtest_filter='*FwdInstance*_resident_*:FwdDispatch*' \
    > "$OUT/portable.log" 2>&1
  prc=$?
  echo "resident forward without clusters (HIPGN_CLUSTERS=0): rc=$prc, $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/portable.log" | tr '\n' ' ')"
  [ $prc -ne 0 ] && rc=1
fi
# the channels-first stream forward's waves, which it takes by default only past 4 times what
# the grid holds (kStreamCfWavesFromHeld): its large-tensor tests again with waves from once
if [ "${WAVES:-1}" = 1 ]; then
  HIPGN_STREAM_WAVES=always $BUILD/tests/hipgn_tests --gtest_filter='*StreamWaves*' > "$OUT/waves.log" 2>&1
  wrc=$?
  echo "stream forward in waves (HIPGN_STREAM_WAVES=always): rc=$wrc, $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/waves.log" | tr '\n' ' ')"
  [ $wrc -ne 0 ] && rc=1
fi
# the onchip forward's parts held as loaded (channels-last rows, channels-first vectors), which
# the launcher takes by default only where they run more of a launch's clusters at once and the
# plain kernel's would not all run at once (no test's shape is so large): their tests again with that kernel wherever an instance has it
if [ "${HELD_BITS:-1}" = 1 ]; then
  HIPGN_ONCHIP_HELD_BITS=always $BUILD/tests/hipgn_tests --gtest_filter='*OnchipHeldBits*:*FwdInstance*_onchip_*' \
    > "$OUT/held_bits.log" 2>&1
  brc=$?
  echo "onchip forward's parts held as loaded (HIPGN_ONCHIP_HELD_BITS=always): rc=$brc, $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/held_bits.log" | tr '\n' ' ')"
  [ $brc -ne 0 ] && rc=1
fi
# compute-sanitizer over the resident and stream families, forward (both layouts) and backward (persistent grids, cross-
# workgroup exchange, bulk copies), the channels-first backward's peeled runs (dynamic shared memory) and forward's (onchip),
# the channels-last onchip forward's and backward's rows (idle threads where the block is no multiple of a row's vectors;
# the forward's groups in parts, a thread-block cluster a group;
# the backward's padded partials in shared memory) and columns (C/G below the vector: the corpus's C/G = 1, 2, 4),
# on the odd-shape corpus: memory errors, shared-memory races, barrier misuse.
# synccheck runs with HIPGN_CLUSTERS=portable (clusters of up to 8 workgroups; larger units take
# the workspace path): on non-portable clusters of 9-16 it reports a missing wait, or the launch
# faults, where memcheck, racecheck and 60 plain repeats find them correct (bench/NOTES.md,
# "Chunks of a sample").
# SANITIZE_FILTER narrows the first run of each tool (its tests: default, the instances below);
# the waves' and the parts held as loaded's runs go with WAVES and HELD_BITS.
if [ "${SANITIZE:-1}" = 1 ] && command -v compute-sanitizer > /dev/null; then
  filter=${SANITIZE_FILTER:-'*FwdInstance*f16_f16_cf_swish_onchip_b256_v8_e2:*FwdInstance*f16_f16_cl_swish_onchip_b512_v2_e16:*FwdInstance*bf16_bf16_cl_swish_onchip_b256_v4_e8:*FwdInstance*f16_f16_cf_swish_resident_b256_v8_e4:*FwdInstance*f16_f16_cf_swish_stream_b512_v8_e1:*FwdInstance*bf16_f32_cf_none_stream_b256_v8_e1:*FwdInstance*f32_f32_cf_swish_stream_b512_v4_e2:*FwdInstance*f16_f16_cl_swish_stream_b512_v8_e1:*FwdInstance*bf16_f32_cl_none_stream_b256_v8_e1:*FwdInstance*f32_f32_cl_swish_stream_b512_v4_e2:*FwdInstance*f16_f16_cl_swish_resident_b512_v8_e8:*FwdInstance*f32_f32_cf_none_resident_b512_v4_e2:*FwdInstance*bf16_f32_cl_none_resident_b256_v8_e2:*FwdInstance*f16_f16_cf_swish_split_b256_v8_e4:*FwdInstance*bf16_bf16_cl_none_split_b256_v8_e4:*FwdInstance*f16_f16_cf_swish_looped_b256_v1_e4:*BwdInstance*bwd_f16_f16_cl_swish_resident_b512_v8_e4:*BwdInstance*dx_f32_f32_cl_swish_resident_b256_v4_e2:*BwdInstance*dgb_bf16_f32_cl_none_resident_b512_v8_e2:*BwdInstance*bwd_f16_f16_cl_swish_stream_b512_v8_e1:*BwdInstance*dx_f32_f32_cl_none_stream_b256_v4_e1:*BwdInstance*bwd_bf16_f32_cf_swish_onchip_b256_v8_e2:*BwdInstance*bwd_f16_f16_cf_swish_split_b256_v8_e4:*BwdInstance*bwd_bf16_f32_cl_swish_onchip_b512_v2_e32:*BwdInstance*dgb_f16_f16_cl_none_onchip_b512_v8_e4'}
  # sanitize NAME LABEL LIMIT FILTER [VAR=VALUE ...]: the tests FILTER picks under $tool with
  # those variables, logged in $OUT/sanitize_NAME.log, its summary echoed; a failure fails the check
  sanitize() {
    local log="$OUT/sanitize_$1.log" label=$2 limit=$3 filter=$4
    shift 4
    env "$@" timeout "$limit" compute-sanitizer --tool $tool --error-exitcode 9 $BUILD/tests/hipgn_tests \
      --gtest_filter="$filter" > "$log" 2>&1
    local src=$?
    echo "compute-sanitizer $tool$label: rc=$src, $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1) $(grep -cE "^\[       OK" "$log") tests ok"
    [ $src -eq 0 ] || rc=1
  }
  for tool in memcheck racecheck synccheck; do
    cl=""; [ $tool = synccheck ] && cl=portable
    sanitize $tool "" 200 "$filter" HIPGN_CLUSTERS=$cl
    # the waves, one instance
    [ "${WAVES:-1}" = 1 ] &&
      sanitize waves_$tool ", waves" 300 '*StreamWaves*f16_f16_cf_swish_stream_b512_v8_e1' HIPGN_STREAM_WAVES=always
    # the onchip forward's parts held as loaded, three instances (channels-first: aligned and peeled)
    [ "${HELD_BITS:-1}" = 1 ] && sanitize held_bits_$tool ", parts held as loaded" 200 \
      '*OnchipHeldBits*f16_f16_cl_swish_onchip_b256_v8_e4:*OnchipHeldBits*bf16_bf16_cl_swish_onchip_b256_v4_e8:*OnchipHeldBits*f16_f16_cf_swish_onchip_b256_v8_e8' \
      HIPGN_CLUSTERS=$cl HIPGN_ONCHIP_HELD_BITS=always
  done
fi
# the README's main job, timed for real: every instance verified (exit 0), the CSV written
$BUILD/profiler/hipgn_profiler --csv "$OUT/sd.csv" > "$OUT/profiler_sd.txt" 2>&1
echo "profiler on the SD problem: exit $? (0: all verified), $(($(wc -l < "$OUT/sd.csv" 2> /dev/null || echo 1) - 1)) CSV rows"
scripts/check_install.sh $BUILD 2>&1 | tail -n 6
shift_args="$*"
[ -n "$shift_args" ] && eval "$shift_args"
[ $spill_rc -ne 0 ] && rc=1  # a spill past the baseline fails the check, after everything ran
exit $rc
