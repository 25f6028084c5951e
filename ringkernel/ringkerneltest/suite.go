package ringkerneltest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/ringkernel/ringkerneltest/internal/usertest"
)

// Capability is something a conformance case needs of a backend beyond
// the four methods of ringkernel.Backend. A backend that lacks one says so,
// with the reason, in Options.Lacks: the cases that need it skip with that
// reason (or, for ErrorTexts, check less).
type Capability int

//go:generate stringer -type=Capability -linecomment

const (
	// GoStageFunctions: ops registered with a Go function only run, and a
	// Go stage function that never returns can be abandoned (the loop is a
	// ringkernel.Abandoner).
	GoStageFunctions Capability = iota + 1 // Go stage functions
	// Workers: Stage.Workers runs a stateless stage on parallel workers.
	Workers // parallel workers
	// Steal: Kernel.Steal forwards queued messages to a thief (CmdSteal).
	Steal // work stealing
	// UserStages: an op registered at run time (kernels.Register) runs
	// through a ring kernel: its Go side on a Go loop, its CUDA side
	// compiled by NVRTC (on a GPU; over the emulated driver, which builds
	// the same source for the CPU and runs that).
	UserStages // user stages
	// ErrorTexts: a stage function's dead letters carry its error's text,
	// not only its ErrorCode. Without it the cases check the code only.
	ErrorTexts // stage error texts
	// CountsBeforeHead: the loop stores a batch's counters before it
	// releases the batch's head (docs/ARCHITECTURE.md §3.2), so a Status
	// snapshot finds every message below the head it read counted.
	// Without it the cases check the counters against what was sent only.
	CountsBeforeHead // counters stored before the head
	// Buffers: the backend is a devmem.Backend (buffers on its devices).
	Buffers // buffers
	// FlaggedLinks: the loop writes links of the experimental flagged
	// format (p2pqueue.FormatFlagged); every loop reads them.
	FlaggedLinks // flagged links
)

// Options describes the backend under test.
type Options struct {
	// Name names the backend in skip reasons and logs ("sim", "cuda").
	Name string
	// Devices is how many devices the backend has (default 1). A case
	// that places kernels on devices 0, 1, ... uses device d % Devices.
	Devices int
	// Lacks is the backend's skip table: each capability it does not
	// have, with the reason. It is the one place a backend says what it
	// cannot run and why.
	Lacks map[Capability]string
	// StressMessages is how many messages the stress case sends through
	// one kernel (default 200,000; a tenth of it under -short).
	StressMessages int
}

// Case is one conformance case: its name (the subtest's) and the
// capabilities it needs.
type Case struct {
	Name  string
	Needs []Capability
	run   func(*suite, *testing.T)
}

// Cases lists every conformance case in the order Run runs them.
func Cases() []Case { return append([]Case(nil), cases...) }

var cases = []Case{
	{"EveryBuiltinOpThroughAKernel", nil, (*suite).testEveryBuiltinOpThroughAKernel},
	{"OpErrorDeadLettersAndKeepsRunning", nil, (*suite).testOpErrorDeadLettersAndKeepsRunning},
	{"DelaySleepsOnTheDevice", nil, (*suite).testDelaySleepsOnTheDevice},
	{"Lifecycle", nil, (*suite).testLifecycle},
	{"TerminateWithoutDrain", nil, (*suite).testTerminateWithoutDrain},
	{"TerminateWithDrainWhileBusy", nil, (*suite).testTerminateWithDrainWhileBusy},
	{"TerminateDrainBoundedByContext", nil, (*suite).testTerminateDrainBoundedByContext},
	{"TerminateWithin100ms", nil, (*suite).testGPUTerminateWithin100ms},
	{"HeartbeatAdvances", nil, (*suite).testHeartbeatAdvances},
	{"StatusUnderLoad", nil, (*suite).testStatusUnderLoad},
	{"CountsItsWork", nil, (*suite).testCountsItsWork},
	{"StatefulSumInOrder", nil, (*suite).testStatefulSumInOrder},
	{"StatelessWorkers", []Capability{Workers}, (*suite).testStatelessWorkers},
	{"TraceRecords", nil, (*suite).testTraceRecords},
	{"TraceTimesAreCalibrated", nil, (*suite).testGPUTraceTimesAreCalibrated},
	{"BadMessagesDeadLettered", nil, (*suite).testBadMessagesDeadLettered},
	{"FanIn", nil, (*suite).testFanIn},
	{"CorruptLinkFaults", nil, (*suite).testCorruptLinkFaults},
	{"LaunchRefusesBadSpecs", nil, (*suite).testLaunchRefusesBadSpecs},
	{"StatusOutlivesTheControlBlock", nil, (*suite).testStatusOutlivesTheControlBlock},
	{"Routes", nil, (*suite).testRoutes},
	{"RoutePort", nil, (*suite).testRoutePort},
	{"RouteKeyMissingDeadLetters", nil, (*suite).testRouteKeyMissingDeadLetters},
	{"TypedStages", nil, (*suite).testTypedStages},
	{"TypedPassRoutesByKey", nil, (*suite).testTypedPassRoutesByKey},
	{"TwoStagesOverADeviceMemoryLink", nil, (*suite).testGPUTwoStagesOverADeviceMemoryLink},
	{"StressMessages", nil, (*suite).testGPUStressMillionMessages},
	{"FaultAbandonsAHungKernel", []Capability{GoStageFunctions}, sub(usertest.FaultAbandonsAHungKernel)},
	{"StealForwardsQueuedMessages", []Capability{Steal}, (*suite).testStealForwardsQueuedMessages},
	{"UserDefinedStage", []Capability{UserStages}, sub(usertest.UserDefinedStage)},
	{"BarrierArriveAndWait", nil, (*suite).testBarrierArriveAndWait},
	{"Buffers", []Capability{Buffers}, sub(usertest.Buffers)},
	{"BoundBuffers", []Capability{Buffers, UserStages}, sub(usertest.BoundBuffers)},
	{"FlaggedIngress", nil, (*suite).testFlaggedIngress},
	{"FlaggedLinks", []Capability{FlaggedLinks}, (*suite).testFlaggedLinks},
}

