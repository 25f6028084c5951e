package nodeproc_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/ringactor/ringactor/internal/demo"
	"github.com/ringactor/ringactor/internal/nodeproc"
	"github.com/ringactor/ringactor/internal/racecheck"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/cluster"
)

// These tests run two real processes on 127.0.0.1: this test binary is the
// origin node "a" (one for the whole binary: protoactor remote is
// process-wide), and it starts itself again as node "b".

var (
	origin  *cluster.Node
	peers   []string
	bManage int
	// spans records the origin's spans, for the one-trace test.
	spans = tracetest.NewSpanRecorder()
)

func TestMain(m *testing.M) {
	nodeproc.Main()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ports, err := nodeproc.FreePorts(2)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	bManage = ports[1]
	peers = []string{fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])}
	rt, err := ra.New(ra.Config{Devices: ra.DeviceOptions{Backend: "sim", SimDevices: 2, Log: io.Discard},
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	origin, err = cluster.Join(ctx, rt, cluster.NodeConfig{Name: "a", ManagePort: ports[0], Peers: peers, RefreshTTL: 200 * time.Millisecond})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	origin.Leave(ctx)
	return code
}

// startB starts node "b" in a second process and waits until the origin
// sees it.
func startB(t *testing.T) *nodeproc.Proc { return startBWith(t, nodeproc.Config{}) }

// startBWith is startB with more of the child's configuration.
func startBWith(t *testing.T, cfg nodeproc.Config) *nodeproc.Proc {
	t.Helper()
	if racecheck.Enabled {
		t.Skip(racecheck.Reason)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg.Name, cfg.ManagePort, cfg.Peers, cfg.RefreshTTL = "b", bManage, peers, 200*time.Millisecond
	p, err := nodeproc.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		p.Stop(ctx)
	})
	if err := origin.WaitFor(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	return p
}

// guide is the guide's pipeline with its middle stage on node b.
func guide(name string) ra.PipelineSpec {
	spec := demo.Guide(name, [3]int{0, 0, 1})
	spec.Stages[1].Node = "b"
	return spec
}

func input(id uint64, j int) float32 { return float32((id*31+uint64(j)*7)%1000) / 8 }

func want(id uint64, j int) float32 {
	return float32(math.Sqrt(float64(2*input(id, j)))) + 1
}

// ledger records how each message ended, and fails the test on a message
// that ends twice or a wrong result.
type ledger struct {
	t         *testing.T
	mu        sync.Mutex
	ended     map[uint64]string
	delivered int
	reasons   map[string]int
}

func newLedger(t *testing.T) *ledger {
	return &ledger{t: t, ended: map[uint64]string{}, reasons: map[string]int{}}
}

func (l *ledger) end(id uint64, how string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if prev, ok := l.ended[id]; ok {
		l.t.Errorf("message %d ended twice: %s, then %s", id, prev, how)
	}
	l.ended[id] = how
}

func (l *ledger) result(r ra.Result) {
	for j, v := range r.Floats {
		if w := want(r.ID, j); math.Abs(float64(v-w)) > 1e-5*math.Max(1, math.Abs(float64(w))) {
			l.t.Errorf("message %d element %d: got %g, want %g", r.ID, j, v, w)
			break
		}
	}
	l.end(r.ID, "delivered")
	l.mu.Lock()
	l.delivered++
	l.mu.Unlock()
}

func (l *ledger) dead(d ra.DeadLetter) {
	if os.Getenv("DBG") != "" && l.reasons[d.Reason.String()] == 0 {
		l.t.Logf("first %s: %v", d.Reason, d)
	}
	l.end(d.ID, "dead: "+d.Reason.String())
	l.mu.Lock()
	l.reasons[d.Reason.String()]++
	l.mu.Unlock()
}

func (l *ledger) count() (delivered, ended int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.delivered, len(l.ended)
}

func batchOf(first uint64, n, floats int) []ra.Data {
	ds := make([]ra.Data, n)
	for i := range ds {
		id := first + uint64(i)
		v := make([]float32, floats)
		for j := range v {
			v[j] = input(id, j)
		}
		ds[i] = ra.Data{ID: id, Floats: v}
	}
	return ds
}

func TestRemoteStageInAnotherProcess(t *testing.T) {
	startB(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l := newLedger(t)
	spec := guide("remote-guide")
	spec.Deliver = ra.Sink{Func: l.result}
	spec.OnDeadLetter = l.dead
	cp, err := origin.Build(ctx, spec, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	desc := cp.Describe()
	if !strings.Contains(desc, `node "b" via protoactor remote`) || !strings.Contains(desc, "segment 0 on this node") {
		t.Errorf("Describe does not show the placement:\n%s", desc)
	}
	const n, batch = 20000, 100
	for i := 0; i < n; i += batch {
		if _, err := cp.SendBatch(ctx, batchOf(uint64(i+1), batch, 8)); err != nil {
			t.Fatal(err)
		}
	}
	if err := cp.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	st := cp.Stats()
	delivered, ended := l.count()
	if st.Sent != n || st.Delivered != n || st.DeadLettered != 0 || st.InFlight != 0 || delivered != n || ended != n {
		t.Fatalf("sent %d delivered %d dead %d in flight %d (ledger: %d delivered, %d ended; dead reasons %v), want all %d delivered",
			st.Sent, st.Delivered, st.DeadLettered, st.InFlight, delivered, ended, l.reasons, n)
	}
	if cp.Remote() != 0 {
		t.Errorf("%d messages still counted out on node b after a drained close", cp.Remote())
	}
}

// TestRemoteKillMidStream kills node b while messages stream through it: the
// messages it held are dead-lettered "remote unreachable", sending goes on
// without hanging, every message ends exactly once and the counters
// conserve; then a restarted b is rejoined and carries messages again.
func TestRemoteKillMidStream(t *testing.T) {
	b := startB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l := newLedger(t)
	spec := guide("remote-kill")
	spec.Deliver = ra.Sink{Func: l.result}
	spec.OnDeadLetter = l.dead
	cp, err := origin.Build(ctx, spec, cluster.Options{Window: 2048})
	if err != nil {
		t.Fatal(err)
	}
	const batch = 100
	next := uint64(1)
	send := func(k int) {
		for range k {
			sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
			_, err := cp.SendBatch(sctx, batchOf(next, batch, 8))
			scancel()
			next += batch
			if err != nil && sctx.Err() != nil {
				t.Fatalf("send hung after node b died: %v", err)
			}
		}
	}
	send(100) // 10,000 messages
	for {
		if d, _ := l.count(); d > 1000 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("no results came back from node b")
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.Kill()
	killedAt := time.Now()
	for len(cp.Unreachable()) == 0 {
		if time.Since(killedAt) > 20*time.Second {
			t.Fatal("node b's death was not noticed in 20 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("b killed; noticed after %v with %d delivered", time.Since(killedAt).Round(time.Millisecond), l.delivered)
	send(50) // sends while b is down end as "remote unreachable", promptly

	// Conservation while b is down: nothing is left out on it.
	waitQuiet(t, cp, l)
	st := cp.Stats()
	if st.Sent != st.Delivered+st.DeadLettered+st.InFlight {
		t.Errorf("counters do not conserve: %+v", st)
	}
	if l.reasons["remote unreachable"] == 0 {
		t.Errorf("no message was dead-lettered as remote unreachable: %v", l.reasons)
	}
	if st.InFlight != 0 {
		t.Errorf("%d messages in flight with node b dead", st.InFlight)
	}

	// A restarted b is rejoined and carries messages again.
	startB(t)
	if err := cp.Rejoin(ctx); err != nil {
		t.Fatal(err)
	}
	if u := cp.Unreachable(); len(u) != 0 {
		t.Fatalf("still unreachable after Rejoin: %v", u)
	}
	before, _ := l.count()
	send(20)
	if err := cp.Close(ctx, true); err != nil {
		t.Fatal(err)
	}
	after, ended := l.count()
	st = cp.Stats()
	t.Logf("sent %d, delivered %d, dead %d (%v), late %d; after rejoin %d delivered",
		st.Sent, st.Delivered, st.DeadLettered, l.reasons, cp.Late(), after-before)
	if after-before != 20*batch {
		t.Errorf("after Rejoin %d of %d messages delivered", after-before, 20*batch)
	}
	if st.Sent != next-1 || uint64(ended) != st.Sent || st.Sent != st.Delivered+st.DeadLettered || st.InFlight != 0 {
		t.Errorf("sent %d (ids %d), ended %d, delivered %d + dead %d, in flight %d: want every message ended once",
			st.Sent, next-1, ended, st.Delivered, st.DeadLettered, st.InFlight)
	}
}

// waitQuiet waits until the pipeline's account stops moving.
func waitQuiet(t *testing.T, cp *cluster.Pipeline, l *ledger) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if st := cp.Stats(); st.InFlight == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("messages still in flight 30 s after node b died: %+v", cp.Stats())
}
