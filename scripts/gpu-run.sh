#!/usr/bin/env bash
# Runs ringactor's GPU checks on a machine with the NVIDIA driver and no Go:
# the test binaries and the benchmark that `make gpu-bundle` put beside this
# script. Usage: run.sh OUTDIR   (logs and summary.txt are written there)
set -uo pipefail
out=${1:?usage: run.sh OUTDIR}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
export RINGACTOR_REQUIRE_GPU=1
summary="$out/summary.txt"
: > "$summary"
{
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader 2>&1 || echo "nvidia-smi: not available"
} > "$out/gpu.txt"
cat "$out/gpu.txt"
status=0
check() { # name, command...
  local name=$1; shift
  local t0=$SECONDS
  echo "== $name"
  "$@" > "$out/$name.log" 2>&1
  local rc=$?
  local verdict=PASS
  [ $rc -eq 0 ] || { verdict="FAIL (exit $rc)"; status=1; }
  printf '%-22s %-16s %4ds  %s passed, %s failed, %s skipped\n' "$name" "$verdict" $((SECONDS - t0)) \
    "$(grep -c -- '^\s*--- PASS' "$out/$name.log")" "$(grep -c -- '^\s*--- FAIL' "$out/$name.log")" \
    "$(grep -c -- '^\s*--- SKIP' "$out/$name.log")" | tee -a "$summary"
  grep -- '--- FAIL\|--- SKIP\|panic:' "$out/$name.log" | head -20
}
check driver       "$here/cuda.test" -test.v -test.run "^TestGPU" -test.timeout 5m  # the fake-driver tests run in CI
check kernel-suite env RINGACTOR_TEST_BACKEND=cuda "$here/ringkernel.test" -test.v -test.timeout 8m
check cuda-backend "$here/ringkernel-cuda.test" -test.v -test.timeout 8m
check bench        "$here/ringactor" bench-gpu
echo >> "$summary"
cat "$out/bench.log" >> "$summary"
echo; cat "$summary"
exit $status
