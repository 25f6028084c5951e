package hostbench_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/ringactor/ringactor/runtime/hostbench"
)

// b.N counts messages: ns/op and allocs/op are per message.

func BenchmarkSendBatch(b *testing.B) { bench(b, hostbench.SendBatch) }
func BenchmarkEgressFunc(b *testing.B) {
	bench(b, func(ctx context.Context, n int) (time.Duration, error) {
		return hostbench.Egress(ctx, n, hostbench.Func)
	})
}
func BenchmarkEgressBatch(b *testing.B) {
	bench(b, func(ctx context.Context, n int) (time.Duration, error) {
		return hostbench.Egress(ctx, n, hostbench.Lent)
	})
}
func BenchmarkEgressChan(b *testing.B) {
	bench(b, func(ctx context.Context, n int) (time.Duration, error) {
		return hostbench.Egress(ctx, n, hostbench.Chan)
	})
}
func BenchmarkQueueIn(b *testing.B)  { bench(b, hostbench.QueueIn) }
func BenchmarkQueueOut(b *testing.B) { bench(b, hostbench.QueueOut) }

func bench(b *testing.B, run func(context.Context, int) (time.Duration, error)) {
	b.ReportAllocs()
	cpu0 := cpuTime()
	el, err := run(context.Background(), b.N)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "msgs/s")
	// The process's CPU time per message: on a loaded machine, steadier
	// than the wall clock (time waiting for a core is not in it).
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/msg")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Each row moves every message and counts it once.
func TestRows(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{1, hostbench.Batch - 1, 3*hostbench.Depth + 7} {
		if _, err := hostbench.SendBatch(ctx, n); err != nil {
			t.Fatalf("SendBatch(%d): %v", n, err)
		}
		for _, s := range []hostbench.Sink{hostbench.Func, hostbench.Chan, hostbench.Lent} {
			if _, err := hostbench.Egress(ctx, n, s); err != nil {
				t.Fatalf("Egress(%d, %d): %v", n, s, err)
			}
		}
		if _, err := hostbench.QueueIn(ctx, n); err != nil {
			t.Fatalf("QueueIn(%d): %v", n, err)
		}
		if _, err := hostbench.QueueOut(ctx, n); err != nil {
			t.Fatalf("QueueOut(%d): %v", n, err)
		}
	}
}
