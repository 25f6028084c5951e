# ringactor — build, test and benchmark. `make help` lists the targets.

GO        ?= go
PKGS      ?= ./...
TEST_TIMEOUT ?= 15m
FUZZTIME  ?= 10s
BENCHTIME ?= 1s

.PHONY: help run run-emulated emu tsan build test relacy flake flake-load vet generate check-generate ptx check-ptx fuzz bench bench-go stress gpu-bundle

help:
	@echo "make run             the main job: x*2 -> sqrt -> +1 on devices 0,1,2 (simulated without a GPU)"
	@echo "make run-emulated    the main job on the CUDA backend over the emulated driver (3 emulated GPUs, no GPU needed)"
	@echo "make emu             build the emulated CUDA driver into $(EMU_DIR)/ (the device code compiled for the CPU)"
	@echo "make tsan            the device loop under ThreadSanitizer: each case at 1, 4 and 32 threads per block, host threads as the Go side (TSAN_N=1,4,32, TSAN_RUN=regexp)"
	@echo "make build           compile every package and command"
	@echo "make test            go vet, the Relacy models, make tsan, then go test -race over every package (the two-process tests without -race; the runtime-level suites on sim), the runtime-level suites on the CPU device, then the conformance and runtime-level suites over the emulated CUDA driver at $(EMU_THREADS) threads per block, and some once more with its copy engine $(EMU_LAG_US) us late (bounded by $(TEST_TIMEOUT))"
	@echo "make relacy          the Relacy models of the link queue, drain, command, barrier and doorbell protocols (internal/relacy; needs relacy-dev), seconds"
	@echo "make flake           every package's tests FLAKE_N times (default 10) with -race and -short, in one process each, and the emulated CUDA suites: hunts flaky tests (not part of CI)"
	@echo "make flake-load      make flake beside a heavy load (a go build -a -race loop, LOAD_SPINNERS busy threads), all stopped when it ends: hunts tests that fail on a busy machine"
	@echo "make bench           ringactor bench: every benchmark beside its baseline, one table (BENCHFLAGS=-quick, -json, -only PREFIX)"
	@echo "make bench-go        the Go benchmarks of p2pqueue (link vs channel, more payload sizes)"
	@echo "make stress          the reliability stress tests at full size: 1e6 messages, stages toggled, one faulted; 10,000 build/close cycles"
	@echo "make fuzz            run each fuzz target for $(FUZZTIME) (a duration, or a count like 200000x)"
	@echo "make generate        regenerate kernels/include/ringactor_layout.h"
	@echo "make check-generate  fail if generated files are stale"
	@echo "make ptx             rebuild the shipped PTX of every built-in stage through NVRTC"
	@echo "make check-ptx       fail if the shipped PTX differs from a fresh build"
	@echo "make gpu-bundle      build the GPU tests and benchmark into .gpu/ (run there: bash .gpu/run.sh OUTDIR)"

run:
	$(GO) run ./examples/pipeline $(ARGS)

