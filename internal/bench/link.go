package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/ringactor/ringactor/p2pqueue"
)

// The link against a buffered Go channel: one producer goroutine, one
// consumer, 64-byte payloads, the same number of messages in flight.

const (
	linkDepth   = 1024
	linkPayload = 64
	linkBatch   = 32
)

// chanMsg is what a Go programmer sends instead: the same header and
// payload, by value.
type chanMsg struct {
	p2pqueue.Header
	Payload [linkPayload]byte
}

func linkRun(batch int) runner {
	return func(ctx context.Context, n int, lat *latencies) (time.Duration, error) {
		ctx, cancel := context.WithCancel(ctx) // a consumer that fails releases the producer
		defer cancel()
		l, err := p2pqueue.NewHostQueue(p2pqueue.ConfigFor(linkDepth, linkPayload))
		if err != nil {
			return 0, err
		}
		// In-process links ring a parked consumer awake, as the sim
		// backend's do, rather than leaving it to sleep out a timer.
		l.SetDoorbell(p2pqueue.NewDoorbell())
		p, _ := l.Producer()
		c, _ := l.Consumer()
		in := make([]p2pqueue.Message, batch)
		out := make([]p2pqueue.Message, batch)
		for i := range in {
			in[i].Payload = make([]byte, linkPayload)
			out[i].Payload = make([]byte, 0, linkPayload)
		}
		done := make(chan error, 1)
		start := time.Now()
		go func() {
			defer p.Close()
			for id := 0; id < n; id += batch {
				k := min(batch, n-id)
				for i := range k {
					in[i].ID = uint64(id + i)
					lat.send(in[i].ID)
				}
				var err error
				if batch == 1 {
					err = p.Enqueue(ctx, &in[0])
				} else {
					_, err = p.EnqueueBatch(ctx, in[:k])
				}
				if err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		for want := uint64(0); int(want) < n; {
			k, err := 1, error(nil)
			if batch == 1 {
				err = c.Dequeue(ctx, &out[0])
			} else {
				k, err = c.DequeueBatch(ctx, out)
			}
			if err != nil {
				return 0, err
			}
			for i := range k {
				if out[i].ID != want {
					return 0, fmt.Errorf("message %d arrived where %d was due", out[i].ID, want)
				}
				lat.arrive(want)
				want++
			}
		}
		el := time.Since(start)
		return el, <-done
	}
}

func chanSingle(ctx context.Context, n int, lat *latencies) (time.Duration, error) {
	ch := make(chan chanMsg, linkDepth)
	start := time.Now()
	go func() {
		var m chanMsg
		for i := range n {
			m.ID = uint64(i)
			lat.send(m.ID)
			select {
			case ch <- m:
			case <-ctx.Done():
				close(ch)
				return
			}
		}
		close(ch)
	}()
	want := uint64(0)
	for m := range ch {
		if m.ID != want {
			return 0, fmt.Errorf("message %d arrived where %d was due", m.ID, want)
		}
		lat.arrive(want)
		want++
	}
	if int(want) != n {
		return 0, ctx.Err()
	}
	return time.Since(start), nil
}

func chanBatch(ctx context.Context, n int, lat *latencies) (time.Duration, error) {
	ch := make(chan [linkBatch]chanMsg, linkDepth/linkBatch)
	start := time.Now()
	go func() {
		var a [linkBatch]chanMsg
		for id := 0; id < n; id += linkBatch {
			for i := range a {
				a[i].ID = uint64(id + i)
				lat.send(a[i].ID)
			}
			select {
			case ch <- a:
			case <-ctx.Done():
				close(ch)
				return
			}
		}
		close(ch)
	}()
	want := uint64(0)
	for a := range ch {
		for i := range a {
			if int(want) == n {
				break
			}
			if a[i].ID != want {
				return 0, fmt.Errorf("message %d arrived where %d was due", a[i].ID, want)
			}
			lat.arrive(want)
			want++
		}
	}
	if int(want) != n {
		return 0, ctx.Err()
	}
	return time.Since(start), nil
}
