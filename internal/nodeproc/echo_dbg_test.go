package nodeproc_test

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/ringactor/ringactor/internal/nodeproc"
	ra "github.com/ringactor/ringactor/runtime"
)

func TestEchoDbg2(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := nodeproc.Start(ctx, nodeproc.Config{Name: "b", ManagePort: bManage, Peers: peers, Echo: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(ctx)
	origin.WaitFor(ctx, "b")
	spec := guide("dbg")
	cp, err := origin.Build(ctx, spec, ra.ClusterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cp.SendBatch(ctx, batchOf(1, 100, 8))
	t.Log(cp.Close(ctx, true), cp.Stats())
	pid := actor.NewPID(p.Address(), "echo")
	root := origin.Runtime().System().Root
	got := make(chan any, 10)
	back, err := root.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) { got <- c.Message() }), "back-x")
	t.Log(back, err)
	root.RequestWithCustomSender(pid, &wrapperspb.BytesValue{Value: []byte("hi")}, back)
	for {
		select {
		case m := <-got:
			t.Logf("%T %v", m, m)
		case <-time.After(3 * time.Second):
			t.Log(p.Stderr())
			return
		}
	}
}
