package runtime_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/internal/ext"
)

// A build that fails once stage actors are spawned (here: the second
// stage's actor name is held by a user's actor) gives back everything it
// took: the stage PIDs it registered for late sends, and its links. And it
// leaves the user's actor alone: the PID SpawnNamed hands back with
// ErrNameExists is that actor's, not a stage's to stop.
func TestFailedBuildGivesBackItsStagesAndLeavesOthersAlone(t *testing.T) {
	e := deviceEnv(t)
	var got atomic.Int32
	user, err := e.RT.System().Root.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(string); ok {
			got.Add(1)
			c.Respond("here")
		}
	}), "taken/root")
	if err != nil {
		t.Fatal(err)
	}
	pids, links := ra.StagePIDs(e.RT), ext.Of(e.RT).LiveLinks()
	spec := guide("taken")
	if _, err := e.RT.Build(ctxT(t), spec); err == nil || !strings.Contains(err.Error(), `stage "root" actor`) {
		t.Fatalf("Build with a stage's actor name taken: %v, want the actor's error", err)
	}
	if n := ra.StagePIDs(e.RT); n != pids {
		t.Errorf("%d stage PIDs kept after the failed build, want %d", n, pids)
	}
	if n := ext.Of(e.RT).LiveLinks(); n != links {
		t.Errorf("%d live links after the failed build, want %d", n, links)
	}
	if r, err := e.RT.System().Root.RequestFuture(user, "ping", 5*time.Second).Result(); err != nil || r != "here" {
		t.Fatalf("the user's actor holding the name: %v, %v (the failed build stopped it)", r, err)
	}
	// The name is free again for a pipeline that can be built.
	spec.Name = "free"
	p, err := e.RT.Build(ctxT(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctxT(t), true); err != nil {
		t.Fatal(err)
	}
}