# The emulated CUDA driver (internal/cudaemu): the device code built for
# the CPU, loaded as libcuda through RINGACTOR_LIBCUDA.
EMU_DIR  ?= .emu
EMU_LIB   = $(abspath $(EMU_DIR))/libcudaemu.so
# EMU_THREADS: threads per block the emulated driver runs (the launch's
# blockDim.x, capped): 32, a warp, is what a stateful stage is launched with
# and enough to show every barrier and strided loop of the device code.
EMU_THREADS ?= 32
EMU_ENV   = RINGACTOR_LIBCUDA=$(EMU_LIB) RINGACTOR_TEST_BACKEND=cuda RINGACTOR_REQUIRE_GPU=1 RINGACTOR_EMU_THREADS=$(EMU_THREADS)
# The suites that run over the emulated driver: the binding's GPU tests
# (./cuda; its other tests build and load emulator variants of their own,
# with or without this), the CUDA backend's
# conformance suite (ringkernel/cuda calls ringkernel/ringkerneltest) and
# the runtime-level suites, which read RINGACTOR_TEST_BACKEND
# (internal/rttest; a case that cannot run on a backend skips with the
# reason from rttest.Lacks). EMU_WIDE_PKGS spread one stage over four
# devices (groups, collectives, examples/imagebatch's group of a user
# CUDA stage): four emulated GPUs.
EMU_PKGS ?= ./cuda ./ringkernel/cuda ./runtime ./internal/nodeproc/inmem ./examples/pipeline ./examples/graph ./examples/stealing ./examples/phases ./examples/tempering ./examples/vectoradd
EMU_WIDE_PKGS ?= ./runtime/group ./runtime/collective ./examples/imagebatch
# The runtime-level suites once more on the CPU device
# (RINGACTOR_TEST_BACKEND=cpu: every stage a case places is on the CPU).
CPU_PKGS ?= ./runtime ./runtime/group ./runtime/collective ./internal/nodeproc/inmem
# The buffer suites once more over four emulated GPUs whose peer matrix has
# both kinds of pair (0-1 peers, the rest staged): every ordered pair's copy.
EMU_BUFFER_TESTS ?= TestBuffer|TestStageReadsBoundBuffers|CopyRows
EMU_BUFFER_PKGS  ?= ./runtime ./internal/bench
# The bench rows that go through the CUDA backend (the rest are sim's), and
# bench-gpu (internal/gpubench, cmd/ringactor) over the emulated driver.
EMU_BENCH_TESTS ?= P2PRowsOnTheGPUs|PipelineRowOnTheGPUs|AllReduceRowsOnTheGPUs|MeasureOverEmulator|PerMessageWithoutCapture|BenchGPUOverEmulator
EMU_BENCH_PKGS  ?= ./internal/bench ./internal/gpubench ./cmd/ringactor
# The cost ledger (internal/gpubench, docs/BENCHMARKS.md "ledger"): each loop
# variant held to the counts of its design, over the emulated driver.
EMU_LEDGER_TESTS ?= TestLedger
EMU_LEDGER_PKGS  ?= ./internal/gpubench
# Once more with the emulated copy engine late (RINGACTOR_EMU_COPY_LAG_US):
# device-memory setup copies land EMU_LAG_US later, so a launch that is not
# fenced after them (GPU-REVIEW D2) fails. The packages that set up device
# links, and the P2P rows.
EMU_LAG_US        ?= 2000
EMU_LAG_PKGS      ?= ./ringkernel/cuda ./examples/pipeline
EMU_LAG_BENCH     ?= P2PRowsOnTheGPUs
# Not again with the copy engine late: the user-stage builds (NVRTC and
# the host compiler over the whole loop, about 45 s; they set up nothing
# the lag is about).
EMU_LAG_SKIP      ?= TestUserStagePTX|TestConformance/UserDefinedStage

emu:
	$(GO) run ./internal/cudaemu/build -o $(EMU_DIR) >/dev/null

run-emulated: emu
	RINGACTOR_LIBCUDA=$(EMU_LIB) RINGACTOR_EMU_DEVICES=3 $(GO) run ./examples/pipeline -backend cuda -devices 0,1,2 $(ARGS)

# ThreadSanitizer on the device loop (internal/cudaemu/tsan): the ring
# kernels built for the host with -fsanitize=thread, run as N real threads
# per block beside host threads playing the Go side, every result checked.
# TSAN_FLAGS adds flags (-headers DIR runs it over a modified ringactor.cuh).
TSAN_DIR ?= .tsan
TSAN_N   ?= 1,4,32
TSAN_RUN ?=
TSAN_FLAGS ?=
tsan:
	$(GO) run ./internal/cudaemu/tsan -dir $(TSAN_DIR) -n $(TSAN_N) -run '$(TSAN_RUN)' $(TSAN_FLAGS)

build:
	$(GO) build $(PKGS)

vet:
	$(GO) vet $(PKGS)

# protoactor-go's cluster reads its member BlockList without the lock it
# writes it under (upstream, in its latest version), so a test process that
# holds a cluster node with a peer trips the race detector: those tests
# skip under -race (package internal/racecheck says why) and run again
# here without it. The cluster code's own logic is race-tested in runtime/cluster.
REMOTE_TESTS ?= Remote
REMOTE_PKGS  ?= ./internal/nodeproc ./examples/pipeline ./internal/bench ./cmd/ringactor

# Relacy models of the device/host memory-order protocols (internal/relacy/README.md):
# each runs clean with the orders the code uses, and each broken variant must be reported.
relacy:
	bash scripts/relacy.sh

