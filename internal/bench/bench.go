package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	ra "github.com/ringactor/ringactor/runtime"
)

// Row is one measured row. Ratio is MsgsPerSec over the baseline row's
// MsgsPerSec, or 0 when Baseline is "".
type Row struct {
	Name       string  `json:"name"`
	Backend    string  `json:"backend"`
	MsgsPerSec float64 `json:"msgs_per_sec"`
	P50        int64   `json:"p50_ns"`
	P99        int64   `json:"p99_ns"`
	Baseline   string  `json:"baseline"`
	Ratio      float64 `json:"ratio"`
	// Bytes and GBPerSec are the payload size and the payload bytes moved
	// per second, for rows that move one size of message (the P2P rows).
	Bytes    int     `json:"message_bytes,omitempty"`
	GBPerSec float64 `json:"gb_per_sec,omitempty"`
	// Note says what a row measures where its name does not (simulated
	// devices measure memory copies).
	Note string `json:"note,omitempty"`
	// Limit names the limit row measured in the same rounds, and OfLimit
	// is MsgsPerSec over that row's: how close a pipeline row comes to
	// what its work costs without queues (the pipeline rows only).
	Limit   string  `json:"limit,omitempty"`
	OfLimit float64 `json:"of_limit,omitempty"`
	// Path is the path a copy row's copies took: peer, staged (through
	// pinned host memory), local, or host (the CPU at an end).
	Path string `json:"path,omitempty"`
	// AllocsPerMsg is the process's heap allocations per message while
	// the row ran, median over the rounds (the host/ rows only).
	AllocsPerMsg float64 `json:"allocs_per_msg,omitempty"`
}

// Options sizes and selects a run.
type Options struct {
	// Quick runs fewer rounds of fewer messages: the whole suite within a
	// minute on a 2-core machine.
	Quick bool
	// Only runs the comparisons any of whose row names start with it.
	Only string
	// Scale multiplies every message count (default 1); tests use a small
	// one.
	Scale float64
	// Progress receives one line per measurement while the run goes on,
	// ending with the time left (", eta 1m20s") after the first.
	Progress io.Writer
	// Devices are the devices the P2P rows open (default: the GPUs the
	// CUDA driver reports, else simulated devices, as ringactor devices
	// shows).
	Devices ra.DeviceOptions
	// GPU, when set, measures the GPU rows; it returns ErrNoGPU (wrapped)
	// on a machine without one, and those rows are then left out.
	GPU func(ctx context.Context, quick bool, progress io.Writer) ([]Row, error)
}

// ErrNoGPU: the GPU rows cannot run here. Run reports it on Progress and
// goes on without them.
var ErrNoGPU = errors.New("bench: no GPU")

// ErrNothingSelected: Only matched no row.
var ErrNothingSelected = errors.New("bench: no benchmark matches")

// runner runs one member of a comparison over n messages, recording the
// latency of sampled messages, and returns the time it took.
type runner func(ctx context.Context, n int, lat *latencies) (time.Duration, error)

type member struct {
	name, backend string
	run           runner
}

// comparison is a candidate measured beside its baselines, round by
// round, alternating which goes first so drift on a shared machine
// cancels.
type comparison struct {
	candidate member
	baselines []member
	// limits are measured in the same rounds; the first is the limit every
	// other row of the comparison is reported against (Row.OfLimit).
	limits   []member
	messages int // per run, at full size
	least    int // the fewest per run, whatever the scale (default 1000)
	bytes    int // payload bytes per message, for GB/s (0: not reported)
	note     string
	setup    func(ctx context.Context) (teardown func(), err error)
	// skip, when it returns a reason, leaves the comparison out of this run
	// (said on Progress).
	skip func() string
	// rounds, when set, is the most rounds it is measured in (the copy
	// rows' large sizes: one copy of 64 MiB is a measurement).
	rounds int
	// path, when set, is the path the candidate's copies took (Row.Path).
	path func() string
	// allocs: count heap allocations per message (Row.AllocsPerMsg).
	allocs bool
}

func (c comparison) names() []string {
	n := []string{c.candidate.name}
	for _, b := range append(c.baselines, c.limits...) {
		n = append(n, b.name)
	}
	return n
}

func (c comparison) selected(only string) bool {
	for _, n := range c.names() {
		if strings.HasPrefix(n, only) {
			return true
		}
	}
	return false
}

