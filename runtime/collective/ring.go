package collective

import (
	"context"
	"errors"
	"fmt"

	ra "github.com/ringactor/ringactor/runtime"
)

// Path is how AllReduce's data moves between its participants' kernels.
type Path int

const (
	// AutoPath, the zero value, is DeviceLinks, or HostHops where a chunk
	// (a participant's share of the vector) is over MaxDeviceLinkChunk.
	AutoPath Path = iota
	// DeviceLinks runs each chunk's reduce-scatter as one pipeline whose
	// stages, one per participant, pass the running chunk to each other
	// over device links (peer, or host-staged where the topology has no
	// peer access); the host only injects and collects.
	DeviceLinks
	// HostHops runs the ring step by step, the host carrying every step's
	// results from one kernel's egress to the next one's ingress.
	HostHops
)

func (p Path) String() string {
	switch p {
	case AutoPath:
		return "auto"
	case DeviceLinks:
		return "device links"
	case HostHops:
		return "host hops"
	}
	return fmt.Sprintf("Path(%d)", int(p))
}

// MaxDeviceLinkChunk is the most floats of one chunk DeviceLinks takes:
// each stage holds its participant's chunk as its parameters, in device
// memory, and a message's offset in the chunk travels as an exact float.
const MaxDeviceLinkChunk = 1 << 20

// testBeforeClose, when set (by a test), sees a call's pipelines once its
// data has moved, before they close.
var testBeforeClose func(pipes []*ra.Pipeline)

// testBeforeSend, when set (by a test), may change DeviceLinks' messages
// before they are sent.
var testBeforeSend func(pieces []piece)

// path resolves spec.Path for vectors of size floats.
func (s *Spec) path(size int) (Path, error) {
	chunk := (size + len(s.Devices) - 1) / len(s.Devices)
	switch s.Path {
	case AutoPath:
		if chunk <= MaxDeviceLinkChunk {
			return DeviceLinks, nil
		}
		return HostHops, nil
	case DeviceLinks:
		if chunk > MaxDeviceLinkChunk {
			return 0, s.bad("chunks of %d floats for DeviceLinks, which takes at most %d (MaxDeviceLinkChunk) per participant; use HostHops or AutoPath, or more participants", chunk, MaxDeviceLinkChunk)
		}
		return DeviceLinks, nil
	case HostHops:
		return HostHops, nil
	}
	return 0, s.bad("%v: use AutoPath, DeviceLinks or HostHops", s.Path)
}

// ringKernel is the op of a DeviceLinks stage: [offset, running...] in,
// [offset, running ⊕ own chunk...] out, its chunk in its params (see
// package kernels).
func (o ReduceOp) ringKernel() string { return "ring_" + o.String() }

// deviceLinks is AllReduce over DeviceLinks: buf's vectors become the
// result. Chunk ch (participant ch's share [lo(ch), lo(ch+1))) is reduced
// by a chain of stages on participants ch+1, ..., ch+N-1 (mod N), each
// holding its own floats of the chunk as its params, so it is combined in
// the order HostHops combines it and the results are bit for bit the
// same. The host sends participant ch's floats of the chunk into the
// chain's head, spec.Chunk floats (and their offset) a message, and takes
// the reduced chunk from its exit; every chain runs at once. The
// all-gather is the host copying each reduced chunk into every
// participant's result, which is where the results go anyway.
func (c *collective) deviceLinks(ctx context.Context, spec Spec, buf [][]float32, op ReduceOp) error {
	n, size := len(buf), len(buf[0])
	lo := func(ch int) int { return ch * size / n }
	participant := map[string]int{} // a stage's name: its participant
	var pieces []piece
	for ch := range n {
		first, length := lo(ch), lo(ch+1)-lo(ch)
		if length == 0 {
			continue // fewer floats than participants
		}
		stages := make([]ra.StageSpec, n-1)
		for j := range stages {
			p := (ch + 1 + j) % n
			params := append(make([]float32, 0, 1+length), float32(length))
			stages[j] = ra.StageSpec{Name: fmt.Sprintf("%s-p%d", op.ringKernel(), p), Op: op.ringKernel(), Device: spec.Devices[p],
				Params: append(params, buf[p][first:first+length]...)}
			participant[stages[j].Name] = p
		}
		chain, err := c.build(ctx, fmt.Sprintf("chain%d", ch), stages, 1+spec.Chunk)
		if err != nil {
			return err
		}
		for off := 0; off < length; off += spec.Chunk {
			m := min(spec.Chunk, length-off)
			msg := append(append(make([]float32, 0, 1+m), float32(off)), buf[ch][first+off:first+off+m]...)
			pieces = append(pieces, piece{pipe: chain, floats: msg, chunk: ch, off: first + off, n: m, participant: (ch + 1) % n})
		}
	}
	if testBeforeSend != nil {
		testBeforeSend(pieces)
	}
	const step = "reduce-scatter chain"
	res, err := c.round(ctx, step, pieces)
	if ce := (*ChunkError)(nil); errors.As(err, &ce) {
		if p, ok := participant[ce.Dead.Stage]; ok {
			ce.Participant = p
		} else {
			ce.Participant = (ce.Chunk + n - 1) % n // lost after the chain's last stage
		}
	}
	if err != nil {
		return err
	}
	for k, p := range pieces {
		r := res[k]
		if len(r) != 1+p.n || int(r[0]) != p.off-lo(p.chunk) {
			return fmt.Errorf("ringactor: collective %q: %s %d gave %d floats at offset %v, want %d at %d", spec.Name, step, p.chunk, len(r)-1, r[:min(len(r), 1)], p.n, p.off-lo(p.chunk))
		}
		for i := range buf {
			copy(buf[i][p.off:], r[1:])
		}
	}
	return nil
}
