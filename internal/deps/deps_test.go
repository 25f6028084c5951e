package deps

import (
	"os/exec"
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
	{"github.com/ringactor/ringactor/kernels", []string{"github.com/asynkron/protoactor-go", "go.opentelemetry.io", "github.com/ringactor/ringactor/ringkernel", "github.com/ringactor/ringactor/runtime", "github.com/ringactor/ringactor/cuda"},
		"kernel sources and Go references sit below ring kernels, beside the driver bindings: a compiler is handed in (kernels.Compiler)"},
	{"github.com/ringactor/ringactor/ringkernel/...", []string{"github.com/asynkron/protoactor-go", "go.opentelemetry.io", "github.com/ringactor/ringactor/runtime"},
		"nothing below runtime imports protoactor or otel"},
	{"github.com/ringactor/ringactor/barrier", []string{"github.com/asynkron/protoactor-go", "go.opentelemetry.io", "github.com/ringactor/ringactor/runtime"},
		"the device barrier is below the actor layer"},
	{"github.com/ringactor/ringactor/runtime", []string{"github.com/asynkron/protoactor-go/remote", "github.com/asynkron/protoactor-go/cluster", "google.golang.org/grpc",
		"github.com/ringactor/ringactor/runtime/cluster", "github.com/ringactor/ringactor/runtime/group", "github.com/ringactor/ringactor/runtime/collective"},
		"a program of local pipelines links no cluster stack (msgpack, typed messages' codec, is no part of it), and runtime never imports its sub-packages (they build on its exported API)"},
	{"github.com/ringactor/ringactor/runtime/group", []string{"github.com/asynkron/protoactor-go/remote", "github.com/asynkron/protoactor-go/cluster", "google.golang.org/grpc",
		"github.com/ringactor/ringactor/runtime/cluster", "github.com/ringactor/ringactor/runtime/collective"},
		"stage groups are local; each sub-package of runtime has one job"},
	{"github.com/ringactor/ringactor/runtime/collective", []string{"github.com/asynkron/protoactor-go/remote", "github.com/asynkron/protoactor-go/cluster", "google.golang.org/grpc",
		"github.com/ringactor/ringactor/runtime/cluster", "github.com/ringactor/ringactor/runtime/group"},
		"collectives are local; each sub-package of runtime has one job"},
	{"github.com/ringactor/ringactor/runtime/cluster", []string{"github.com/ringactor/ringactor/runtime/group", "github.com/ringactor/ringactor/runtime/collective"},
		"each sub-package of runtime has one job"},
	{"github.com/ringactor/ringactor/runtime/cluster/internal/wire", []string{"github.com/asynkron/protoactor-go/remote", "github.com/asynkron/protoactor-go/cluster", "google.golang.org/grpc",
		"github.com/ringactor/ringactor/runtime/cluster/internal/hosts"},
		"the wire format is pure bytes: no transport, no membership"},
	{"github.com/ringactor/ringactor/internal/cudaemu", []string{"github.com/ringactor/ringactor/cuda", "github.com/ringactor/ringactor/ringkernel", "github.com/ringactor/ringactor/runtime"},
		"the emulated driver sits below the binding: package cuda's own tests build it (they import it), and it knows nothing of ring kernels beyond the device code it compiles"},
	{"github.com/ringactor/ringactor/runtime/cluster/internal/hosts", []string{"github.com/ringactor/ringactor/ringkernel", "github.com/ringactor/ringactor/p2pqueue", "github.com/ringactor/ringactor/cuda"},
		"the fixed-host-list provider knows protoactor cluster membership only, nothing of ring kernels"},
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
}