// Names lists every CPU row the suite measures, in order, then the shape
// of the P2P rows (the GPU rows come from Options.GPU).
func Names() []string {
	var n []string
	for _, c := range suite() {
		n = append(n, c.names()...)
	}
	return append(append(n, p2pNames()...), copyNames()...)
}

// wants reports whether -only selects rows under prefix (a group of rows
// whose names are known only at run time).
func wants(only, prefix string) bool {
	return only == "" || strings.HasPrefix(prefix, only) || strings.HasPrefix(only, prefix)
}

// Run measures the selected comparisons and returns their rows: each
// candidate row once per baseline (with that baseline's ratio), then the
// baseline rows.
func Run(ctx context.Context, o Options) ([]Row, error) {
	if o.Scale <= 0 {
		o.Scale = 1
	}
	say := func(f string, a ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "bench: "+f+"\n", a...)
		}
	}
	rounds := 5
	scale := o.Scale
	if o.Quick {
		rounds, scale = 3, scale/2
	}
	var todo []comparison
	for _, c := range suite() {
		if c.selected(o.Only) {
			todo = append(todo, c)
		}
	}
	wantGPU := o.GPU != nil && wants(o.Only, "gpu/")
	// The P2P rows, pipeline/cuda-3stage and allreduce/cuda-* run on the
	// devices of Options.Devices, opened once for them.
	wantDevices := wants(o.Only, "p2p/") || wants(o.Only, "pipeline/cuda") || wants(o.Only, "allreduce/cuda")
	wantCopy := wants(o.Only, "copy/")
	if len(todo) == 0 && !wantGPU && !wantDevices && !wantCopy {
		return nil, fmt.Errorf("%w %q; rows: %s, gpu/...", ErrNothingSelected, o.Only, strings.Join(Names(), ", "))
	}
	closeP2P := func() {}
	if wantDevices {
		rt, cs, err := p2pDevices(o, say)
		if err != nil {
			return nil, err
		}
		// Closed before the GPU rows, which open the driver themselves.
		var once sync.Once
		closeP2P = func() { once.Do(func() { rt.Close() }) }
		defer closeP2P()
		for _, c := range cs {
			if c.selected(o.Only) {
				todo = append(todo, c)
			}
		}
		if len(todo) == 0 && !wantGPU && !wantCopy {
			return nil, fmt.Errorf("%w %q: the device rows here are %s", ErrNothingSelected, o.Only, p2pRange(cs))
		}
	}
	if wantCopy {
		cr, cs, err := copyDevices(ctx, o, say)
		if err != nil {
			return nil, err
		}
		defer cr.close()
		for _, c := range cs {
			if c.selected(o.Only) {
				todo = append(todo, c)
			}
		}
		if len(todo) == 0 && !wantGPU {
			return nil, fmt.Errorf("%w %q: the copy rows here are %s ... %s", ErrNothingSelected, o.Only, cs[0].candidate.name, cs[len(cs)-1].candidate.name)
		}
	}
	// The time left is the time per finished run (of one member over n
	// messages) times the runs to go.
	steps, done, start := 0, 0, time.Now()
	roundsOf := func(c comparison) int {
		if c.rounds > 0 {
			return min(rounds, c.rounds)
		}
		return rounds
	}
	for _, c := range todo {
		steps += roundsOf(c) * len(c.names())
	}
	var rows []Row
	for i, c := range todo {
		if c.skip != nil {
			if why := c.skip(); why != "" {
				say("%s left out: %s", c.candidate.name, why)
				steps -= roundsOf(c) * len(c.names())
				continue
			}
		}
		least := c.least
		if least == 0 {
			least = 1000
		}
		n := max(least, int(float64(c.messages)*scale))
		cr, err := c.measure(ctx, n, roundsOf(c), func(round int, m member) {
			say("[%d/%d] %-26s round %d/%d, %d messages%s", i+1, len(todo), m.name, round+1, roundsOf(c), n, eta(time.Since(start), done, steps))
			done++
		})
		if err != nil {
			return rows, fmt.Errorf("%s: %w", c.candidate.name, err)
		}
		rows = append(rows, cr...)
	}
	closeP2P()
	if wantGPU {
		say("GPU rows")
		gr, err := o.GPU(ctx, o.Quick, o.Progress)
		switch {
		case errors.Is(err, ErrNoGPU):
			say("GPU rows left out: %v", err)
		case err != nil:
			return rows, fmt.Errorf("GPU rows: %w", err)
		default:
			rows = append(rows, gr...)
		}
	}
	return rows, nil
}