# The conformance cases `make test` runs once more with every kernel in the warp loop (ringkernel.LoopWarp) (its own tests, TestLoopVariant*, run in EMU_PKGS).
EMU_WARP_TESTS ?= TestConformance$$/(EveryBuiltin|OpError|Lifecycle|Terminate|Heartbeat|StatusUnderLoad|CountsItsWork|StatefulSum|TraceRecords|BadMessages|FanIn|CorruptLink|Route|Typed|TwoStages|Steal|Barrier|Flagged)
# And once more in the pipelined ingress (ringkernel.LoopWarpPrefetch), the flagged ingress among them.
EMU_PF_TESTS ?= TestConformance$$/(EveryBuiltin|OpError|Lifecycle|Terminate|Heartbeat|StatusUnderLoad|CountsItsWork|StatefulSum|TraceRecords|BadMessages|FanIn|CorruptLink|Route|Typed|TwoStages|Steal|Barrier|Flagged)
test: vet emu relacy tsan
	$(GO) test -race -timeout $(TEST_TIMEOUT) $(PKGS)
	$(GO) test -timeout $(TEST_TIMEOUT) -run '$(REMOTE_TESTS)' $(REMOTE_PKGS)
	RINGACTOR_TEST_BACKEND=cpu $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $(CPU_PKGS)
	$(EMU_ENV) $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $(EMU_PKGS)
	$(EMU_ENV) RINGACTOR_EMU_DEVICES=4 $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $(EMU_WIDE_PKGS)
	$(EMU_ENV) $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -run '$(EMU_BENCH_TESTS)' $(EMU_BENCH_PKGS)
	$(EMU_ENV) $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -run '$(EMU_LEDGER_TESTS)' $(EMU_LEDGER_PKGS)
	$(EMU_ENV) RINGACTOR_EMU_PEERS=0-1 $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -run 'TestConformance$$/Buffers' ./ringkernel/cuda
	$(EMU_ENV) RINGACTOR_TEST_LOOP=warp $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -run '$(EMU_WARP_TESTS)' ./ringkernel/cuda
	$(EMU_ENV) RINGACTOR_TEST_LOOP=warp-prefetch $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -run '$(EMU_PF_TESTS)' ./ringkernel/cuda
	$(EMU_ENV) RINGACTOR_EMU_DEVICES=4 RINGACTOR_EMU_PEERS=0-1 $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -run '$(EMU_BUFFER_TESTS)' $(EMU_BUFFER_PKGS)
	$(EMU_ENV) RINGACTOR_EMU_COPY_LAG_US=$(EMU_LAG_US) $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -skip '$(EMU_LAG_SKIP)' $(EMU_LAG_PKGS)
	$(EMU_ENV) RINGACTOR_EMU_COPY_LAG_US=$(EMU_LAG_US) $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -run '$(EMU_LAG_BENCH)' $(EMU_BENCH_PKGS)

# Flaky-test hunt: every test FLAKE_N times in one process per package
# (-count, so package state that breaks a second run fails too), race on,
# -short sizes for the stress tests. About 17 minutes on 2 cores.
# FLAKE_TIMEOUT bounds each test binary (flake-load raises it: a loaded
# host runs the same tests three or four times slower).
FLAKE_N ?= 10
FLAKE_TIMEOUT ?= 40m
flake: emu
	$(GO) test -race -short -count=$(FLAKE_N) -timeout $(FLAKE_TIMEOUT) $(PKGS)
	$(GO) test -short -count=$(FLAKE_N) -timeout $(FLAKE_TIMEOUT) -run '$(REMOTE_TESTS)' $(REMOTE_PKGS)
	RINGACTOR_TEST_BACKEND=cpu $(GO) test -race -short -count=$(FLAKE_N) -timeout $(FLAKE_TIMEOUT) $(CPU_PKGS)
	$(EMU_ENV) $(GO) test -race -short -count=$(FLAKE_N) -timeout $(FLAKE_TIMEOUT) $(EMU_PKGS)
	$(EMU_ENV) RINGACTOR_EMU_DEVICES=4 $(GO) test -race -short -count=$(FLAKE_N) -timeout $(FLAKE_TIMEOUT) $(EMU_WIDE_PKGS)
	$(EMU_ENV) $(GO) test -race -short -count=$(FLAKE_N) -timeout $(FLAKE_TIMEOUT) -run '$(EMU_BENCH_TESTS)' $(EMU_BENCH_PKGS)

# make flake beside a heavy, realistic load (scripts/flake-load.sh): a loop
# of `go build -a -race` into a scratch GOCACHE and LOAD_SPINNERS (2) busy
# threads, all killed when the run ends, pass or fail. Variables given to
# make (PKGS, EMU_PKGS, ...) reach the inner make flake.
flake-load:
	FLAKE_N=$(FLAKE_N) GO=$(GO) MAKE=$(MAKE) bash scripts/flake-load.sh FLAKE_TIMEOUT=120m

