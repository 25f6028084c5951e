package p2pqueue

import (
	"context"
	"testing"
)

// The link against a buffered Go channel, one producer and one consumer
// goroutine each. b.N counts messages in every sub-benchmark, so ns/op is
// per message and msgs/s compares directly. Both hold the same number of
// messages in flight (benchDepth).

const benchDepth = 1024

var benchShapes = []struct {
	name    string
	payload int
	batch   int
}{
	{"64B-single", 64, 1},
	{"64B-batch32", 64, 32},
	{"1KiB-single", 1024, 1},
	{"1KiB-batch32", 1024, 32},
}

func reportRate(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

func BenchmarkLink(b *testing.B) {
	for _, s := range benchShapes {
		b.Run(s.name, func(b *testing.B) { benchLink(b, s.payload, s.batch) })
	}
}

func benchLink(b *testing.B, payload, batch int) {
	l, err := NewHostQueue(ConfigFor(benchDepth, payload))
	if err != nil {
		b.Fatal(err)
	}
	p, _ := l.Producer()
	c, _ := l.Consumer()
	ctx := context.Background()
	in := make([]Message, batch)
	out := make([]Message, batch)
	for i := range in {
		in[i].Payload = make([]byte, payload)
		out[i].Payload = make([]byte, 0, payload)
	}
	done := make(chan error, 1)
	b.SetBytes(int64(payload))
	b.ResetTimer()
	go func() {
		defer p.Close()
		for id := 0; id < b.N; id += batch {
			k := min(batch, b.N-id)
			for i := range k {
				in[i].ID = uint64(id + i)
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
	var want uint64
	for int(want) < b.N {
		n, err := 1, error(nil)
		if batch == 1 {
			err = c.Dequeue(ctx, &out[0])
		} else {
			n, err = c.DequeueBatch(ctx, out)
		}
		if err != nil {
			b.Fatal(err)
		}
		if out[n-1].ID != want+uint64(n-1) {
			b.Fatalf("got %d, want %d", out[n-1].ID, want+uint64(n-1))
		}
		want += uint64(n)
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	// Which side waited: full waits mean the consumer is the bottleneck.
	st := l.Stats()
	b.ReportMetric(float64(st.FullWaits)/float64(b.N), "fullwaits/msg")
	reportRate(b)
}

// chanMsg is what a Go programmer sends instead: the same header and payload
// by value.
type chanMsg[P any] struct {
	Header
	Payload P
}

func BenchmarkChannel(b *testing.B) {
	for _, s := range benchShapes {
		b.Run(s.name, func(b *testing.B) {
			switch {
			case s.payload == 64 && s.batch == 1:
				benchChanSingle[[64]byte](b, s.payload)
			case s.payload == 64:
				benchChanBatch[[64]byte](b, s.payload)
			case s.batch == 1:
				benchChanSingle[[1024]byte](b, s.payload)
			default:
				benchChanBatch[[1024]byte](b, s.payload)
			}
		})
	}
}

func benchChanSingle[P any](b *testing.B, payload int) {
	ch := make(chan chanMsg[P], benchDepth)
	b.SetBytes(int64(payload))
	b.ResetTimer()
	go func() {
		var m chanMsg[P]
		for i := 0; i < b.N; i++ {
			m.ID = uint64(i)
			ch <- m
		}
		close(ch)
	}()
	var want uint64
	for m := range ch {
		if m.ID != want {
			b.Fatalf("got %d, want %d", m.ID, want)
		}
		want++
	}
	reportRate(b)
}

func benchChanBatch[P any](b *testing.B, payload int) {
	const batch = 32
	ch := make(chan [batch]chanMsg[P], benchDepth/batch)
	b.SetBytes(int64(payload))
	b.ResetTimer()
	go func() {
		var a [batch]chanMsg[P]
		for id := 0; id < b.N; id += batch {
			for i := range a {
				a[i].ID = uint64(id + i)
			}
			ch <- a
		}
		close(ch)
	}()
	var want uint64
	for a := range ch {
		for i := range a {
			if int(want) < b.N && a[i].ID != want {
				b.Fatalf("got %d, want %d", a[i].ID, want)
			}
			want++
		}
	}
	reportRate(b)
}
