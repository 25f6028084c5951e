package gpubench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ringactor/ringactor/internal/bench"
)

// Stat is a row of bench-gpu's second table: a floor (floor/...), a
// microbenchmark (micro/...), a variant's measurement (variant/...,
// the variant column), or a gpu/ row's distribution (the per-message
// baselines and the round trip's parts, whose first table has p50 and
// p99 only), each with its percentiles and sample count, and compared
// with the row measured in the same run that it should approach (Vs, a
// floor, or the cheaper scope of the same operation): Ratio is P50 over
// Vs's P50 (1.3 means 30% above it). A throughput row (the variant's
// pipeline) has MsgsPerSec, and its percentiles are of its blocks' ns per
// message (N blocks).
type Stat struct {
	Name       string  `json:"name"`
	Variant    string  `json:"variant,omitempty"`
	P50        int64   `json:"p50_ns"`
	P90        int64   `json:"p90_ns"`
	P99        int64   `json:"p99_ns"`
	N          int     `json:"samples"`
	MsgsPerSec float64 `json:"msgs_per_sec,omitempty"`
	Vs         string  `json:"vs,omitempty"`
	Ratio      float64 `json:"ratio,omitempty"`
	Note       string  `json:"note,omitempty"`
	// Emulated: measured over the emulated CUDA driver (the device code
	// on CPU threads): what it shows is that the row runs, not its speed.
	Emulated bool `json:"emulated,omitempty"`
}

// Phase is where one kernel's steps went, from the per-phase timers
// inside its loop (ringkernel.Spec.PhaseTimers): the kernel of stage
// Stage in the row named Row, run as Variant; the mean ns per batch of
// each phase.
type Phase struct {
	Row      string  `json:"row"`
	Stage    string  `json:"stage"`
	Variant  string  `json:"variant"`
	Batches  uint64  `json:"batches"`
	Messages uint64  `json:"messages"`
	Poll     float64 `json:"poll_ns"`
	StageIn  float64 `json:"stage_in_ns"`
	Compute  float64 `json:"compute_ns"`
	Publish  float64 `json:"publish_ns"`
	Emulated bool    `json:"emulated,omitempty"`
}

// Report is everything one run measured: the comparisons of package
// bench's shape (Rows), the floors, microbenchmarks and variants (Stats),
// the loop's phases per variant (Phases), and the rows left out and why
// (LeftOut: a driver without stream capture has no graph row; one without
// NVRTC, no floors).
type Report struct {
	Device   string   `json:"device"`
	Emulated bool     `json:"emulated"`
	Rows     []Row    `json:"rows"`
	Stats    []Stat   `json:"stats"`
	Phases   []Phase  `json:"phases"`
	LeftOut  []string `json:"left_out,omitempty"`
}

// emulatedNote is the note of every row measured over the emulated driver.
const emulatedNote = "emulated CUDA driver: the device loop on CPU threads"

// Print writes the report as tables: the rows (package bench's table),
// the floors, microbenchmarks and variants, the phases, and the rows left
// out.
func (r *Report) Print(w io.Writer) {
	if r.Device != "" {
		fmt.Fprintf(w, "device: %s\n", r.Device)
	}
	bench.Print(w, r.Rows)
	on := func(emu bool) string {
		if emu {
			return "emulated"
		}
		return "gpu"
	}
	if len(r.Stats) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "name\tvariant\ton\tp50\tp90\tp99\tn\tmsgs/s\tvs\tratio\t")
		for _, s := range r.Stats {
			ratio := ""
			if s.Vs != "" {
				ratio = fmt.Sprintf("%.2fx", s.Ratio)
			}
			rate := "-"
			if s.MsgsPerSec > 0 {
				rate = bench.Rate(s.MsgsPerSec)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t\n", s.Name, s.Variant, on(s.Emulated), ns(s.P50), ns(s.P90), ns(s.P99), s.N, rate, s.Vs, ratio)
		}
		tw.Flush()
		var notes []string // each note once, after the rows it is about
		names := map[string][]string{}
		for _, s := range r.Stats {
			if s.Note == "" {
				continue
			}
			if names[s.Note] == nil {
				notes = append(notes, s.Note)
			}
			if !slices.Contains(names[s.Note], s.Name) { // a row per variant: named once
				names[s.Note] = append(names[s.Note], s.Name)
			}
		}
		for _, n := range notes {
			fmt.Fprintf(w, "%s: %s\n", strings.Join(names[n], ", "), n)
		}
	}
	if len(r.Phases) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "phases: mean per batch, from the loop's own timers (thread 0, globaltimer)")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "row\tstage\tvariant\ton\tbatches\tmsgs\tpoll\tstage-in\tcompute\tpublish\t")
		for _, p := range r.Phases {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t\n", p.Row, p.Stage, p.Variant, on(p.Emulated), p.Batches, p.Messages,
				ns(int64(p.Poll)), ns(int64(p.StageIn)), ns(int64(p.Compute)), ns(int64(p.Publish)))
		}
		tw.Flush()
	}
	// The ledger (per variant: dependent reads, .sys fences, barriers,
	// sleeps, counted over the emulated driver) prints here, as a table
	// headed "ledger".
	for _, l := range r.LeftOut {
		fmt.Fprintf(w, "left out: %s\n", l)
	}
}

func ns(v int64) string {
	if v == 0 {
		return "-"
	}
	return time.Duration(v).String()
}

// line is s on one line, for progress.
func (s Stat) line() string {
	l := s.Name
	if s.Variant != "" {
		l += " [" + s.Variant + "]"
	}
	l += fmt.Sprintf(": p50 %s p90 %s p99 %s n %d", ns(s.P50), ns(s.P90), ns(s.P99), s.N)
	if s.MsgsPerSec > 0 {
		l += ", " + bench.Rate(s.MsgsPerSec) + " msgs/s"
	}
	if s.Vs != "" {
		l += fmt.Sprintf(", %.2fx %s", s.Ratio, s.Vs)
	}
	return l
}

// stat is a Stat of the sorted samples d.
func stat(name, variant string, d []time.Duration, emu bool) Stat {
	s := Stat{Name: name, Variant: variant, P50: pct(d, .5), P90: pct(d, .9), P99: pct(d, .99), N: len(d), Emulated: emu}
	if emu {
		s.Note = emulatedNote
	}
	return s
}

// against sets s's comparison with base.
func against(s Stat, base Stat) Stat {
	s.Vs = base.Name
	if base.P50 > 0 {
		s.Ratio = float64(s.P50) / float64(base.P50)
	}
	return s
}

// find is the stat named name, if any.
func find(stats []Stat, name string) (Stat, bool) {
	for _, s := range stats {
		if s.Name == name {
			return s, true
		}
	}
	return Stat{}, false
}

// label marks rows measured over the emulated driver.
func label(rows []Row, emu bool) {
	if !emu {
		return
	}
	for i := range rows {
		if !strings.Contains(rows[i].Note, "emulated") {
			rows[i].Note = emulatedNote
		}
	}
}
