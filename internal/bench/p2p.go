package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	goruntime "runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	ra "github.com/ringactor/ringactor/runtime"
)

// The P2P rows: for every ordered pair of GPUs (i, j), diagonal included,
// how fast one ring kernel on i moves messages to one on j over a peer
// link (j's device memory, written by i through the peer mapping; on the
// diagonal, i's own memory) and over a host-staged link (portable pinned
// host memory), at three payload sizes.
//
// What is timed is the link and the two kernels at its ends, not the host:
//
//	host → [ingress] → fill (i) → [source, i's memory] → send (i) → [the link] → recv (j, a sink)
//
// The fill kernel first copies a chunk of messages into the source link
// while send is inactive. The clock then runs from activating send until
// recv has counted the whole chunk, and send is deactivated for the next
// chunk. So the host's writes into pinned memory, which cross PCIe, never
// limit the link being measured. Every kernel runs the built-in "pass"
// op: the message moves through unchanged.
//
// On simulated devices every kind of memory is Go memory and every kernel
// is a goroutine: the rows measure memory copies between goroutines,
// which is what the sim does, and their note says so.

// p2pSize is one payload size of the P2P rows.
type p2pSize struct {
	name     string
	bytes    int
	messages int // per run at full size
	least    int // the fewest per run, whatever the scale
}

var p2pSizes = []p2pSize{
	{"64B", 64, 800_000, 1000},
	{"1KiB", 1 << 10, 200_000, 250},
	{"64KiB", 64 << 10, 8_000, 16},
}

// p2pType tags the bench's messages: opaque bytes, which pass moves on.
const p2pType = kernels.FirstUserType

// p2pLinkBytes bounds each link of a chain (and the source link, which
// holds one chunk, at 4x that), so a chain fits the CUDA backend's
// default arenas at every size.
const p2pLinkBytes = 2 << 20

// p2pDevices opens the devices the P2P rows run on, reports them on say,
// and returns the comparisons: one per ordered pair and size, the peer
// link measured against the staged one (or the staged link alone where
// the pair has no peer access).
func p2pDevices(o Options, say func(string, ...any)) (rt *ra.Runtime, cs []comparison, err error) {
	dopts := o.Devices
	if dopts.Log == nil {
		dopts.Log = io.Discard
	}
	rt, err = ra.New(ra.Config{Devices: dopts})
	if err != nil {
		return nil, nil, fmt.Errorf("p2p rows: %w", err)
	}
	reg := rt.Registry()
	gpus := reg.GPUs()
	note := deviceNote(reg)
	say("p2p rows on %d %s devices: %s", len(gpus), reg.BackendName(), reg.Note())
	if reg.BackendName() == "cuda" && len(gpus) > 0 {
		c, err := cudaPipeline(rt, note)
		if err != nil {
			rt.Close()
			return nil, nil, err
		}
		cs = append(cs, c, cudaAllReduce(rt, note))
	} else {
		for _, row := range []string{"pipeline/cuda-3stage", "allreduce/cuda-device-links"} {
			if wants(o.Only, row) && o.Only != "" {
				say("%s left out: the devices are %s (run with -backend cuda on a GPU, or on the emulated driver)", row, reg.BackendName())
			}
		}
	}
	for _, sz := range p2pSizes {
		for _, from := range gpus {
			for _, to := range gpus {
				cs = append(cs, p2pComparison(rt, from.ID, to.ID, sz, note))
			}
		}
	}
	return rt, cs, nil
}

// deviceNote is the note of the rows measured on reg's devices: what
// simulated and emulated devices measure ("" on a GPU).
func deviceNote(reg *ra.Registry) string {
	gpus := reg.GPUs()
	switch {
	case reg.BackendName() == "sim":
		return "simulated devices: memory copies between goroutines"
	case len(gpus) > 0 && strings.Contains(gpus[0].Name, "emulated"):
		return "emulated CUDA driver: the device loop on CPU threads"
	}
	return ""
}

