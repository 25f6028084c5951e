// Package describe writes the text of a built pipeline's Describe: its
// stages, their devices, where each link lives and where each stage's
// results go. It is pure: runtime hands it what it built.
package describe

import (
	"fmt"
	"strings"

	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/runtime/internal/links"
)

// Link is one of a stage's links as Describe shows it.
type Link struct {
	Peer string             // the stage at its other end (a stage's in-link from it)
	At   p2pqueue.Placement // where its memory lives
	Over fmt.Stringer       // the connection between the peers' devices (in-links from a stage)
	L    *p2pqueue.Link
}

// Stage is a built stage.
type Stage struct {
	Name, Op   string
	Params     []float32
	Device     int
	DeviceName string
	CPU        bool // the device is the CPU
	Workers    int
	Stateful   bool
	In         Link   // its ingress
	From       []Link // its in-links from other stages
	To         []string
	// Route is its route's name, shown when it has several next stages
	// or routes other than RouteOne (Routed); a keyed route (Keyed) reads
	// its key at KeyOffset.
	Route         string
	Routed, Keyed bool
	KeyOffset     int
	Egress        *Link // an exit's egress to the host
	// Loop is the device loop its kernel was launched with, shown when it
	// is not the default (ringkernel.LoopClassic).
	Loop rk.LoopVariant
}

// slots shows a link's size, and its format when it is not the default.
func slots(l *p2pqueue.Link) string {
	s := fmt.Sprintf("%d slots of %d B", l.Cap(), l.Config().SlotSize)
	if f := l.Format(); f != p2pqueue.FormatIndexed {
		s += ", " + f.String()
	}
	return s
}

// params shows a stage's params, the first 8 of a longer list (a ring
// all-reduce stage holds a chunk of a vector) and their count.
func params(p []float32) string {
	if len(p) <= 8 {
		return fmt.Sprint(p)
	}
	return strings.TrimSuffix(fmt.Sprint(p[:8]), "]") + fmt.Sprintf(" ... (%d floats)]", len(p))
}

// Pipeline is the text of pipeline name (number number) on backend.
func Pipeline(name string, number uint32, backend string, stages []Stage) string {
	var b strings.Builder
	fmt.Fprintf(&b, "pipeline %q (number %d) on %s backend, %d stages\n", name, number, backend, len(stages))
	for _, s := range stages {
		if s.CPU {
			fmt.Fprintf(&b, "  (device %d is the CPU, run by goroutines beside the GPUs)\n", s.Device)
			break
		}
	}
	for i, s := range stages {
		mode := fmt.Sprintf("stateless, %d worker(s)", max(s.Workers, 1))
		if s.Stateful {
			mode = "stateful"
		}
		if s.Loop != rk.LoopClassic {
			mode += ", " + links.LoopName(s.Loop) + " loop"
		}
		fmt.Fprintf(&b, "  %d. %-10s op %s%s on device %d (%s), %s\n", i+1, s.Name, s.Op, params(s.Params), s.Device, s.DeviceName, mode)
		fmt.Fprintf(&b, "     ingress: %s, %s\n", s.In.At, slots(s.In.L))
		for _, e := range s.From {
			fmt.Fprintf(&b, "     from %s: %s over %s, %s\n", e.Peer, e.At, e.Over, slots(e.L))
		}
		if len(s.To) > 1 || s.Routed {
			route := s.Route
			if s.Keyed {
				route += fmt.Sprintf(" (u32 at byte %d)", s.KeyOffset)
			}
			fmt.Fprintf(&b, "     to %s, route %s\n", strings.Join(s.To, ", "), route)
		}
		if e := s.Egress; e != nil {
			fmt.Fprintf(&b, "     egress: %s, %s\n", e.At, slots(e.L))
		}
	}
	return b.String()
}
