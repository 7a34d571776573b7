#!/usr/bin/env bash
# On the GPU machine, after a build in build-gpu/ (scripts/gpu_check.sh makes it): every
# PyTorch check, then a summary table. Parts, each under its own time limit and logged to
# $OUT/torch/<part>.log; a failing part never stops the others:
#   cpp          the C++ tests of the caller workspace (poisoned, graph-captured) and tuning
#   profiler     hipgn_profiler --tune writes a tuning database
#   package      the Python package without PyTorch (tests/python/test_package.py)
#   ops          hipgn.torch against F.group_norm in float64, opcheck, modules, patch, tune:
#                with the C++ operators where the build made libhipgn_torch.so, and they
#                against the Python ones bit for bit
#   ops_python   the same with the Python operators (HIPGN_TORCH_EXTENSION=0)
#   cuda_graph   a whole training step captured in a CUDA graph and replayed
#   compile      torch.compile(fullgraph=True): no graph break, outputs and gradients as eager
#   overhead     host microseconds per eager call, next to F.group_norm's
#   networks     ResNet-50 (GroupNorm) and a diffusion-style decoder: accuracy, then step and
#                inference times patched and not: eager, in a CUDA graph, compiled (what fits)
# The whole run is held under BUDGET_S seconds (default 460: under 8 minutes).
# Environment: OUT (default /tmp/hipgn-out), BUILD (default build-gpu), PYTHON (default: the
# first of python3, python3.12, python3.11 that imports torch), BUDGET_S.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/hipgn-out}
BUILD=${BUILD:-build-gpu}
BUDGET_S=${BUDGET_S:-460}
LOGS="$OUT/torch"
mkdir -p "$LOGS"
start=$(date +%s)

export HIPGN_LIBRARY="$PWD/$BUILD/runtime/libhipgn.so"
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
export TORCHINDUCTOR_CACHE_DIR="$LOGS/inductor-cache"  # a rerun on the same machine compiles less
unset HIPGN_TUNING_DB  # the tests make their own databases
if [ ! -f "$HIPGN_LIBRARY" ]; then
  echo "gpu_torch_check: $HIPGN_LIBRARY is missing: build first (scripts/gpu_check.sh, or BUILD=<dir>)"
  exit 1
fi
PY=${PYTHON:-}
if [ -z "$PY" ]; then
  for c in python3 python3.12 python3.11; do
    if command -v "$c" > /dev/null && "$c" -c "import torch" 2> /dev/null; then PY=$c; break; fi
  done
fi
if [ -z "$PY" ]; then
  echo "gpu_torch_check: no Python here imports torch (set PYTHON)"
  exit 1
fi
"$PY" -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'gpu', torch.cuda.get_device_name() if torch.cuda.is_available() else 'NONE')" 2>&1 | tee "$LOGS/versions.log"
"$PY" -c "import torchvision; print('torchvision', torchvision.__version__)" >> "$LOGS/versions.log" 2>&1
"$PY" -c "import hipgn.torch as h; print('operators:', h.cpp_operators() or 'Python (no libhipgn_torch.so)')" 2>&1 \
  | tee -a "$LOGS/versions.log"

summary=()
failed=0
# run_part NAME LIMIT_S COMMAND...: runs under min(LIMIT_S, what the budget has left), logs,
# and adds a row (status, seconds, the log's verdict line) to the summary.
run_part() {
  local name=$1 limit=$2
  shift 2
  local left=$(( BUDGET_S - ($(date +%s) - start) ))
  if [ "$left" -lt 20 ]; then
    summary+=("$(printf '%-11s %-9s %5s  %s' "$name" skipped - "the time budget ($BUDGET_S s) is spent")")
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  local t0=$(date +%s)
  timeout -k 10 "$limit" "$@" > "$LOGS/$name.log" 2>&1
  local rc=$? secs=$(( $(date +%s) - t0 )) status
  case $rc in
    0) status=ok ;;
    77) status=skipped ;;
    124|137) status=TIMEOUT; failed=1 ;;
    *) status="FAILED($rc)"; failed=1 ;;
  esac
  # the verdict: unittest's, gtest's, or the scripts' own "summary:" line
  local verdict
  verdict=$(grep -E "^(Ran [0-9]+ tests|OK|FAILED|summary:|skipped:|\[  (PASSED|FAILED)  \]|1 passed)" "$LOGS/$name.log" \
            | tail -3 | tr '\n' ' ')
  summary+=("$(printf '%-11s %-9s %5s  %s' "$name" "$status" "$secs" "$verdict")")
  echo "gpu_torch_check: $name: $status in ${secs} s (log: $LOGS/$name.log)"
}

profiler_tune() {
  rm -f "$LOGS/profiler_tuning_db.json"
  "$BUILD/profiler/hipgn_profiler" -n 2 -c 320 -s 64,64 -g 32 --dtype f16 --layout cl --act swish --iters 20 \
    --tune --tuning-db "$LOGS/profiler_tuning_db.json" || return 1
  "$BUILD/profiler/hipgn_profiler" --op bwd -n 2 -c 320 -s 64,64 -g 32 --dtype f16 --layout cl --act swish --iters 20 \
    --tune --tuning-db "$LOGS/profiler_tuning_db.json" || return 1
  cat "$LOGS/profiler_tuning_db.json"
  # both winners, the first kept when the second was added
  [ "$(grep -c '"instance"' "$LOGS/profiler_tuning_db.json")" = 2 ] && echo "summary: 2 entries recorded"
}

run_part cpp 90 "$BUILD/tests/hipgn_tests" --gtest_filter='Workspace*:Tune*:TuningDb*:CApi*'
export -f profiler_tune
export BUILD LOGS
run_part profiler 60 bash -c profiler_tune
run_part package 40 "$PY" tests/python/test_package.py
run_part ops 120 "$PY" tests/torch/test_ops.py
run_part ops_python 120 env HIPGN_TORCH_EXTENSION=0 "$PY" tests/torch/test_ops.py
run_part cuda_graph 60 "$PY" tests/torch/test_cuda_graph.py
run_part compile 120 "$PY" tests/torch/test_compile.py
run_part overhead 40 "$PY" tests/torch/bench_overhead.py --json "$OUT/torch/overhead.json"
left=$(( BUDGET_S - ($(date +%s) - start) - 5 ))
run_part networks "$left" "$PY" tests/torch/networks.py --budget-s $(( left - 15 )) --json "$OUT/torch/networks.json"

echo
echo "== host overhead (eager, us per call) =="
grep -E "^  " "$LOGS/overhead.log" 2> /dev/null
echo "== networks =="
grep -E "^accuracy|^network|x$|skipped|FAILED" "$LOGS/networks.log" 2> /dev/null | grep -v "^timing"
echo
echo "== summary ($(( $(date +%s) - start )) s; logs in $LOGS) =="
printf '%-11s %-9s %5s  %s\n' part status s verdict
printf '%s\n' "${summary[@]}" | tee "$LOGS/summary.txt"
exit $failed
