#!/usr/bin/env bash
# Runs ringactor's GPU checks on a machine with the NVIDIA driver and no Go:
# the test binaries and the benchmark that `make gpu-bundle` put beside this
# script. Usage: run.sh OUTDIR [CHECK...]   (a log per check and summary.txt
# are written to OUTDIR; with CHECK names, only those run).
# The binaries are cgo builds from Debian 12: x86-64 and glibc >= 2.34.
# The whole run fits one call of RUN_BUDGET seconds (default 540: a 10-minute
# call less the unpacking and the archive): each check's limit is cut to what
# is left of it, and a check with no time left is skipped, saying so.
# bench-gpu runs second, right after devices: every loop variant, the floors
# and the microbenchmarks in one table (issue 38), whatever hangs later.
set -uo pipefail
out=${1:?usage: run.sh OUTDIR [CHECK...]}
shift
only=" $* "
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
# make gpu-bundle packs the binaries into one xz archive (the device machine
# takes 64 MiB); older bundles gzipped each one.
if [ -f "$here/bins.tar.xz" ] || ls "$here"/*.gz >/dev/null 2>&1; then
  bin=$(mktemp -d)
  if [ -f "$here/bins.tar.xz" ]; then
    if command -v xz >/dev/null; then
      xz -dc "$here/bins.tar.xz" | tar -xf - -C "$bin"
    else
      python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$here/bins.tar.xz" "$bin"
    fi || { echo "run.sh: cannot unpack bins.tar.xz (it needs xz or python3)"; exit 1; }
  fi
  for f in "$here"/*.gz; do [ -e "$f" ] && gunzip -c "$f" > "$bin/$(basename "$f" .gz)"; done
  chmod +x "$bin"/*
  cp "$here"/*.ptx "$bin"/ 2>/dev/null   # sass-fence reads the PTX beside the binaries
  echo "unpacked the binaries in ${SECONDS}s"
  here=$bin
fi
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
budget=${RUN_BUDGET:-540}
check() { # name, seconds, command...
  local name=$1 limit=$2; shift 2
  if [ "$only" != "  " ] && [[ "$only" != *" $name "* ]]; then return; fi
  local left=$((budget - SECONDS))
  if [ "$left" -lt 10 ]; then
    printf '%-22s %-16s %4ds  no time left of the run budget (RUN_BUDGET=%ss)\n' "$name" "SKIP" 0 "$budget" | tee -a "$summary"
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  local t0=$SECONDS
  echo "== $name (limit ${limit}s, ${left}s of the run budget left)"
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
# 1. what the backend sees
check devices      20  "$here/ringactor" devices -backend cuda
# issue 38: one table of every loop variant (loop, warp, flagged, warp+flagged,
# and whatever variants.go lists) beside the floors, the microbenchmarks and
# the per-message baselines, the variants interleaved in blocks; a variant the
# backend refuses, or whose block runs past -variant-limit, is a "left out:"
# line and the others go on. Rows go to the log's progress as measured, so a
# timeout keeps them. The default sizes (20,000 samples, 2,000,000 messages per
# variant) should take well under a minute on an H100 (an estimate: no GPU has
# run four variants yet)
# (BENCH_GPU_FLAGS: e.g. "-samples 5000 -messages 500000" to trim).
check bench-gpu    180 "$here/ringactor" bench-gpu -variant-limit 20s ${BENCH_GPU_FLAGS:-}
# the driver API (its tests over the emulated driver run in CI)
check driver       40  "$here/cuda.test" -test.v -test.run "^TestGPU" -test.timeout 35s
# 3. the CUDA backend's own GPU tests and probes (module loading, clock, grid limit)
check cuda-backend 120 "$here/ringkernel-cuda.test" -test.v -test.skip '^TestConformance$' -test.timeout 110s
# 3. the conformance suite (ringkernel/ringkerneltest) on cuda, a user stage
# compiled by the NVRTC there among its cases
check kernel-suite 90  "$here/ringkernel-cuda.test" -test.v -test.run '^TestConformance$' -test.timeout 85s
# issue 38: the conformance suite once more in the experimental warp loop
# (ringkernel.LoopWarp), flagged in-links among its cases
check kernel-suite-warp 90 env RINGACTOR_TEST_LOOP=warp "$here/ringkernel-cuda.test" -test.v -test.run '^TestConformance$' -test.timeout 85s
# 3, 4. runtime's pipeline tests on cuda, the deadlock cases among them
check runtime      120 env RINGACTOR_TEST_BACKEND=cuda "$here/runtime.test" -test.v -test.timeout 110s
# 4. module loading while kernels spin; the deadlock cases under each
# CUDA_MODULE_LOADING (unset: the runtime check above; LAZY is refused)
check modload-LAZY   30 env CUDA_MODULE_LOADING=LAZY "$here/ringkernel-cuda.test" -test.v -test.run ModuleLoad -test.timeout 28s
check deadlock-EAGER 45 env CUDA_MODULE_LOADING=EAGER RINGACTOR_TEST_BACKEND=cuda "$here/runtime.test" -test.v -test.run 'SecondPipeline|WhileBusy|CloseWithoutDrain' -test.timeout 40s
# D7: a second pipeline on a device the first never used, started while the
# first one's kernels run (needs two GPUs: with one it shows as skipped)
check second-device  60 env RINGACTOR_TEST_BACKEND=cuda "$here/runtime.test" -test.v -test.run 'SecondPipelineOnAFreshDevice' -test.timeout 55s
# 2. the main job on the GPU, spans checked
# 6. the device loop's publish fence (GPU-REVIEW D1): fence.acq_rel.sys must
# lower to the MEMBAR.SYS that st.release.sys did; needs the toolkit's ptxas
# and cuobjdump (skips, saying so, without them).
sass_fence() {
  command -v ptxas >/dev/null && command -v cuobjdump >/dev/null || { echo "--- SKIP: no ptxas/cuobjdump on PATH: the fence's SASS is not checked"; return 0; }
  local arch; arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
  ptxas -arch="sm_${arch:-90}" -o "$out/ra_identity.cubin" "$here/ra_identity.ptx" || return 1
  cuobjdump -sass "$out/ra_identity.cubin" > "$out/ra_identity.sass" || return 1
  echo "fence.acq_rel.sys in the PTX: $(grep -c 'fence.acq_rel.sys' "$here/ra_identity.ptx"); MEMBAR in the SASS:"
  grep -o 'MEMBAR[A-Z._]*' "$out/ra_identity.sass" | sort | uniq -c
  grep -q 'MEMBAR.*SYS\|MEMBAR.SC.SYS\|MEMBAR.ALL.SYS' "$out/ra_identity.sass" && echo "--- PASS: a system-scope MEMBAR" || { echo "--- FAIL: no system-scope MEMBAR in the SASS"; return 1; }
}
export -f sass_fence; export out here
check sass-fence   60  bash -c sass_fence
check main-job     60  "$here/pipeline" -backend cuda -devices 0,0,0 -messages 200000 -quiet -trace-file "$out/spans.json"
# 6. the benchmarks
# bench-gpu ran second (above); bench's gpu/ rows are the default loop's alone
check bench-rows    90 "$here/ringactor" bench -quick -only gpu/
check bench-p2p    120 "$here/ringactor" bench -quick -only p2p/ -backend cuda
# the all-reduce over device links (peer links between GPUs where they have
# them) against the host-hop one, and their tests on the GPUs
check collective   120 env RINGACTOR_TEST_BACKEND=cuda "$here/collective.test" -test.v -test.run 'AllReduce|Barrier' -test.timeout 110s
# stage groups on the GPUs: work stealing in the device loop (issue 36), the
# policies (a case needing more GPUs than there are skips, saying so)
check group        120 env RINGACTOR_TEST_BACKEND=cuda "$here/group.test" -test.v -test.timeout 110s
check bench-allreduce 120 "$here/ringactor" bench -quick -only allreduce/cuda -backend cuda
# issue 37: buffers (allocate, fill, copies, managed where the GPU has it) and
# buffers bound to stages are conformance cases (kernel-suite above); the
# examples with a user CUDA stage and their own checks (one GPU: phases'
# three kernels share it, imagebatch and tempering spread over every GPU)
check ex-phases      60 "$here/phases" -backend cuda -devices 0,0,0
check ex-imagebatch  60 "$here/imagebatch" -backend cuda -images 256 -size 64
check ex-tempering   90 "$here/tempering" -backend cuda
check top-once       30 "$here/ringactor" top -once -backend cuda
check bench-copy    120 "$here/ringactor" bench -quick -only copy/ -backend cuda
echo >> "$summary"
echo "total: ${SECONDS}s of the ${budget}s run budget" | tee -a "$summary"
# bench-gpu's whole table (its progress lines, "gpubench: ...", stay in the log)
[ -f "$out/bench-gpu.log" ] && { echo "-- bench-gpu"; grep -v '^gpubench:' "$out/bench-gpu.log"; } >> "$summary"
for f in devices main-job ex-imagebatch ex-tempering bench-rows bench-p2p bench-allreduce bench-copy; do [ -f "$out/$f.log" ] && { echo "-- $f"; tail -40 "$out/$f.log"; } >> "$summary"; done
grep -h 'GPU-NOTE' "$out"/*.log >> "$summary" 2>/dev/null
# The device tool brings back at most 8 files: the logs travel as one archive.
# (spans.json only where main-job ran: a run of some checks has none.)
(cd "$out" && tar czf logs.tar.gz *.log $(ls spans.json 2>/dev/null) && rm -f *.log spans.json)
echo; cat "$summary"
exit $status
