package bench

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/hostbench"
)

// The host's two halves of the data path alone, no device
// (runtime/hostbench): SendBatch's encode into an ingress link whose
// consumer only releases, and the egress pump's decode into Results for
// a Func or a Chan sink, from a link a Go loop fills. Each beside the
// same loops around a bare link, or a bare channel of Results.

const hostNote = "no device: a Go loop at the link's other end (releases what it reads; publishes prebuilt results)"

func hostComparisons() []comparison {
	run := func(f func(context.Context, int) (time.Duration, error)) runner {
		return func(ctx context.Context, n int, _ *latencies) (time.Duration, error) { return f(ctx, n) }
	}
	egress := func(s hostbench.Sink) runner {
		return run(func(ctx context.Context, n int) (time.Duration, error) { return hostbench.Egress(ctx, n, s) })
	}
	return []comparison{
		{
			candidate: member{"host/sendbatch", "host", run(hostbench.SendBatch)},
			baselines: []member{{"host/queue-in-64B", "host", run(hostbench.QueueIn)}},
			messages:  4_000_000, allocs: true, note: hostNote,
		},
		{
			candidate: member{"host/egress-func", "host", egress(hostbench.Func)},
			baselines: []member{{"host/queue-out-64B", "host", run(hostbench.QueueOut)}},
			messages:  4_000_000, allocs: true, note: hostNote,
		},
		{
			candidate: member{"host/egress-batch", "host", egress(hostbench.Lent)},
			baselines: []member{{"host/queue-out-64B", "host", run(hostbench.QueueOut)}},
			messages:  4_000_000, allocs: true, note: hostNote,
		},
		{
			candidate: member{"host/egress-chan", "host", egress(hostbench.Chan)},
			baselines: []member{{"host/chan-result", "go", run(chanResults)}},
			messages:  2_000_000, allocs: true, note: hostNote,
		},
	}
}

// chanResults is a Chan sink's floor: n Results, each with its own 64
// bytes of floats (one allocation per batch of hostbench.Batch, as the
// pump makes), sent by one goroutine through a channel of
// hostbench.Batch and read by another.
func chanResults(ctx context.Context, n int) (time.Duration, error) {
	ch := make(chan ra.Result, hostbench.Batch)
	start := time.Now()
	go func() {
		defer close(ch)
		var slab []float32
		for i := range n {
			if len(slab) == 0 {
				slab = make([]float32, hostbench.Batch*hostbench.Floats)
			}
			r := ra.Result{ID: uint64(i + 1), Floats: slab[:hostbench.Floats:hostbench.Floats], Stage: "host"}
			slab = slab[hostbench.Floats:]
			select {
			case ch <- r:
			case <-ctx.Done():
				return
			}
		}
	}()
	got := 0
	for r := range ch {
		if r.Floats != nil {
			got++
		}
	}
	if got != n {
		return 0, fmt.Errorf("sent %d results, %d arrived: %v", n, got, ctx.Err())
	}
	return time.Since(start), nil
}

// mallocs is the process's heap allocations so far.
func mallocs() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.Mallocs
}

// printHost says, under the table, what the host rows cost per message:
// ns (from msgs/s) and heap allocations (the whole process's while the
// row ran, both ends of the link).
func printHost(w io.Writer, rows []Row) {
	seen := map[string]bool{}
	for _, r := range rows {
		if !strings.HasPrefix(r.Name, "host/") || seen[r.Name] || r.MsgsPerSec == 0 {
			continue
		}
		seen[r.Name] = true
		fmt.Fprintf(w, "%s: %.1f ns/msg, %.3f allocs/msg\n", r.Name, 1e9/r.MsgsPerSec, r.AllocsPerMsg)
	}
}
