#!/usr/bin/env bash
# Runs ringactor's GPU checks on a machine with the NVIDIA driver and no Go:
# the test binaries and the benchmark that `make gpu-bundle` put beside this
# script. Usage: run.sh OUTDIR [CHECK...]   (a log per check and summary.txt
# are written to OUTDIR; with CHECK names, only those run).
# The binaries are cgo builds from Debian 12: x86-64 and glibc >= 2.34.
set -uo pipefail
out=${1:?usage: run.sh OUTDIR [CHECK...]}
shift
only=" $* "
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
export RINGACTOR_REQUIRE_GPU=1
summary="$out/summary.txt"
: > "$summary"
{
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap,clocks.max.sm --format=csv 2>&1 || echo "nvidia-smi: not available"
  nvidia-smi topo -m 2>&1 | head -20
  echo "CUDA_MODULE_LOADING=${CUDA_MODULE_LOADING-<unset>}"
  echo "NVRTC libraries:"; { ldconfig -p | grep -o '/.*libnvrtc\.so[.0-9]*$'; ls /usr/local/cuda*/lib64/libnvrtc.so* 2>/dev/null; } | sort -u
  echo "glibc: $(ldd --version 2>&1 | head -1)"
} > "$out/gpu.txt"
cat "$out/gpu.txt"
# NVRTC of the toolkit there, for user stages compiled at run time.
if [ -z "${RINGACTOR_NVRTC-}" ]; then
  for f in /usr/local/cuda/lib64/libnvrtc.so.13 /usr/local/cuda/lib64/libnvrtc.so $(ldconfig -p | grep -o '/.*libnvrtc\.so\.1[0-9]$'); do
    [ -e "$f" ] && { export RINGACTOR_NVRTC=$f; break; }
  done
fi
echo "RINGACTOR_NVRTC=${RINGACTOR_NVRTC-<none>}" | tee -a "$out/gpu.txt"
status=0
check() { # name, seconds, command...
  local name=$1 limit=$2; shift 2
  if [ "$only" != "  " ] && [[ "$only" != *" $name "* ]]; then return; fi
  local t0=$SECONDS
  echo "== $name (limit ${limit}s)"
  timeout -k 10 "$limit" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  local verdict=PASS
  [ $rc -eq 0 ] || { verdict="FAIL (exit $rc)"; status=1; }
  [ $rc -eq 124 ] && verdict="FAIL (timeout)"
  printf '%-22s %-16s %4ds  %s passed, %s failed, %s skipped\n' "$name" "$verdict" $((SECONDS - t0)) \
    "$(grep -c -- '^\s*--- PASS' "$out/$name.log")" "$(grep -c -- '^\s*--- FAIL' "$out/$name.log")" \
    "$(grep -c -- '^\s*--- SKIP' "$out/$name.log")" | tee -a "$summary"
  grep -- '--- FAIL\|--- SKIP\|panic:' "$out/$name.log" | head -20
}
check devices      30  "$here/ringactor" devices -backend cuda
check driver       120 "$here/cuda.test" -test.v -test.run "^TestGPU" -test.timeout 110s  # the fake-driver tests run in CI
check cuda-backend 200 "$here/ringkernel-cuda.test" -test.v -test.run "GPU" -test.timeout 190s
check kernel-suite 240 env RINGACTOR_TEST_BACKEND=cuda "$here/ringkernel.test" -test.v -test.timeout 230s
check bench        240 "$here/ringactor" bench-gpu -samples 5000 -messages 500000
echo >> "$summary"
[ -f "$out/bench.log" ] && cat "$out/bench.log" >> "$summary"
echo; cat "$summary"
exit $status
