package bench

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/ringactor/ringactor/internal/nodeproc"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/cluster"
)

// The remote comparison: a message goes from this process to a node in a
// second process on 127.0.0.1 and back. The candidate is a cluster
// pipeline (a local stage, then a stage on the other node, results back
// here) whose links send egress batches as one protoactor remote message;
// the baseline sends each message as its own protoactor remote message (the
// same msgpack Data in the same protobuf BytesValue) to an actor there that
// sends it back.

// remoteBatch is how many messages each SendBatch of the candidate carries.
const remoteBatch = 256

// remoteWindow is the candidate's window: messages out on the other node.
const remoteWindow = 32768

// remoteNodes is this process's node and its peer process: one of each per
// process, since protoactor remote is process-wide. They live until the
// process ends (the peer exits when its stdin closes).
var remoteNodes struct {
	once sync.Once
	node *cluster.Node
	peer *nodeproc.Proc
	echo *actor.PID
	err  error
}

func startRemote(ctx context.Context) error {
	remoteNodes.once.Do(func() {
		ports, err := nodeproc.FreePorts(2)
		if err != nil {
			remoteNodes.err = err
			return
		}
		peers := []string{fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])}
		const clusterName = "ringactor-bench"
		rt, err := ra.New(ra.Config{Devices: ra.DeviceOptions{Backend: "sim", SimDevices: 1, Log: io.Discard}})
		if err != nil {
			remoteNodes.err = err
			return
		}
		jctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		node, err := cluster.Join(jctx, rt, cluster.NodeConfig{Name: "bench-a", Cluster: clusterName, ManagePort: ports[0], Peers: peers})
		if err != nil {
			remoteNodes.err = err
			return
		}
		peer, err := nodeproc.Start(jctx, nodeproc.Config{Name: "bench-b", Cluster: clusterName, ManagePort: ports[1], Peers: peers, SimDevices: 1, Echo: true})
		if err != nil {
			remoteNodes.err = fmt.Errorf("%w (a program that runs the remote benchmark calls nodeproc.Main first)", err)
			return
		}
		if err := node.WaitFor(jctx, "bench-b"); err != nil {
			remoteNodes.err = err
			return
		}
		remoteNodes.node, remoteNodes.peer = node, peer
		remoteNodes.echo = actor.NewPID(peer.Address(), "echo")
	})
	return remoteNodes.err
}

type remoteBench struct{ round int }

func (r *remoteBench) setup(ctx context.Context) (func(), error) {
	return func() {}, startRemote(ctx)
}

// batched runs n messages through a cluster pipeline whose second stage is
// on the peer node.
func (r *remoteBench) batched(ctx context.Context, n int, lat *latencies) (time.Duration, error) {
	r.round++
	c := newCounter(n)
	cp, err := remoteNodes.node.Build(ctx, ra.PipelineSpec{
		Name: fmt.Sprintf("remote-%d", r.round),
		Stages: []ra.StageSpec{
			{Name: "plus1", Op: "offset", Params: []float32{1}, Device: 0, Node: "bench-b", Capacity: 8192},
		},
		Deliver: ra.Sink{Func: func(res ra.Result) {
			lat.arrive(res.ID)
			c.add()
		}},
	}, cluster.Options{Window: remoteWindow})
	if err != nil {
		return 0, err
	}
	defer cp.Close(context.Background(), false)
	ds := make([]ra.Data, remoteBatch)
	vs := make([]float32, remoteBatch*floats)
	start := time.Now()
	for id := uint64(1); id <= uint64(n); {
		k := min(remoteBatch, n-int(id)+1)
		for i := range k {
			v := vs[i*floats : (i+1)*floats]
			for j := range v {
				v[j] = input(id+uint64(i), j)
			}
			lat.send(id + uint64(i))
			ds[i] = ra.Data{ID: id + uint64(i), Floats: v}
		}
		if _, err := cp.SendBatch(ctx, ds[:k]); err != nil {
			return 0, err
		}
		id += uint64(k)
	}
	if err := c.wait(ctx, "remote pipeline"); err != nil {
		return 0, err
	}
	el := time.Since(start)
	if err := cp.Close(ctx, true); err != nil {
		return 0, err
	}
	if st := cp.Stats(); st.Delivered != uint64(n) || st.DeadLettered != 0 {
		return 0, fmt.Errorf("remote pipeline account: sent %d, delivered %d, dead-lettered %d; want %d delivered", st.Sent, st.Delivered, st.DeadLettered, n)
	}
	return el, nil
}

// unbatched sends each message on its own to the peer's echo actor, which
// sends it back to a local actor that decodes and counts it.
func (r *remoteBench) unbatched(ctx context.Context, n int, lat *latencies) (time.Duration, error) {
	r.round++
	root := remoteNodes.node.Runtime().System().Root
	c := newCounter(n)
	var bad atomic.Pointer[error]
	back, err := root.SpawnNamed(actor.PropsFromFunc(func(ac actor.Context) {
		m, ok := ac.Message().(*wrapperspb.BytesValue)
		if !ok {
			return
		}
		d, err := cluster.DecodeMessage(m.Value)
		if err != nil {
			bad.Store(&err)
			return
		}
		lat.arrive(d.(ra.Data).ID)
		c.add()
	}), fmt.Sprintf("remote-back-%d", r.round))
	if err != nil {
		return 0, err
	}
	defer func() { root.StopFuture(back).Wait() }() // not `defer root.StopFuture(back).Wait()`: that stops it now
	v := make([]float32, floats)
	start := time.Now()
	for id := uint64(1); id <= uint64(n); id++ {
		for j := range v {
			v[j] = input(id, j)
		}
		lat.send(id)
		b, err := cluster.EncodeMessage(ra.Data{ID: id, Floats: v})
		if err != nil {
			return 0, err
		}
		root.RequestWithCustomSender(remoteNodes.echo, &wrapperspb.BytesValue{Value: b}, back)
	}
	if err := c.wait(ctx, "remote echo"); err != nil {
		if e := bad.Load(); e != nil {
			err = fmt.Errorf("%w (a reply did not decode: %v)", err, *e)
		}
		return 0, err
	}
	return time.Since(start), nil
}
