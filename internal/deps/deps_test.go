package deps

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// rule: the packages matching pkg (a go list pattern) must not depend,
// directly or not, on any import path with one of the forbidden prefixes.
type rule struct {
	pkg       string
	forbidden []string
	why       string
}

var rules = []rule{
	{"github.com/ringactor/ringactor/p2pqueue", []string{"github.com/asynkron/protoactor-go", "go.opentelemetry.io", "github.com/ringactor/ringactor/ringkernel", "github.com/ringactor/ringactor/runtime", "github.com/ringactor/ringactor/cuda"},
		"the link queue is pure Go below everything"},
	{"github.com/ringactor/ringactor/cuda", []string{"github.com/asynkron/protoactor-go", "go.opentelemetry.io", "github.com/ringactor/ringactor/ringkernel", "github.com/ringactor/ringactor/runtime"},
		"the driver bindings know nothing of ring kernels or actors"},
	{"github.com/ringactor/ringactor/cuda/nvrtc", []string{"github.com/asynkron/protoactor-go", "go.opentelemetry.io", "github.com/ringactor/ringactor/ringkernel", "github.com/ringactor/ringactor/runtime", "github.com/ringactor/ringactor/kernels"},
		"the runtime compiler binding is a leaf: source in, PTX out"},
	{"github.com/ringactor/ringactor/cuda/hostbuild", []string{"github.com/asynkron/protoactor-go", "go.opentelemetry.io", "github.com/ringactor/ringactor/ringkernel", "github.com/ringactor/ringactor/runtime"},
		"the emulated driver's host build sits beside the driver bindings and knows as little of ring kernels (ringkernel/cuda hands it the source)"},
	{"github.com/ringactor/ringactor/kernels", []string{"github.com/asynkron/protoactor-go", "go.opentelemetry.io", "github.com/ringactor/ringactor/ringkernel", "github.com/ringactor/ringactor/runtime", "github.com/ringactor/ringactor/cuda"},
		"kernel sources and Go references sit below ring kernels, beside the driver bindings: a compiler is handed in (kernels.Compiler)"},
	{"github.com/ringactor/ringactor/ringkernel/...", []string{"github.com/asynkron/protoactor-go", "go.opentelemetry.io", "github.com/ringactor/ringactor/runtime"},
		"nothing below runtime imports protoactor or otel"},
	{"github.com/ringactor/ringactor/ringkernel/ringkerneltest/...", []string{"github.com/ringactor/ringactor/ringkernel/sim", "github.com/ringactor/ringactor/ringkernel/cuda", "github.com/ringactor/ringactor/cuda", "github.com/NVIDIA/go-nvml"},
		"the conformance suite and its sub-packages of cases (internal/usertest) are handed the backend under test: they link none"},
	{"github.com/ringactor/ringactor/barrier", []string{"github.com/asynkron/protoactor-go", "go.opentelemetry.io", "github.com/ringactor/ringactor/runtime"},
		"the device barrier is below the actor layer"},
	{"github.com/ringactor/ringactor/runtime", []string{"github.com/asynkron/protoactor-go/remote", "github.com/asynkron/protoactor-go/cluster", "google.golang.org/grpc",
		"github.com/ringactor/ringactor/runtime/cluster", "github.com/ringactor/ringactor/runtime/group", "github.com/ringactor/ringactor/runtime/collective"},
		"a program of local pipelines links no cluster stack (msgpack, typed messages' codec, is no part of it), and runtime never imports its sub-packages (they build on its exported API)"},
	{"github.com/ringactor/ringactor/runtime/internal/msgtype", []string{"github.com/asynkron/protoactor-go", "go.opentelemetry.io", "github.com/ringactor/ringactor/ringkernel", "github.com/ringactor/ringactor/cuda"},
		"message types and their codecs are pure: no actors, no telemetry, no ring kernels"},
	{"github.com/ringactor/ringactor/runtime/group", []string{"github.com/asynkron/protoactor-go/remote", "github.com/asynkron/protoactor-go/cluster", "google.golang.org/grpc",
		"github.com/ringactor/ringactor/runtime/cluster", "github.com/ringactor/ringactor/runtime/collective"},
		"stage groups are local; each sub-package of runtime has one job"},
	{"github.com/ringactor/ringactor/runtime/collective", []string{"github.com/asynkron/protoactor-go/remote", "github.com/asynkron/protoactor-go/cluster", "google.golang.org/grpc",
		"github.com/ringactor/ringactor/runtime/cluster", "github.com/ringactor/ringactor/runtime/group"},
		"collectives are local; each sub-package of runtime has one job"},
	{"github.com/ringactor/ringactor/runtime/cluster", []string{"github.com/ringactor/ringactor/runtime/group", "github.com/ringactor/ringactor/runtime/collective"},
		"each sub-package of runtime has one job"},
	{"github.com/ringactor/ringactor/runtime/internal/devreg", []string{"github.com/asynkron/protoactor-go", "go.opentelemetry.io",
		"github.com/ringactor/ringactor/ringkernel/cuda", "github.com/ringactor/ringactor/cuda", "github.com/NVIDIA/go-nvml"},
		"the runtime's devices ask the registered kinds and their backends (the registry is ringkernel's): no actors, no telemetry, and no backend linked but the CPU's engine (runtime links the CUDA backend)"},
	{"github.com/ringactor/ringactor/internal/devlist", []string{"github.com/asynkron/protoactor-go", "go.opentelemetry.io", "github.com/ringactor/ringactor/runtime",
		"github.com/ringactor/ringactor/ringkernel", "github.com/ringactor/ringactor/cuda"},
		"reading -devices is a leaf below ringkernel (whose deprecated Registry.DeviceList calls it): it is handed a registry's Lookup and Chain and the error to wrap, and imports no ring kernels, runtime or backend"},
	{"github.com/ringactor/ringactor/runtime/...", []string{"github.com/ringactor/ringactor/internal/demo"},
		"the guide's demo pipeline is no part of the library: commands, examples, benchmarks and tests use it"},
	{"github.com/ringactor/ringactor/runtime/cluster/internal/wire", []string{"github.com/asynkron/protoactor-go/remote", "github.com/asynkron/protoactor-go/cluster", "google.golang.org/grpc",
		"github.com/ringactor/ringactor/runtime/cluster/internal/hosts"},
		"the wire format is pure bytes: no transport, no membership"},
	{"github.com/ringactor/ringactor/runtime/internal/graph", []string{"github.com/asynkron/protoactor-go", "go.opentelemetry.io", "github.com/ringactor/ringactor/cuda"},
		"a pipeline's graph is pure: plain stages in, indices and type ids out; no actors, no telemetry, no driver"},
	{"github.com/ringactor/ringactor/runtime/internal/links", []string{"github.com/asynkron/protoactor-go/actor", "go.opentelemetry.io",
		"github.com/ringactor/ringactor/ringkernel/cuda", "github.com/ringactor/ringactor/cuda", "github.com/NVIDIA/go-nvml"},
		"a link's memory knows no actors and no telemetry, and links no GPU backend: the backend's Alloc and Free are passed in"},
	{"github.com/ringactor/ringactor/runtime/internal/directory", []string{"github.com/ringactor/ringactor/ringkernel", "github.com/ringactor/ringactor/p2pqueue", "github.com/ringactor/ringactor/cuda", "github.com/asynkron/protoactor-go", "go.opentelemetry.io"},
		"the runtime's names are pure: a mutex and two maps"},
	{"github.com/ringactor/ringactor/runtime/internal/requests", []string{"github.com/asynkron/protoactor-go", "go.opentelemetry.io", "github.com/ringactor/ringactor/ringkernel", "github.com/ringactor/ringactor/p2pqueue"},
		"the correlation table is pure: ids and waiters, no actors, no kernels"},
	{"github.com/ringactor/ringactor/runtime/internal/watchdog", []string{"github.com/asynkron/protoactor-go", "go.opentelemetry.io", "github.com/ringactor/ringactor/ringkernel", "github.com/ringactor/ringactor/p2pqueue"},
		"the watchdog's decision is pure: looks in, the hung stage out; the runtime reads the kernels and faults"},
	{"github.com/ringactor/ringactor/internal/cudaemu", []string{"github.com/ringactor/ringactor/cuda", "github.com/ringactor/ringactor/ringkernel", "github.com/ringactor/ringactor/runtime"},
		"the emulated driver sits below the binding: package cuda's own tests build it (they import it), and it knows nothing of ring kernels beyond the device code it compiles"},
	{"github.com/ringactor/ringactor/runtime/internal/lifecycle", []string{"github.com/asynkron/protoactor-go", "go.opentelemetry.io", "github.com/ringactor/ringactor/cuda"},
		"ending stages works on ring kernels and links alone: the runtime stops the actors and ends the traces"},
	{"github.com/ringactor/ringactor/runtime/internal/ingress", []string{"github.com/asynkron/protoactor-go", "go.opentelemetry.io", "github.com/ringactor/ringactor/ringkernel", "github.com/ringactor/ringactor/cuda"},
		"the ingress is the host's end of a link: messages in through the queue, counted; it asks the runtime through hooks about kernels, traces and dead letters"},
	{"github.com/ringactor/ringactor/runtime/cluster/internal/hosts", []string{"github.com/ringactor/ringactor/ringkernel", "github.com/ringactor/ringactor/p2pqueue", "github.com/ringactor/ringactor/cuda"},
		"the fixed-host-list provider knows protoactor cluster membership only, nothing of ring kernels"},
	{"github.com/ringactor/ringactor/runtime/metrics", []string{"github.com/ringactor/ringactor/p2pqueue", "github.com/ringactor/ringactor/ringkernel", "github.com/ringactor/ringactor/kernels",
		"github.com/ringactor/ringactor/cuda", "github.com/ringactor/ringactor/runtime/internal", "github.com/asynkron/protoactor-go", "go.opentelemetry.io"},
		"the metrics' data model is plain types and names: it imports nothing of ours, no actors, no telemetry SDK or API"},
	{"github.com/ringactor/ringactor/runtime/internal/telemetry", []string{"github.com/asynkron/protoactor-go", "go.opentelemetry.io/otel/sdk", "github.com/ringactor/ringactor/cuda"},
		"a pipeline's telemetry joins spans and meter on the OpenTelemetry API: no actors, no SDK, no driver"},
	{"github.com/ringactor/ringactor/runtime/internal/spans", []string{"github.com/asynkron/protoactor-go", "go.opentelemetry.io/otel/metric", "go.opentelemetry.io/otel/sdk",
		"github.com/ringactor/ringactor/runtime/internal/meter"},
		"message spans know no actors and no metrics, and use the OpenTelemetry API only (the SDK is the user's choice)"},
	{"github.com/ringactor/ringactor/runtime/internal/meter", []string{"github.com/asynkron/protoactor-go", "go.opentelemetry.io/otel/trace", "go.opentelemetry.io/otel/sdk",
		"github.com/ringactor/ringactor/runtime/internal/spans"},
		"metrics know no actors and no traces, and use the OpenTelemetry API only (the SDK is the user's choice)"},
	{"github.com/ringactor/ringactor/runtime/internal/msgconv", []string{"github.com/asynkron/protoactor-go", "go.opentelemetry.io/otel/trace", "go.opentelemetry.io/otel/metric", "go.opentelemetry.io/otel/sdk",
		"github.com/ringactor/ringactor/ringkernel", "github.com/ringactor/ringactor/runtime/internal/spans", "github.com/ringactor/ringactor/runtime/internal/meter"},
		"the messaging conventions are attributes and names: the attribute API and semconv only, so that spans (no metrics) and every package that makes spans may use them"},
	{"github.com/ringactor/ringactor/internal/otelsetup", []string{"github.com/asynkron/protoactor-go", "github.com/ringactor/ringactor/runtime", "github.com/ringactor/ringactor/ringkernel", "github.com/ringactor/ringactor/cuda"},
		"the programs' telemetry setup knows OpenTelemetry's SDK and exporters, nothing of the runtime: a program hands its providers to runtime.Config"},
	{"github.com/ringactor/ringactor/runtime/internal/egress", []string{"github.com/asynkron/protoactor-go/remote", "github.com/asynkron/protoactor-go/cluster", "google.golang.org/grpc",
		"github.com/ringactor/ringactor/ringkernel/sim", "github.com/ringactor/ringactor/ringkernel/cuda", "github.com/ringactor/ringactor/cuda",
		"github.com/ringactor/ringactor/runtime/internal/spans", "github.com/ringactor/ringactor/runtime/internal/meter", "github.com/ringactor/ringactor/runtime/internal/requests"},
		"the egress pump decodes, counts and hands over: no transport, no backend, and a result's request and trace are its Host's (runtime's)"},
}