// p2pName is the row name of a pair, size and link mode.
func p2pName(from, to int, size, mode string) string {
	return fmt.Sprintf("p2p/%d-%d/%s/%s", from, to, size, mode)
}

// p2pNames lists the device rows for Names (the P2P rows' shape: the
// devices are known only once they are opened).
func p2pNames() []string {
	return []string{"p2p/<from>-<to>/{64B,1KiB,64KiB}/{peer,staged}", "pipeline/cuda-3stage", "allreduce/cuda-{device-links,host-hops}"}
}

// p2pRange names the first and last of cs's rows, for an error.
func p2pRange(cs []comparison) string {
	if len(cs) == 0 {
		return "none: no GPU to measure"
	}
	return cs[0].candidate.name + " ... " + cs[len(cs)-1].candidate.name
}

func p2pComparison(rt *ra.Runtime, from, to int, sz p2pSize, note string) comparison {
	var peer, staged p2pChain
	backend := rt.Registry().BackendName()
	staged.mode, peer.mode = "staged", "peer"
	c := comparison{
		candidate: member{p2pName(from, to, sz.name, "staged"), backend, staged.run},
		messages:  sz.messages,
		least:     sz.least,
		bytes:     sz.bytes,
		note:      note,
	}
	hasPeer := from == to || rt.Registry().Peer(from, to)
	if hasPeer {
		c.candidate = member{p2pName(from, to, sz.name, "peer"), backend, peer.run}
		c.baselines = []member{{p2pName(from, to, sz.name, "staged"), backend, staged.run}}
	}
	c.setup = func(ctx context.Context) (func(), error) {
		chains := []*p2pChain{&staged}
		if hasPeer {
			chains = append(chains, &peer)
		}
		for _, ch := range chains {
			if err := ch.open(ctx, rt.Backend(), from, to, sz.bytes); err != nil {
				for _, o := range chains {
					o.close()
				}
				return nil, fmt.Errorf("%s link %d→%d: %w", ch.mode, from, to, err)
			}
		}
		return func() {
			for _, ch := range chains {
				ch.close()
			}
		}, nil
	}
	return c
}

// p2pChain is fill → send → recv over one link mode.
type p2pChain struct {
	mode    string // "peer" or "staged"
	b       rk.Backend
	regions []p2pqueue.Region
	kernels []*rk.Kernel
	fill    *rk.Kernel
	send    *rk.Kernel
	recv    *rk.Kernel
	in      *p2pqueue.Producer
	chunk   int    // messages the source link holds
	payload []byte // what every message carries
	filled  uint64 // fill's processed count so far
	got     uint64 // recv's processed count so far
}

