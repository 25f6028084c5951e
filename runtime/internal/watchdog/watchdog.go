package watchdog

import "time"

// Stage is what a look sees of one stage.
type Stage struct {
	// Heartbeat is the last time its loop went round.
	Heartbeat time.Time
	// Running: its kernel is in a running state (launched, active, idle,
	// terminating); Active: it takes messages.
	Running, Active bool
	// Queued is how many messages wait in its in-links.
	Queued uint64
}

// Interval is how often a watch with limit looks: a quarter of the limit,
// at least a millisecond.
func Interval(limit time.Duration) time.Duration { return max(limit/4, time.Millisecond) }

// Watch decides, look by look, whether a stage of a pipeline hangs. It
// is not safe for concurrent use: one goroutine looks.
type Watch struct {
	limit, every time.Duration
	last         time.Time       // the last look
	beat         []time.Time     // each stage's heartbeat at the last look
	missed       []time.Duration // on-time watching since its heartbeat last moved
}

// New watches stages stages with limit, from start (its first look's
// interval begins there).
func New(stages int, limit time.Duration, start time.Time) *Watch {
	return &Watch{limit: limit, every: Interval(limit), last: start,
		beat: make([]time.Time, stages), missed: make([]time.Duration, stages)}
}

// Every is the interval at which to Look.
func (w *Watch) Every() time.Duration { return w.every }

// Look takes a look at the stages at now, st[i] being stage i. It returns
// the first stage (by index) whose miss has passed the limit, with the
// miss, or -1 when none has.
func (w *Watch) Look(now time.Time, st []Stage) (hung int, missed time.Duration) {
	elapsed := now.Sub(w.last)
	onTime := elapsed <= 2*w.every
	w.last = now
	running, moved := 0, 0
	for i, s := range st {
		if s.Running {
			running++
			if !s.Heartbeat.Equal(w.beat[i]) {
				moved++
			}
		}
	}
	hung = -1
	for i, s := range st {
		still := s.Heartbeat.Equal(w.beat[i])
		w.beat[i] = s.Heartbeat
		switch {
		case !still || !s.Active || s.Queued == 0:
			w.missed[i] = 0
		case !onTime:
			// The watchdog was held up too: the process stalled.
		case running > 1 && moved == 0:
			// No loop of the pipeline went round: the process
			// stalled (or every stage hung at once).
		default:
			w.missed[i] += elapsed
		}
		if hung < 0 && w.missed[i] > w.limit {
			hung, missed = i, w.missed[i]
		}
	}
	return hung, missed
}
