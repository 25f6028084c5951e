package hostbench_test

import (
	"context"
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
func BenchmarkEgressChan(b *testing.B) {
	bench(b, func(ctx context.Context, n int) (time.Duration, error) {
		return hostbench.Egress(ctx, n, hostbench.Chan)
	})
}
func BenchmarkQueueIn(b *testing.B)  { bench(b, hostbench.QueueIn) }
func BenchmarkQueueOut(b *testing.B) { bench(b, hostbench.QueueOut) }

func bench(b *testing.B, run func(context.Context, int) (time.Duration, error)) {
	b.ReportAllocs()
	el, err := run(context.Background(), b.N)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "msgs/s")
}

// Each row moves every message and counts it once.
func TestRows(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{1, hostbench.Batch - 1, 3*hostbench.Depth + 7} {
		if _, err := hostbench.SendBatch(ctx, n); err != nil {
			t.Fatalf("SendBatch(%d): %v", n, err)
		}
		for _, s := range []hostbench.Sink{hostbench.Func, hostbench.Chan} {
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