func (ch *p2pChain) open(ctx context.Context, b rk.Backend, from, to, bytes int) error {
	ch.b = b
	ch.payload = make([]byte, bytes)
	for i := range ch.payload {
		ch.payload[i] = byte(i)
	}
	probe := p2pqueue.ConfigFor(1, bytes)
	slot := int(probe.SlotSize)
	capacity := func(budget int) uint32 {
		c := uint32(p2pqueue.MinCapacity)
		for int(c)*2*slot <= budget && c < 1<<16 {
			c *= 2
		}
		return c
	}
	ingress, err := ch.link(p2pqueue.Placement{Kind: p2pqueue.LinkIngress, Memory: p2pqueue.MappedPinnedMemory, Device: from}, capacity(p2pLinkBytes), bytes, 1)
	if err != nil {
		return err
	}
	source, err := ch.link(p2pqueue.Placement{Kind: p2pqueue.LinkLocal, Memory: p2pqueue.DeviceMemory, Device: from}, capacity(4*p2pLinkBytes), bytes, 2)
	if err != nil {
		return err
	}
	ch.chunk = int(source.Config().Capacity)
	pl := p2pqueue.Placement{Kind: p2pqueue.LinkStaged, Memory: p2pqueue.PortablePinnedMemory, Device: to}
	if ch.mode == "peer" {
		// The placement a pipeline gets where the pair has peer access
		// (or is one device): the bench asks for it, and for the staged
		// link above, whatever the topology would pick.
		if pl, err = p2pqueue.Place(from, to, p2pqueue.PeerFunc(func(int, int) bool { return true })); err != nil {
			return err
		}
	}
	link, err := ch.link(pl, capacity(p2pLinkBytes), bytes, 3)
	if err != nil {
		return err
	}
	local := pl.Kind == p2pqueue.LinkLocal
	specs := []rk.Spec{
		{Stage: rk.Stage{Name: "p2p-fill", Op: "pass"}, ID: 1, Device: from, In: []*p2pqueue.Link{ingress},
			Out: []*p2pqueue.Link{source}, OutLocal: []bool{true}},
		{Stage: rk.Stage{Name: "p2p-send", Op: "pass"}, ID: 2, Device: from, In: []*p2pqueue.Link{source}, InLocal: []bool{true},
			Out: []*p2pqueue.Link{link}, OutLocal: []bool{local}},
		{Stage: rk.Stage{Name: "p2p-recv", Op: "pass"}, ID: 3, Device: to, In: []*p2pqueue.Link{link}, InLocal: []bool{local}},
	}
	for i, s := range specs {
		k, err := rk.Launch(ctx, b, s)
		if err != nil {
			return err
		}
		ch.kernels = append(ch.kernels, k)
		if i != 1 { // send waits for the first chunk
			if err := k.Activate(ctx); err != nil {
				return err
			}
		}
	}
	ch.fill, ch.send, ch.recv = ch.kernels[0], ch.kernels[1], ch.kernels[2]
	if ch.in, err = ingress.Producer(); err != nil {
		return err
	}
	return nil
}

func (ch *p2pChain) link(pl p2pqueue.Placement, capacity uint32, bytes int, id p2pqueue.LinkID) (*p2pqueue.Link, error) {
	cfg := p2pqueue.ConfigFor(capacity, bytes)
	cfg.LinkID = id
	n, err := cfg.RegionSize()
	if err != nil {
		return nil, err
	}
	r, err := ch.b.Alloc(pl.Device, n, pl.Memory)
	if err != nil {
		return nil, err
	}
	ch.regions = append(ch.regions, r)
	return p2pqueue.Init(r, cfg)
}

func (ch *p2pChain) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, k := range ch.kernels {
		k.Terminate(ctx, false)
	}
	for _, r := range ch.regions {
		ch.b.Free(r)
	}
	ch.kernels, ch.regions = nil, nil
}

// run moves n messages from send to recv, a chunk at a time, and returns
// the time the link was moving them.
func (ch *p2pChain) run(ctx context.Context, n int, _ *latencies) (time.Duration, error) {
	batch := make([]p2pqueue.Message, 64)
	for i := range batch {
		batch[i] = p2pqueue.Message{Header: p2pqueue.Header{Type: p2pType}, Payload: ch.payload}
	}
	var moving time.Duration
	for left := n; left > 0; {
		k := min(left, ch.chunk)
		left -= k
		for sent := 0; sent < k; {
			m, err := ch.in.EnqueueBatch(ctx, batch[:min(len(batch), k-sent)])
			sent += m
			if err != nil {
				return 0, err
			}
		}
		ch.filled += uint64(k)
		if err := ch.await(ctx, ch.fill, ch.filled); err != nil {
			return 0, err
		}
		start := time.Now()
		if err := ch.send.Activate(ctx); err != nil {
			return 0, err
		}
		ch.got += uint64(k)
		if err := ch.await(ctx, ch.recv, ch.got); err != nil {
			return 0, err
		}
		moving += time.Since(start)
		if err := ch.send.Deactivate(ctx); err != nil {
			return 0, err
		}
	}
	return moving, nil
}

