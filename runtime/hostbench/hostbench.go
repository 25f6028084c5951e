// Package hostbench measures the host's two halves of a pipeline's data
// path on their own, with no device on the other end: SendBatch's encode
// into a stage's ingress link (runtime/internal/ingress, configured as a
// runtime stage configures it) and the egress pump's decode of an exit's
// link into Results handed to a sink (runtime/internal/egress). The
// other end of each link is a Go loop that does as little as a link
// allows (release what it reads; publish prebuilt results), and the same
// loops around a bare p2pqueue are the baselines the host rows are a
// ratio of (QueueIn, QueueOut). `ringactor bench`'s host/ rows run it.
//
// It is a measuring tool, not an API: it may change in any release.
package hostbench

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/internal/account"
	"github.com/ringactor/ringactor/runtime/internal/egress"
	"github.com/ringactor/ringactor/runtime/internal/ingress"
	"github.com/ringactor/ringactor/runtime/internal/msgtype"
)

const (
	// Floats is a message's payload: 16 float32s, 64 bytes.
	Floats = 16
	// Batch is the messages per SendBatch call and per queue batch.
	Batch = 64
	// Depth is every link's capacity in slots.
	Depth = 1024
)

// newLink is a host link of Depth slots of 64-byte payloads, as a
// runtime stage's are, with a doorbell (in-process links have one).
func newLink() (*p2pqueue.Producer, *p2pqueue.Consumer, error) {
	l, err := p2pqueue.NewHostQueue(p2pqueue.ConfigFor(Depth, 4*Floats))
	if err != nil {
		return nil, nil, err
	}
	l.SetDoorbell(p2pqueue.NewDoorbell())
	p, err := l.Producer()
	if err != nil {
		return nil, nil, err
	}
	c, err := l.Consumer()
	return p, c, err
}

// drain is the device's side of an ingress link cut to nothing: it
// releases what it peeks until the link is closed and drained, and
// returns how many it released.
func drain(ctx context.Context, c *p2pqueue.Consumer) (int, error) {
	got := 0
	for {
		k, err := c.PeekWait(ctx, Batch)
		if k > 0 {
			if rerr := c.Release(k); rerr != nil {
				return got, rerr
			}
			got += k
		}
		if errors.Is(err, p2pqueue.ErrClosed) {
			return got, nil
		}
		if err != nil {
			return got, err
		}
	}
}

// message is the payload every message carries.
func message() []float32 {
	v := make([]float32, Floats)
	for i := range v {
		v[i] = float32(i)
	}
	return v
}

// SendBatch sends n messages of 64-byte float vectors (auto ids) in
// batches of Batch through the ingress link a runtime stage writes, and
// returns the time from the first send until the consumer, which only
// releases, has released the last. Every message is counted into an
// account and must be taken: a dead letter is an error.
func SendBatch(ctx context.Context, n int) (time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p, c, err := newLink()
	if err != nil {
		return 0, err
	}
	var acct account.Account
	var dead atomic.Pointer[error]
	l := ingress.New(p, ingress.Config[ra.Data, ra.Reason]{
		Stage: "host", Capacity: Depth, Acct: &acct,
		Full: ra.ErrMailboxFull, Stopped: ra.ErrStageStopped,
		Reasons: ingress.Reasons[ra.Reason]{Full: ra.ReasonMailboxFull, Cancelled: ra.ReasonSendCancelled, Stopped: ra.ReasonStageStopped, QueueClosed: ra.ReasonQueueClosed},
		Own:     func(d ra.Data) (uint64, bool) { return d.ID, d.Sampled },
		Encode: func(d *ra.Data, buf []byte) (ingress.Encoded, ra.Reason, error) {
			typ, k, _, err := msgtype.Encode(d.Floats, d.Value, kernels.TypeFloats, "host", buf)
			return ingress.Encoded{Own: d.ID, Sampled: d.Sampled, Type: typ, N: k}, ra.ReasonOversize, err
		},
		Begin:   func(ra.Data, uint64, time.Time) {},
		Dead:    func(id uint64, _ ra.Reason, err error) { dead.CompareAndSwap(nil, &err) },
		Refusal: func() (ra.Reason, error) { return ra.ReasonPipelineClosed, ra.ErrClosed },
		Running: func() (bool, fmt.Stringer) { return true, nil },
	})
	ds := make([]ra.Data, Batch) // Send leaves them as they are: made once
	v := message()
	for i := range ds {
		ds[i] = ra.Data{Floats: v}
	}
	got := make(chan error, 1)
	var released int
	start := time.Now()
	go func() {
		var err error
		released, err = drain(ctx, c)
		got <- err
	}()
	for sent := 0; sent < n; {
		k := min(Batch, n-sent)
		taken, err := l.Send(ctx, ds[:k], nil)
		if err != nil {
			cancel()
			<-got
			return 0, err
		}
		sent += taken
	}
	l.Close()
	if err := <-got; err != nil {
		return 0, err
	}
	el := time.Since(start)
	if e := dead.Load(); e != nil {
		return 0, fmt.Errorf("a message was dead-lettered: %w", *e)
	}
	if t := acct.Read(nil); released != n || t.Sent != uint64(n) {
		return 0, fmt.Errorf("sent %d, counted %d, released %d", n, t.Sent, released)
	}
	return el, nil
}

