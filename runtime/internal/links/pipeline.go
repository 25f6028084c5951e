package links

import (
	"fmt"

	"github.com/ringactor/ringactor/p2pqueue"
)

// Stage is what a pipeline's links need of one of its stages.
type Stage struct {
	Name     string
	Device   int
	Capacity int // slots per in-link
	SlotSize int // bytes per slot of its in-links, as an indexed link's (Path.Links doubles it for flagged)
	Path     Path
}

// Placed is a link and where p2pqueue.Place put it.
type Placed struct {
	Link *p2pqueue.Link
	At   p2pqueue.Placement
}

// Set is one pipeline's links, made by Make.
type Set struct {
	In     []Placed   // In[i]: the host into stage i, its ingress
	Out    [][]Placed // Out[i][k]: stage i to stage next[i][k], sized as its consumer's in-links
	Egress []Placed   // Egress[i]: exit i to the host; zero for a stage with next stages
	next   [][]int
}

// Make makes the links of pipeline owner (its LinkIDs name it) whose
// stages' results go to next (next[i]: the stages stage i feeds; none for
// an exit): each stage's ingress from the host, then, stage by stage, a
// link per edge in its consumer's slots or an exit's egress to the host,
// with a doorbell for the host's pump. Every link has the format of its
// consumer's Path (a pipeline's stages share one). When one cannot be
// made, it gives back those it made and returns the error, naming the
// link.
func (lg *Ledger) Make(owner uint32, stages []Stage, next [][]int) (Set, error) {
	n := len(stages)
	s := Set{In: make([]Placed, n), Out: make([][]Placed, n), Egress: make([]Placed, n), next: next}
	fail := func(err error) (Set, error) {
		lg.FreeSet(s)
		return Set{}, err
	}
	for i, st := range stages {
		l, pl, err := lg.make(p2pqueue.Host, st.Device, st.config(p2pqueue.NewLinkID(owner, p2pqueue.RoleIn, i, 0)))
		if err != nil {
			return fail(fmt.Errorf("ringactor: stage %q ingress: %w", st.Name, err))
		}
		s.In[i] = Placed{l, pl}
	}
	for i, st := range stages {
		for _, j := range next[i] {
			t := stages[j]
			l, pl, err := lg.make(st.Device, t.Device, t.config(p2pqueue.NewLinkID(owner, p2pqueue.RoleOut, i, j)))
			if err != nil {
				return fail(fmt.Errorf("ringactor: link %q → %q: %w", st.Name, t.Name, err))
			}
			s.Out[i] = append(s.Out[i], Placed{l, pl})
		}
		if len(next[i]) > 0 {
			continue
		}
		l, pl, err := lg.make(st.Device, p2pqueue.Host, st.config(p2pqueue.NewLinkID(owner, p2pqueue.RoleEgress, i, 0)))
		if err != nil {
			return fail(fmt.Errorf("ringactor: stage %q egress: %w", st.Name, err))
		}
		l.SetDoorbell(p2pqueue.NewDoorbell())
		s.Egress[i] = Placed{l, pl}
	}
	return s, nil
}

// Kernel returns the links stage i's kernel is given: in, the links from
// the stages feeding it (by their index, then their order of next stages)
// and then its ingress; out, its links to its next stages in order, or an
// exit's egress.
func (s Set) Kernel(i int) (in, out []*p2pqueue.Link) {
	for u, js := range s.next {
		for k, j := range js {
			if j == i {
				in = append(in, s.Out[u][k].Link)
			}
		}
	}
	in = append(in, s.In[i].Link)
	for _, o := range s.Out[i] {
		out = append(out, o.Link)
	}
	if s.Egress[i].Link != nil {
		out = []*p2pqueue.Link{s.Egress[i].Link}
	}
	return in, out
}

// FreeSet gives back the links of s (Free: once their kernels are done
// with them), stage by stage: its ingress, its out-links, its egress.
// Links not made (after a failed Make) are passed over.
func (lg *Ledger) FreeSet(s Set) {
	for i := range s.In {
		if s.In[i].Link != nil {
			lg.Free(s.In[i].Link)
		}
		for _, o := range s.Out[i] {
			lg.Free(o.Link)
		}
		if s.Egress[i].Link != nil {
			lg.Free(s.Egress[i].Link)
		}
	}
}