// directRules: the packages matching pkg must not import, themselves (not
// counting what the packages they import import), any import path with one
// of the forbidden prefixes. runtime links the CUDA backend by default
// (ringkernel/cuda registers its kind), so the driver and NVML are below it;
// but runtime's own code is backend-neutral: it asks the backend
// (ringkernel.DeviceLister, Supporter, Sampler) and never calls the driver
// or NVML itself.
var directRules = []rule{
	{"github.com/ringactor/ringactor/runtime", []string{"github.com/ringactor/ringactor/cuda", "github.com/NVIDIA/go-nvml"},
		"runtime holds no CUDA or NVML code: the CUDA backend (ringkernel/cuda) lists its GPUs and reads NVML, and runtime asks it (docs/ARCHITECTURE.md §12)"},
	{"github.com/ringactor/ringactor/runtime/internal/extid", []string{"github.com/ringactor/ringactor"},
		"the extension's id and roles are what runtime and runtime/internal/ext share without a cycle: it imports nothing of ours"},
	{"github.com/ringactor/ringactor/runtime/internal/egress", []string{"go.opentelemetry.io"},
		"the egress pump traces and meters nothing itself: its Host (runtime) ends a sampled result's trace"},
	{"github.com/ringactor/ringactor/version", []string{"github.com/ringactor/ringactor", "go.opentelemetry.io", "github.com/asynkron/protoactor-go"},
		"the version is a constant and the build info: anything may import it (the tracers, the commands), so it imports nothing of ours and nothing heavy"},
	{"github.com/ringactor/ringactor/internal/hist", []string{"github.com/ringactor/ringactor", "go.opentelemetry.io", "github.com/asynkron/protoactor-go"},
		"the latency histogram is the HDR histogram behind a mutex: the runtime and the benchmarks share it, and it imports nothing of ours, no telemetry, no actors"},
	{"github.com/ringactor/ringactor/runtime/internal/fanout", []string{"github.com/ringactor/ringactor", "go.opentelemetry.io"},
		"the dead-letter fan-out knows the subscribers and the send it is handed, nothing of ours and no telemetry"},
	{"github.com/ringactor/ringactor/runtime/internal/stageactor", []string{"go.opentelemetry.io", "github.com/ringactor/ringactor/p2pqueue",
		"github.com/ringactor/ringactor/ringkernel/sim", "github.com/ringactor/ringactor/ringkernel/cuda", "github.com/ringactor/ringactor/cuda"},
		"a stage's actor is protoactor and its kernel's commands: no telemetry and no links of its own (runtime's stage writes the ingress, behind stageactor.Stage), no backend"},
}

