package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/group"
)

// A skewed stage group: four simulated devices run the same stage, each
// message costs stealCost of service time, and the last device is
// stealSlow times slower. The static split waits for the slow device;
// with stealing, the idle instances take its queued work.

const (
	stealDevices = 4
	stealCost    = 20 * time.Microsecond
	stealSlow    = 4
)

func stealCosts() map[int]time.Duration {
	m := map[int]time.Duration{}
	for i := range stealDevices {
		m[i] = stealCost
	}
	m[stealDevices-1] = stealCost * stealSlow
	return m
}

func (s *simRuntime) group(steal bool) runner {
	return func(ctx context.Context, n int, lat *latencies) (time.Duration, error) {
		s.round++
		devs := make([]int, stealDevices)
		for i := range devs {
			devs[i] = i
		}
		c := newCounter(n)
		var mu sync.Mutex // results arrive on every instance's pump
		g, err := group.New(ctx, s.rt, group.Spec{
			Name: fmt.Sprintf("group-%d", s.round), Devices: devs, Policy: group.Static, Steal: steal,
			Stage: ra.StageSpec{Name: "work", Op: "scale", Params: []float32{2}, Capacity: 512},
			Deliver: ra.Sink{Func: func(r ra.Result) {
				mu.Lock()
				lat.arrive(r.ID)
				mu.Unlock()
				c.add()
			}},
		})
		if err != nil {
			return 0, err
		}
		defer g.Close(context.Background(), false)
		ds := make([]ra.Data, n)
		for i := range ds {
			ds[i].ID = uint64(i + 1)
			ds[i].Floats = []float32{input(ds[i].ID, 0)}
		}
		start := time.Now()
		for i := range ds {
			lat.send(ds[i].ID)
		}
		if _, err := g.SendBatch(ctx, ds); err != nil {
			return 0, err
		}
		if err := c.wait(ctx, "group"); err != nil {
			return 0, err
		}
		el := time.Since(start)
		if err := g.Close(ctx, true); err != nil {
			return 0, err
		}
		if st := g.Stats(); st.Delivered != uint64(n) || st.DeadLettered != 0 {
			return 0, fmt.Errorf("group account: sent %d, delivered %d, dead-lettered %d; want %d delivered", st.Sent, st.Delivered, st.DeadLettered, n)
		}
		return el, nil
	}
}