generate:
	$(GO) generate ./kernels/...

check-generate: generate
	@git diff --exit-code -- kernels/include || { echo "generated files are stale: run 'make generate' and commit"; exit 1; }

ptx:
	$(GO) run ./kernels/internal/genptx -o kernels/ptx

check-ptx: ptx
	@git diff --exit-code -- kernels/ptx && test -z "$$(git status --porcelain -- kernels/ptx)" || { echo "shipped PTX is stale: run 'make ptx' and commit"; exit 1; }

# The cluster targets' (FuzzDecodeMessage in runtime/cluster, FuzzDecodeBatch in its internal/wire) test binaries link protoactor and OpenTelemetry, whose
# coverage map makes each run about 8x dearer than the other targets' runs:
# given a count (FUZZTIME=200000x) it runs a quarter of it, given a
# duration the whole duration. Set MSG_FUZZTIME to choose.
MSG_FUZZTIME ?= $(if $(filter %x,$(FUZZTIME)),$(shell expr \( $(patsubst %x,%,$(FUZZTIME)) + 3 \) / 4)x,$(FUZZTIME))

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzAttach$$' -fuzztime $(FUZZTIME) ./p2pqueue
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeSlot$$' -fuzztime $(FUZZTIME) ./p2pqueue
	$(GO) test -run '^$$' -fuzz '^FuzzAttach$$' -fuzztime $(FUZZTIME) ./barrier
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeFloats$$' -fuzztime $(FUZZTIME) ./kernels
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeRecord$$' -fuzztime $(FUZZTIME) ./ringkernel
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeMessage$$' -fuzztime $(MSG_FUZZTIME) ./runtime/cluster
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeBatch$$' -fuzztime $(MSG_FUZZTIME) ./runtime/cluster/internal/wire

stress:
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -run '^(TestStressTogglesAndAFault|TestRebuildsUnderUniqueNamesLeakNothing)$$' -v ./runtime -args -stress

bench:
	$(GO) run ./cmd/ringactor bench $(BENCHFLAGS)

bench-go:
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) ./p2pqueue

# The GPU bundle: test binaries and the benchmark, built here with cgo, for a
# GPU machine that has the NVIDIA driver but no Go. Run there with
# `bash .gpu/run.sh OUTDIR`.
gpu-bundle:
	rm -rf .gpu && mkdir -p .gpu/bin
	CGO_ENABLED=1 $(GO) test -c -ldflags="-s -w" -o .gpu/bin/cuda.test ./cuda
	CGO_ENABLED=1 $(GO) test -c -ldflags="-s -w" -o .gpu/bin/ringkernel-cuda.test ./ringkernel/cuda
	CGO_ENABLED=1 $(GO) test -c -ldflags="-s -w" -o .gpu/bin/runtime.test ./runtime
	CGO_ENABLED=1 $(GO) test -c -ldflags="-s -w" -o .gpu/bin/collective.test ./runtime/collective
	CGO_ENABLED=1 $(GO) test -c -ldflags="-s -w" -o .gpu/bin/group.test ./runtime/group
	CGO_ENABLED=1 $(GO) build -ldflags="-s -w" -o .gpu/bin/ringactor ./cmd/ringactor
	CGO_ENABLED=1 $(GO) build -ldflags="-s -w" -o .gpu/bin/pipeline ./examples/pipeline
	for e in phases imagebatch tempering; do CGO_ENABLED=1 $(GO) build -ldflags="-s -w" -o .gpu/bin/$$e ./examples/$$e || exit 1; done
	# One xz archive (run.sh unpacks it with xz, or python3's lzma without):
	# its 64 MiB window shares what the ten binaries have in common, the Go
	# runtime and the 22 shipped PTX they all embed (about 24 MB with the three device loops; gzip, one
	# binary at a time, made 67 MiB, over the device machine's 64 MiB).
	tar --sort=name -C .gpu/bin -cf - . | xz --lzma2=preset=1,dict=64MiB -T1 > .gpu/bins.tar.xz
	rm -rf .gpu/bin
	cp kernels/ptx/ra_identity.ptx .gpu/   # the fence's lowering (run.sh: sass-fence)
	cp scripts/gpu-run.sh .gpu/run.sh
	@du -sh .gpu