// errStalled: a kernel of the chain made no progress for p2pStall.
var errStalled = errors.New("made no progress")

const p2pStall = 10 * time.Second

// await waits until k has processed want messages in all, spinning first
// (a fast link finishes a chunk within microseconds), then sleeping in
// short steps so a simulated kernel on the same cores gets them.
func (ch *p2pChain) await(ctx context.Context, k *rk.Kernel, want uint64) error {
	last, since := uint64(0), time.Now()
	for spins := 0; ; spins++ {
		c := k.Counters()
		if c.Dropped != 0 || c.Errors != 0 {
			return fmt.Errorf("kernel %s dead-lettered %d messages (%d errors): %v", k.Stage().Name, c.Dropped, c.Errors, k.Status().LastError)
		}
		if c.Processed >= want {
			return nil
		}
		if c.Processed != last {
			last, since = c.Processed, time.Now()
		} else if time.Since(since) > p2pStall {
			return fmt.Errorf("kernel %s %w in %v (%d of %d messages)", k.Stage().Name, errStalled, p2pStall, c.Processed, want)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if spins < 256 {
			goruntime.Gosched()
		} else {
			time.Sleep(20 * time.Microsecond)
		}
	}
}

// printP2P writes the P2P rows among rows as one matrix per message size,
// as p2pBandwidthLatencyTest does: the producer's device down, the
// consumer's across, each cell the peer link's GB/s, the staged link's,
// and their ratio.
func printP2P(w io.Writer, rows []Row) {
	type cell struct{ peer, staged float64 }
	type key struct{ from, to int }
	var sizes []string
	bySize := map[string]map[key]*cell{}
	devs := map[int]bool{}
	note := ""
	for _, r := range rows {
		var from, to int
		var size, mode string
		if !strings.HasPrefix(r.Name, "p2p/") {
			continue
		}
		if _, err := fmt.Sscanf(strings.NewReplacer("/", " ", "-", " ").Replace(r.Name[len("p2p/"):]), "%d %d %s %s", &from, &to, &size, &mode); err != nil {
			continue
		}
		m := bySize[size]
		if m == nil {
			m = map[key]*cell{}
			bySize[size] = m
			sizes = append(sizes, size)
		}
		c := m[key{from, to}]
		if c == nil {
			c = &cell{}
			m[key{from, to}] = c
		}
		if mode == "peer" {
			c.peer = r.GBPerSec
		} else {
			c.staged = r.GBPerSec
		}
		devs[from], devs[to] = true, true
		if r.Note != "" {
			note = " (" + r.Note + ")"
		}
	}
	if len(sizes) == 0 {
		return
	}
	ids := slices.Sorted(maps.Keys(devs))
	noPeer := false
	for _, size := range sizes {
		fmt.Fprintf(w, "\np2p %s messages: GB/s over a peer link / over a host-staged link (peer ÷ staged)%s\n", size, note)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprint(tw, "from\\to")
		for _, to := range ids {
			fmt.Fprintf(tw, "\t%d", to)
		}
		fmt.Fprintln(tw)
		for _, from := range ids {
			fmt.Fprintf(tw, "%d", from)
			for _, to := range ids {
				c := bySize[size][key{from, to}]
				switch {
				case c == nil:
					fmt.Fprint(tw, "\t")
				case c.peer == 0:
					fmt.Fprintf(tw, "\t- / %s", gbs(c.staged))
					noPeer = true
				default:
					fmt.Fprintf(tw, "\t%s / %s (%.2fx)", gbs(c.peer), gbs(c.staged), c.peer/c.staged)
				}
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
	}
	if noPeer {
		fmt.Fprintln(w, "(-: the pair has no peer access, so only the staged link was measured)")
	}
}

func gbs(v float64) string {
	if v >= 10 {
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