// produce is a kernel's egress cut to nothing: it publishes n results of
// 64-byte float vectors, prebuilt, in batches of Batch, then closes the
// link.
func produce(ctx context.Context, p *p2pqueue.Producer, n int) error {
	defer p.Close()
	ms := make([]p2pqueue.Message, Batch)
	b := make([]byte, 4*Floats)
	for i := range ms {
		ms[i] = p2pqueue.Message{Header: p2pqueue.Header{Type: kernels.TypeFloats, Origin: 1}, Payload: b}
	}
	for id := 0; id < n; id += Batch {
		k := min(Batch, n-id)
		for i := range k {
			ms[i].ID = uint64(id + i + 1)
		}
		if _, err := p.EnqueueBatch(ctx, ms[:k]); err != nil {
			return err
		}
	}
	return nil
}

// Sink says where Egress's pump hands its Results.
type Sink int

const (
	Func Sink = iota // a Sink.Func that counts them
	Chan             // a Sink.Chan of Batch results, read by another goroutine
	Lent             // a Sink.Batch that counts them (lent: views of the slots)
)

// Egress has a Go producer publish n results of 64-byte float vectors
// into an exit's egress link, and the pump a runtime pipeline runs
// decode them into Results and hand them to sink; it returns the time
// from the first publish until the sink has the last result.
func Egress(ctx context.Context, n int, sink Sink) (time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p, c, err := newLink()
	if err != nil {
		return 0, err
	}
	var acct account.Account
	acct.Enter(n) // the messages' sends, which this measures not
	h := &host{}
	pump := &egress.Pump[ra.Result]{Name: "host", Host: h, Pending: func() bool { return false }, Acct: &acct, Ctx: ctx, Closing: make(chan struct{}), ErrNotRead: ra.ErrSinkNotRead}
	var got atomic.Int64
	read := make(chan struct{})
	switch sink {
	case Func:
		pump.Sink.Func = func(r ra.Result) {
			if r.Floats != nil {
				got.Add(1)
			}
		}
		close(read)
	case Lent:
		pump.Sink.Batch = func(rs []ra.Result) {
			k := 0
			for i := range rs {
				if rs[i].Floats != nil {
					k++
				}
			}
			got.Add(int64(k))
		}
		close(read)
	case Chan:
		ch := make(chan ra.Result, Batch)
		pump.Sink.Chan = ch
		go func() {
			defer close(read)
			for i := 0; i < n; i++ {
				select {
				case r := <-ch:
					if r.Floats != nil {
						got.Add(1)
					}
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	perr := make(chan error, 1)
	start := time.Now()
	go func() { perr <- produce(ctx, p, n) }()
	pump.Start([]egress.Exit{{From: 1, Stage: "host", Link: c}}, done)
	err = <-perr
	if err != nil {
		cancel()
	}
	<-done
	<-read
	el := time.Since(start)
	if err != nil {
		return 0, err
	}
	if h.dead.Load() != nil {
		return 0, fmt.Errorf("a result was dead-lettered: %w", *h.dead.Load())
	}
	if t := acct.Read(nil); got.Load() != int64(n) || t.Delivered != uint64(n) {
		return 0, fmt.Errorf("published %d, delivered %d, the sink took %d", n, t.Delivered, got.Load())
	}
	return el, nil
}

// host is a pipeline's side of its pump, as runtime's is, with no
// request waiting and no trace.
type host struct{ dead atomic.Pointer[error] }

func (*host) Result(r *ra.Result, stage string, h *p2pqueue.Header, floats []float32, bytes []byte) {
	r.ID, r.Type, r.Floats, r.Bytes, r.Stage = h.ID, h.Type, floats, bytes, stage // as runtime's
}
func (*host) Answer(uint64, ra.Result) bool                      { return false }
func (h *host) Dead(_ uint32, _ uint64, _ egress.Why, err error) { h.dead.CompareAndSwap(nil, &err) }
func (*host) Traced(uint32, uint64, time.Time)                   {}

// QueueIn is SendBatch's baseline: the same consumer, which releases
// what it reads, and a producer that publishes n prebuilt messages of 64
// bytes in batches of Batch with EnqueueBatch (a copy into the slots).
func QueueIn(ctx context.Context, n int) (time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p, c, err := newLink()
	if err != nil {
		return 0, err
	}
	got := make(chan error, 1)
	var released int
	start := time.Now()
	go func() {
		var err error
		released, err = drain(ctx, c)
		got <- err
	}()
	if err := produce(ctx, p, n); err != nil {
		cancel()
		<-got
		return 0, err
	}
	if err := <-got; err != nil {
		return 0, err
	}
	el := time.Since(start)
	if released != n {
		return 0, fmt.Errorf("published %d, released %d", n, released)
	}
	return el, nil
}

// QueueOut is Egress's baseline: the same producer, and a consumer that
// takes the messages out with DequeueBatch (a copy out of the slots, into
// reused buffers), in batches of Batch.
func QueueOut(ctx context.Context, n int) (time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p, c, err := newLink()
	if err != nil {
		return 0, err
	}
	out := make([]p2pqueue.Message, Batch)
	for i := range out {
		out[i].Payload = make([]byte, 0, 4*Floats)
	}
	perr := make(chan error, 1)
	start := time.Now()
	go func() { perr <- produce(ctx, p, n) }()
	got := 0
	for {
		k, err := c.DequeueBatch(ctx, out)
		got += k
		if errors.Is(err, p2pqueue.ErrClosed) {
			break
		}
		if err != nil {
			cancel()
			<-perr
			return 0, err
		}
	}
	el := time.Since(start)
	if err := <-perr; err != nil {
		return 0, err
	}
	if got != n {
		return 0, fmt.Errorf("published %d, dequeued %d", n, got)
	}
	return el, nil
}
