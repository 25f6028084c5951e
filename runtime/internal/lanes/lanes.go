// Package lanes runs a stateless stage as several kernels, its lanes
// (StageSpec.Lanes): Expand rewrites a pipeline's stages into a graph
// in which each lane is a stage of its own, and Spread is the host's
// end, which spreads sends over the first stage's lanes. A lane is one
// block with its own in-links, so each is an SPSC chain; order is kept
// per lane (round robin) or per key (keyed lanes).
package lanes

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/ringactor/ringactor/kernels"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// Max is the most lanes a stage runs: the stage before it routes over
// one out-link per lane.
const Max = rk.MaxDeviceOutLinks

// Stage is one stage as Expand sees it.
type Stage struct {
	Name      string
	To        []string
	Route     rk.Route
	KeyOffset int
	// Lanes is how many kernels run the stage (0 and 1: one); Keyed
	// sends a message to the lane of the u32 key at byte offset Key of
	// what the stage takes (ringkernel.RouteKey), else round robin.
	Lanes    int
	Keyed    bool
	Key      int
	Stateful bool
	Op       string // a registered op that keeps state makes it stateful too
}

// Node is a stage of the expanded graph: a stage, or one lane of it.
type Node struct {
	Name      string
	To        []string
	Route     rk.Route
	KeyOffset int
}

// First is how the host spreads what it sends over the first stage's
// N lanes (1: no lanes).
type First struct {
	Stage string // its name
	N     int
	Keyed bool
	Key   int
}

// Name is lane l's stage name: "<stage>#<l>".
func Name(stage string, l int) string { return fmt.Sprintf("%s#%d", stage, l) }

// Expand returns stages with each laned stage replaced by its lanes, in
// place, named Name(stage, lane) (set makes a lane's spec from its
// stage's and its Node), and how the host spreads over the first
// stage's lanes. With no laned stage it returns stages as they are. A
// stage that feeds a laned stage of another lane count sends to it
// alone with RouteOne: its results go over the lanes round robin, or by
// key; a laned stage feeds one of the same count lane i to lane i (the
// two must key alike) and a one-lane stage from every lane (fan-in).
// stealIn is how many steal links the first stage reads (a stage
// group's member, which runs no lanes).
func Expand[S any](stages []S, stealIn int, view func(S) Stage, set func(S, Node) S) ([]S, First, error) {
	vs, idx := make([]Stage, len(stages)), map[string]int{}
	laned, graph := false, false
	for i, s := range stages {
		v := view(s)
		if op, err := kernels.Lookup(v.Op); err == nil && op.Stateful() {
			v.Stateful = true
		}
		switch {
		case v.Lanes < 0 || v.Lanes > Max:
			return nil, First{}, fmt.Errorf("stage %q runs %d lanes; a stage runs 1 to %d (the stage before it routes over one out-link per lane)", v.Name, v.Lanes, Max)
		case v.Lanes > 1 && v.Stateful:
			return nil, First{}, fmt.Errorf("stage %q is stateful (op %s keeps state) and runs %d lanes: the state lives in one kernel; drop Lanes, or split the state by key over stages of their own (RouteKey)", v.Name, v.Op, v.Lanes)
		case v.Lanes > 1 && i == 0 && stealIn > 0:
			return nil, First{}, fmt.Errorf("stage %q of a stage group runs %d lanes; the group's instances are its parallelism: drop Lanes", v.Name, v.Lanes)
		}
		v.Lanes = max(v.Lanes, 1)
		laned, graph = laned || v.Lanes > 1, graph || len(v.To) > 0
		vs[i], idx[v.Name] = v, i
	}
	if !laned {
		return stages, First{N: 1}, nil
	}
	for i := 0; !graph && i+1 < len(vs); i++ { // a chain, made a graph
		vs[i].To = []string{vs[i+1].Name}
	}
	var out []S
	for i, v := range vs {
		for l := range v.Lanes {
			n := Node{Name: v.Name, Route: v.Route, KeyOffset: v.KeyOffset}
			if v.Lanes > 1 {
				n.Name = Name(v.Name, l)
			}
			for _, to := range v.To {
				j, ok := idx[to]
				if !ok || vs[j].Lanes == 1 {
					n.To = append(n.To, to) // an unknown name is the graph's to refuse
					continue
				}
				t := vs[j]
				switch {
				case t.Lanes == v.Lanes && t.Keyed != v.Keyed:
					return nil, First{}, fmt.Errorf("stage %q (keyed lanes: %t) feeds stage %q (keyed lanes: %t) lane to lane: a key keeps its lane only where both key their lanes; set KeyedLanes alike", v.Name, v.Keyed, t.Name, t.Keyed)
				case t.Lanes == v.Lanes:
					n.To = append(n.To, Name(t.Name, l))
				case v.Lanes > 1:
					return nil, First{}, fmt.Errorf("stage %q runs %d lanes and stage %q, which it feeds, %d: give both the same count (joined lane to lane) or put a one-lane stage between", v.Name, v.Lanes, t.Name, t.Lanes)
				case len(v.To) > 1 || v.Route != rk.RouteOne:
					return nil, First{}, fmt.Errorf("stage %q feeds stage %q, which runs %d lanes, and routes %s over %d stages: a stage that spreads over lanes sends to that stage alone; put a one-lane stage between", v.Name, t.Name, t.Lanes, v.Route, len(v.To))
				default:
					for k := range t.Lanes {
						n.To = append(n.To, Name(t.Name, k))
					}
					n.Route, n.KeyOffset = rk.RouteRoundRobin, 0
					if t.Keyed {
						n.Route, n.KeyOffset = rk.RouteKey, t.Key
					}
				}
			}
			out = append(out, set(stages[i], n))
		}
	}
	return out, First{Stage: vs[0].Name, N: vs[0].Lanes, Keyed: vs[0].Keyed, Key: vs[0].Key}, nil
}

