package gpubench

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringactor/ringactor/cuda/cudatest"
	rkcuda "github.com/ringactor/ringactor/ringkernel/cuda"
)

func durations(ns ...int64) []time.Duration {
	d := make([]time.Duration, len(ns))
	for i, n := range ns {
		d[i] = time.Duration(n)
	}
	return d
}

// checkRows holds Run's rows to what package bench promises: every
// baseline is a row, every ratio is msgs/s over the baseline's, and the
// round trip is compared with both per-message baselines.
func checkRows(t *testing.T, rows []Row) {
	t.Helper()
	byName := map[string]Row{}
	vs := map[string][]string{}
	for _, r := range rows {
		if r.Baseline == "" {
			byName[r.Name] = r
		}
	}
	for _, r := range rows {
		if r.Baseline == "" {
			if r.Ratio != 0 {
				t.Errorf("%s: ratio %g without a baseline", r.Name, r.Ratio)
			}
			continue
		}
		byName[r.Name] = r
		vs[r.Name] = append(vs[r.Name], r.Baseline)
	}
	for _, r := range rows {
		if r.Baseline == "" {
			continue
		}
		b, ok := byName[r.Baseline]
		if !ok {
			t.Errorf("%s names baseline %s, which is not a row", r.Name, r.Baseline)
			continue
		}
		if d := r.Ratio - r.MsgsPerSec/b.MsgsPerSec; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s vs %s: ratio %g, want %g", r.Name, r.Baseline, r.Ratio, r.MsgsPerSec/b.MsgsPerSec)
		}
	}
	if got := strings.Join(vs[rowRoundTrip], " "); got != rowLaunch+" "+rowGraph {
		t.Errorf("round trip compared with %q, want the launch and the graph baselines", got)
	}
	for _, name := range []string{rowRoundTrip, rowLaunch, rowGraph, rowHop, rowPipeline} {
		if _, ok := byName[name]; !ok {
			t.Errorf("no row %s", name)
		}
	}
}

func TestRows(t *testing.T) {
	// Below 2,048 ns package hist's percentiles are exact.
	got := rows(durations(100, 200, 300), durations(400, 500, 600), durations(200, 250, 1000),
		durations(5, 7, 9), 3e6)
	checkRows(t, got)
	want := []struct {
		name, baseline string
		p50            int64
		ratio          float64
	}{
		{rowRoundTrip, rowLaunch, 200, 2.5},
		{rowRoundTrip, rowGraph, 200, 1.25},
		{rowLaunch, "", 500, 0},
		{rowGraph, rowLaunch, 250, 2},
		{rowHop, "", 7, 0},
		{rowPipeline, "", 0, 0},
	}
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		r := got[i]
		if r.Name != w.name || r.Baseline != w.baseline || r.P50 != w.p50 || r.Ratio < w.ratio-1e-9 || r.Ratio > w.ratio+1e-9 {
			t.Errorf("row %d = %+v, want %+v", i, r, w)
		}
	}
	if got[4].MsgsPerSec != 0 || got[5].MsgsPerSec != 3e6 || got[2].MsgsPerSec != 1e9/500.0 {
		t.Errorf("msgs/s: hop %g, pipeline %g, launch %g", got[4].MsgsPerSec, got[5].MsgsPerSec, got[2].MsgsPerSec)
	}
	// Nothing measured is no division by zero.
	for _, r := range rows(nil, nil, nil, nil, 0) {
		if r.Ratio != 0 || r.MsgsPerSec != 0 {
			t.Errorf("empty measurement gave %+v", r)
		}
	}
}

func TestTraceCapacity(t *testing.T) {
	for _, c := range []struct{ total, want int }{{0, 1024}, {1000, 1024}, {1025, 2048}, {5500, 8192}, {1 << 20, 1 << 14}} {
		if got := traceCapacity(c.total); got != c.want || got&(got-1) != 0 {
			t.Errorf("traceCapacity(%d) = %d, want %d", c.total, got, c.want)
		}
	}
}

// The two kernels' pumps deliver independently: stage 2's record of a
// message often comes first. Every message with both records is a sample,
// whichever came first, and the pumps never wait on the collector.
func TestHopRecordsPairEitherOrder(t *testing.T) {
	h := newHopRecords()
	base := time.Unix(1000, 0)
	const n = 2000
	var wg sync.WaitGroup
	for side := range 2 {
		wg.Add(1)
		go func() { // one pump per kernel, neither ever read from
			defer wg.Done()
			for i := range n {
				id := uint64(i)
				if side == 1 {
					id = uint64(n - 1 - i) // the other pump runs in the opposite order
				}
				h.note(side, id, base.Add(time.Duration(id)*time.Microsecond+time.Duration(side)*time.Duration(id+1)))
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a pump blocked on the collector")
	}
	lat, missing, err := h.wait(context.Background(), 100, n, time.Second)
	if err != nil || missing != 0 || len(lat) != n-100 {
		t.Fatalf("%d samples, %d missing, %v", len(lat), missing, err)
	}
	for i, d := range lat {
		if want := time.Duration(100 + i + 1); d != want {
			t.Fatalf("sample %d = %v, want %v", i, d, want)
		}
	}
}

func TestHopRecordsWaitReportsMissing(t *testing.T) {
	h := newHopRecords()
	now := time.Now()
	h.note(0, 0, now)
	h.note(1, 0, now.Add(time.Microsecond))
	h.note(0, 1, now) // stage 2's record of message 1 never comes
	go func() {
		time.Sleep(20 * time.Millisecond)
		h.note(1, 2, now.Add(2*time.Microsecond)) // late, then stage 1's
		h.note(0, 2, now)
	}()
	lat, missing, err := h.wait(context.Background(), 0, 3, 200*time.Millisecond)
	if err != nil || missing != 1 || len(lat) != 2 {
		t.Fatalf("%v, %d missing, %v", lat, missing, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := h.wait(ctx, 0, 3, time.Hour); err == nil {
		t.Fatal("a cancelled wait returned no error")
	}
}

// TestRunOnGPU runs the whole benchmark small on GPU 0; it skips without
// one (fails under RINGACTOR_REQUIRE_GPU=1). Over the emulated driver
// TestMeasureOverEmulator runs it smaller.
func TestRunOnGPU(t *testing.T) {
	cudatest.Device(t, 0)
	cudatest.RealGPU(t, "2,000 launches per message take minutes on the emulated driver; TestMeasureOverEmulator runs the benchmark there")
	b, err := rkcuda.New(rkcuda.Options{})
	if err != nil {
		t.Fatalf("cuda backend: %v", err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var progress strings.Builder
	rows, err := Run(ctx, b, Options{Samples: 2000, Messages: 100_000, Progress: &progress})
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	checkRows(t, rows)
	for _, r := range rows {
		t.Logf("%-36s vs %-36s p50 %-10v p99 %-10v msgs/s %.0f ratio %.2f", r.Name, r.Baseline, time.Duration(r.P50), time.Duration(r.P99), r.MsgsPerSec, r.Ratio)
		if r.Name != rowPipeline && r.P50 <= 0 {
			t.Errorf("%s: p50 %d", r.Name, r.P50)
		}
	}
}
