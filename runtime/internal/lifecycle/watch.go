package lifecycle

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/runtime/internal/watchdog"
)

// Watch looks at the stages' heartbeats until ctx ends, and faults the
// stage its watch (package watchdog: the decision, which a stall of the
// whole process does not fool) finds hung past limit: it calls fault with
// the stage and the cause, and returns. pass is called before each look
// (a test's model of a process stall holds it there); looks counts the
// looks that found none hung.
func (ss *Stages) Watch(ctx context.Context, limit time.Duration, pass func(), looks *atomic.Uint64, fault func(i int, cause string)) {
	w := watchdog.New(len(ss.List), limit, time.Now())
	tick := time.NewTicker(w.Every())
	defer tick.Stop()
	look := make([]watchdog.Stage, len(ss.List))
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		pass()
		now := time.Now()
		for i, s := range ss.List {
			st := s.Kernel.Status()
			look[i] = watchdog.Stage{Heartbeat: st.Heartbeat, Running: st.State.Running(), Active: st.State == rk.Active, Queued: st.Queued()}
		}
		if i, missed := w.Look(now, look); i >= 0 {
			fault(i, fmt.Sprintf("no heartbeat for %v (watched on time) with %d messages queued (HangAfter %v): its stage function has not returned",
				missed.Round(time.Millisecond), look[i].Queued, limit))
			return
		}
		looks.Add(1)
	}
}