// Spread is the host's end of a first stage with lanes: it puts each
// message into one lane's mailbox, round robin over the messages of
// all senders, or by the message's key.
type Spread[D any] struct {
	First
	rr atomic.Uint64
	// Lane puts ds into lane l's mailbox as ingress.Link.Send does: how
	// many it took, in order, and each one's id in ids.
	Lane func(ctx context.Context, l int, ds []D, ids []uint64) (int, error)
	// ID gives d the id it travels under (an auto id for none), so that
	// the ids follow the order of a batch, not of its lanes.
	ID func(d *D)
	// Payload encodes d into buf as the first stage takes it, for its
	// key (Keyed); false when d does not encode, which a lane then
	// refuses as it refuses any such message (it goes round robin).
	Payload func(d D, buf []byte) ([]byte, bool)
	// NoKey dead-letters the messages that encode but have no key at Key
	// (as the device's RouteKey dead-letters a result without one) with
	// cause, counted and kept out of every lane, ids as Lane's.
	NoKey func(ds []D, ids []uint64, cause error)
	Slot  int
}

// Over is the host's end of a first stage with f's lanes: Spread's
// fields, by the same names.
func Over[D any](f First, slot int, id func(*D), lane func(ctx context.Context, l int, ds []D, ids []uint64) (int, error), payload func(D, []byte) ([]byte, bool), noKey func(ds []D, ids []uint64, cause error)) *Spread[D] {
	return &Spread[D]{First: f, Slot: slot, ID: id, Lane: lane, Payload: payload, NoKey: noKey}
}

// Send puts ds into the lanes and returns how many of ds, from the
// first, every lane took (the messages a lane did not take it has
// dead-lettered, as NoKey has those without a key), ids as Lane's, and
// the first lane's error, or else NoKey's. With one lane it is Lane's
// Send.
func (s *Spread[D]) Send(ctx context.Context, ds []D, ids []uint64) (int, error) {
	if s.N <= 1 {
		return s.Lane(ctx, 0, ds, ids) // one lane: the batch as it is
	}
	lane, by := make([]int, len(ds)), make([][]D, s.N)
	start := s.rr.Add(uint64(len(ds))) - uint64(len(ds))
	var buf []byte
	if s.Keyed {
		buf = make([]byte, s.Slot)
	}
	var keyless []D // lane -1
	for i, d := range ds {
		s.ID(&d)
		lane[i] = int((start + uint64(i)) % uint64(s.N))
		if s.Keyed {
			if p, ok := s.Payload(d, buf); ok {
				l, code := rk.ResultRoute(rk.RouteKey, s.N, 0, p, s.Key, 0)
				if code != rk.CodeNone {
					lane[i], keyless = -1, append(keyless, d)
					continue
				}
				lane[i] = l
			}
		}
		by[lane[i]] = append(by[lane[i]], d)
	}
	taken, got := make([]int, s.N), make([][]uint64, s.N)
	var first error
	for l, b := range by {
		if len(b) == 0 {
			continue
		}
		got[l] = make([]uint64, len(b))
		n, err := s.Lane(ctx, l, b, got[l])
		if taken[l] = n; err != nil && first == nil {
			first = err
		}
	}
	var keylessIDs []uint64
	if len(keyless) > 0 {
		keylessIDs = make([]uint64, len(keyless))
		cause := fmt.Errorf("ringactor: stage %q keys its lanes (KeyedLanes): the message has no u32 key at byte %d (LaneKey) of what the stage takes", s.Stage, s.Key)
		s.NoKey(keyless, keylessIDs, cause)
		if first == nil {
			first = fmt.Errorf("%w: %d message(s) dead-lettered, the first %d", cause, len(keyless), keylessIDs[0])
		}
	}
	n, pos, kpos := 0, make([]int, s.N), 0
	for i, l := range lane {
		if l < 0 { // dead-lettered, not taken: the count stops here
			if i < len(ids) {
				ids[i] = keylessIDs[kpos]
			}
			kpos++
			continue
		}
		if i < len(ids) {
			ids[i] = got[l][pos[l]]
		}
		if n == i && pos[l] < taken[l] {
			n++
		}
		pos[l]++
	}
	return n, first
}