func (c comparison) measure(ctx context.Context, n, rounds int, progress func(int, member)) ([]Row, error) {
	if c.setup != nil {
		teardown, err := c.setup(ctx)
		if err != nil {
			return nil, err
		}
		defer teardown()
	}
	all := append(append([]member{c.candidate}, c.baselines...), c.limits...)
	rates, allocs := make([][]float64, len(all)), make([][]float64, len(all))
	lats := make([]*latencies, len(all))
	for i := range lats {
		lats[i] = newLatencies(n)
	}
	for r := range rounds {
		for k := range all {
			// Rotate who goes first each round.
			i := (k + r) % len(all)
			progress(r, all[i])
			lats[i].reset(n)
			var m0 uint64
			if c.allocs {
				m0 = mallocs()
			}
			el, err := all[i].run(ctx, n, lats[i])
			if c.allocs {
				allocs[i] = append(allocs[i], float64(mallocs()-m0)/float64(n))
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", all[i].name, err)
			}
			if el <= 0 {
				el = time.Nanosecond
			}
			rates[i] = append(rates[i], float64(n)/el.Seconds())
			lats[i].keep()
		}
	}
	rows := make([]Row, len(all))
	for i, m := range all {
		p50, p99 := lats[i].percentiles()
		rows[i] = Row{Name: m.name, Backend: m.backend, MsgsPerSec: median(rates[i]), P50: p50, P99: p99, Note: c.note}
		if c.allocs {
			rows[i].AllocsPerMsg = median(allocs[i])
		}
		if c.bytes > 0 {
			rows[i].Bytes, rows[i].GBPerSec = c.bytes, rows[i].MsgsPerSec*float64(c.bytes)/1e9
		}
	}
	if c.path != nil {
		rows[0].Path = c.path()
	}
	if len(c.limits) > 0 {
		lim := rows[1+len(c.baselines)]
		for i := range 1 + len(c.baselines) {
			rows[i].Limit, rows[i].OfLimit = lim.Name, rows[i].MsgsPerSec/lim.MsgsPerSec
		}
	}
	if len(c.baselines) == 0 {
		return rows, nil
	}
	var out []Row
	for i := range c.baselines {
		r := rows[0]
		r.Baseline = rows[i+1].Name
		r.Ratio = r.MsgsPerSec / rows[i+1].MsgsPerSec
		out = append(out, r)
	}
	return append(out, rows[1:]...), nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Print writes rows as a table.
func Print(w io.Writer, rows []Row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "name\tbackend\tmsgs/s\tp50\tp99\tvs\tratio\tof limit\t")
	for _, r := range rows {
		ratio, of := "", ""
		if r.Baseline != "" {
			ratio = fmt.Sprintf("%.2fx", r.Ratio)
		}
		if r.Limit != "" {
			of = fmt.Sprintf("%.0f%%", 100*r.OfLimit)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Name, r.Backend, Rate(r.MsgsPerSec), dur(r.P50), dur(r.P99), r.Baseline, ratio, of)
	}
	tw.Flush()
	printNotes(w, rows)
	printHost(w, rows)
	printP2P(w, rows)
	printCopy(w, rows)
}

// printNotes says, under the table, what the rows with a note measure
// (which devices: simulated, the emulated driver), the P2P rows aside
// (their matrix says it).
func printNotes(w io.Writer, rows []Row) {
	var notes []string
	names := map[string][]string{}
	for _, r := range rows {
		if r.Note == "" || strings.HasPrefix(r.Name, "p2p/") || strings.HasPrefix(r.Name, "copy/") || slices.Contains(names[r.Note], r.Name) {
			continue
		}
		if names[r.Note] == nil {
			notes = append(notes, r.Note)
		}
		names[r.Note] = append(names[r.Note], r.Name)
	}
	for _, n := range notes {
		fmt.Fprintf(w, "%s: %s\n", strings.Join(names[n], ", "), n)
	}
}

// dur is a latency cell: "-" for rows that measure throughput only.
func dur(ns int64) string {
	if ns == 0 {
		return "-"
	}
	return time.Duration(ns).String()
}

// Rate writes msgs/s as the table does: 3.36M, 140.0k, 512.
func Rate(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// eta is ", eta 1m20s": the time left of a run of total steps, done of
// which took elapsed, at their mean; "" before the first step ends.
func eta(elapsed time.Duration, done, total int) string {
	if done <= 0 || total <= done {
		return ""
	}
	left := elapsed / time.Duration(done) * time.Duration(total-done)
	if left < time.Second {
		return ", eta <1s"
	}
	return ", eta " + left.Round(time.Second).String()
}