// onlyRule: the package pkg may be imported (by non-test files) only by
// the packages under one of the prefixes in by.
type onlyRule struct {
	pkg string
	by  []string
	why string
}

var onlyRules = []onlyRule{
	{"github.com/ringactor/ringactor/runtime/internal/ext", []string{"github.com/ringactor/ringactor/runtime/group", "github.com/ringactor/ringactor/runtime/cluster", "github.com/ringactor/ringactor/runtime/collective"},
		"runtime's hooks for its sub-packages are theirs alone: the rest of the module uses runtime's exported API"},
	{"github.com/ringactor/ringactor/runtime/internal/flowreq", []string{"github.com/ringactor/ringactor/runtime/group", "github.com/ringactor/ringactor/runtime/cluster"},
		"Request for the flows made of pipelines (groups, cluster pipelines); runtime.Pipeline keeps its own"},
}

// The common ring-kernel package links no backend (ggml-backend's rule:
// the core never names a backend); backends register their kinds with it.
var commonRule = rule{"github.com/ringactor/ringactor/ringkernel",
	[]string{"github.com/ringactor/ringactor/ringkernel/sim", "github.com/ringactor/ringactor/ringkernel/cuda", "github.com/ringactor/ringactor/cuda", "github.com/NVIDIA/go-nvml"},
	"ringkernel is the interface every backend implements; backends import it, never the other way"}