// Run runs every conformance case on the backend newBackend returns, each
// as a subtest of t named after the case. newBackend is called once per
// case, inside it: it may return a fresh backend or a shared one, and may
// skip (or fail) the case when the backend cannot start here (no driver).
// A case that needs a capability opts.Lacks lists skips with its reason.
// Each case stops every kernel it launched and frees what it allocated
// before it returns.
func Run(t *testing.T, newBackend func(testing.TB) rk.Backend, opts Options) {
	t.Helper()
	if opts.Devices < 1 {
		opts.Devices = 1
	}
	if opts.Name == "" {
		opts.Name = "backend"
	}
	for c, why := range opts.Lacks {
		if strings.HasPrefix(c.String(), "Capability(") || strings.TrimSpace(why) == "" {
			t.Fatalf("%s: skip table entry %v needs a known capability and a reason (%q)", opts.Name, c, why)
		}
	}
	for _, l := range SkipTable(opts) {
		t.Logf("%s skip table: %s", opts.Name, l)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			s := &suite{opts: opts}
			for _, need := range c.Needs {
				if why, ok := opts.Lacks[need]; ok {
					t.Skipf("%s backend has no %s: %s", opts.Name, need, why)
				}
			}
			s.b = newBackend(t)
			c.run(s, t)
		})
	}
}

// SkipTable renders opts.Lacks as lines "capability: reason (cases)", in a
// stable order: what the backend's test logs, and docs quote.
func SkipTable(opts Options) []string {
	var lines []string
	for c, why := range opts.Lacks {
		var names []string
		for _, k := range cases {
			for _, n := range k.Needs {
				if n == c {
					names = append(names, k.Name)
				}
			}
		}
		what := "checks less"
		if len(names) > 0 {
			what = "skips " + strings.Join(names, ", ")
		}
		lines = append(lines, fmt.Sprintf("%s: %s (%s)", c, why, what))
	}
	sort.Strings(lines)
	return lines
}

// suite is one case's view of the backend under test.
type suite struct {
	opts Options
	b    rk.Backend
}

func (s *suite) has(c Capability) bool { _, lacks := s.opts.Lacks[c]; return !lacks }

// backend is the backend under test.
func (s *suite) backend(testing.TB) rk.Backend { return s.b }

// device maps a case's device id onto the backend's devices.
func (s *suite) device(d int) int { return d % s.opts.Devices }

// newLink makes a link in mapped pinned memory of the backend's device 0,
// which kernels on every device and the host can use, freed at cleanup
// (after the kernels reading it, whose cleanups come later).
func (s *suite) newLink(t testing.TB, capacity uint32, floats int) *p2pqueue.Link {
	t.Helper()
	return s.allocLink(t, p2pqueue.MappedPinnedMemory, s.device(0), capacity, floats)
}

// allocLink makes a link in memory of kind on device dev.
func (s *suite) allocLink(t testing.TB, kind p2pqueue.MemoryKind, dev int, capacity uint32, floats int) *p2pqueue.Link {
	t.Helper()
	cfg := p2pqueue.ConfigFor(capacity, 4*floats)
	n, err := cfg.RegionSize()
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.b.Alloc(dev, n, kind)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.b.Free(r) })
	l, err := p2pqueue.Init(r, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// launchSpec is rk.Launch with a cleanup that terminates the kernel before
// the cleanups registered earlier free its links.
func (s *suite) launchSpec(t *testing.T, ctx context.Context, spec rk.Spec) (*rk.Kernel, error) {
	k, err := rk.Launch(ctx, s.b, spec)
	if err == nil {
		t.Cleanup(func() {
			c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			k.Terminate(c, false)
		})
	}
	return k, err
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func (s *suite) stressMessages() int {
	n := s.opts.StressMessages
	if n <= 0 {
		n = 200_000
	}
	if testing.Short() {
		n = max(n/10, 1000)
	}
	return n
}
