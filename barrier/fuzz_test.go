package barrier_test

import (
	"context"
	"testing"

	"github.com/ringactor/ringactor/barrier"
	"github.com/ringactor/ringactor/p2pqueue"
)

// Attach over arbitrary bytes never panics; when it accepts them, the
// handle works within the region.
func FuzzAttach(f *testing.F) {
	img, _ := barrier.Image(3)
	f.Add(img)
	f.Add(img[:barrier.HeaderSize+barrier.LineSize])
	f.Add(img[:7])
	f.Add([]byte{})
	big := append([]byte(nil), img...)
	big[barrier.OffParticipants] = 0xff
	f.Add(big)
	f.Fuzz(func(t *testing.T, b []byte) {
		r := p2pqueue.Region{Bytes: b, Device: -1}
		if len(b) > 0 {
			r, _ = p2pqueue.NewAlignedRegion(len(b))
			copy(r.Bytes, b)
		}
		fl, err := barrier.Attach(r)
		if err != nil {
			return
		}
		if size, err := barrier.Size(fl.N()); err != nil || size > len(b) {
			t.Fatalf("accepted %d participants in %d bytes (%v)", fl.N(), len(b), err)
		}
		last, _ := fl.Generation(fl.N() - 1)
		p, err := fl.Participant(fl.N() - 1)
		if err != nil {
			t.Fatal(err)
		}
		if last < ^uint64(0) {
			if err := p.Arrive(last + 1); err != nil {
				t.Fatal(err)
			}
		}
		fl.Missing(last)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		fl.Wait(ctx, ^uint64(0))
	})
}