// imports lists what the packages matching pattern import themselves
// (their non-test files).
func imports(t *testing.T, pattern string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, pattern).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -f .Imports %s: %v\n%s", pattern, err, out)
	}
	return strings.Fields(string(out))
}

// deps lists every package pattern's packages depend on, themselves included.
func deps(t *testing.T, pattern string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pattern).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pattern, err, out)
	}
	return strings.Fields(string(out))
}

// importers lists, for every package of the module, the packages its
// non-test files import.
func importers(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "github.com/ringactor/ringactor/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -f .Imports ./...: %v\n%s", err, out)
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		m[f[0]] = f[1:]
	}
	return m
}

// The arrows point one way: see docs/ARCHITECTURE.md §1.
func TestImportRules(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("no go command to list imports: %v", err)
	}
	for _, r := range append(rules, commonRule) {
		for _, d := range deps(t, r.pkg) {
			for _, f := range r.forbidden {
				if d == f || strings.HasPrefix(d, f+"/") {
					t.Errorf("%s depends on %s: %s", r.pkg, d, r.why)
				}
			}
		}
	}
	for _, r := range directRules {
		for _, d := range imports(t, r.pkg) {
			for _, f := range r.forbidden {
				if d == f || strings.HasPrefix(d, f+"/") {
					t.Errorf("%s imports %s: %s", r.pkg, d, r.why)
				}
			}
		}
	}
	all := importers(t)
	for _, r := range onlyRules {
		for pkg, imps := range all {
			if !slices.Contains(imps, r.pkg) || slices.ContainsFunc(r.by, func(b string) bool { return pkg == b || strings.HasPrefix(pkg, b+"/") }) {
				continue
			}
			t.Errorf("%s imports %s: %s", pkg, r.pkg, r.why)
		}
	}
}
