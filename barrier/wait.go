package barrier

import (
	"time"

	"github.com/ringactor/ringactor/internal/wait"
)

// Waiting for the others: internal/wait's spin, yield, sleep, with sleeps
// capped low (a barrier is waited for on a hot path). The device side does
// the same with __nanosleep (ra_barrier_wait).
var barrierWait = wait.Policy{Spin: 64, Yield: 64, MinSleep: time.Microsecond, MaxSleep: 200 * time.Microsecond}
