package runtime_test

import (
	"context"
	"fmt"
	"io"
	"time"

	ra "github.com/ringactor/ringactor/runtime"
)

// A graph: the branch op sends each message down one of two stages by its
// first element, and both feed a merge stage, the exit. A request comes
// back through whichever branch its message took.
func ExamplePipelineSpec_graph() {
	rt, err := ra.New(ra.Config{Devices: ra.DeviceOptions{Backend: "sim", SimDevices: 4, Log: io.Discard}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := rt.Build(ctx, ra.PipelineSpec{Name: "diamond", Stages: []ra.StageSpec{
		{Name: "split", Op: "branch", Params: []float32{50}, Route: ra.RoutePort, To: []string{"low", "high"}, Device: 0},
		{Name: "low", Op: "scale", Params: []float32{2}, To: []string{"merge"}, Device: 1},
		{Name: "high", Op: "offset", Params: []float32{-100}, To: []string{"merge"}, Device: 2},
		{Name: "merge", Op: "identity", Device: 3},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close(ctx, true)
	if err := p.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	for _, x := range []float32{7, 70} {
		r, err := p.Request(ctx, ra.Data{Floats: []float32{x}})
		fmt.Println(x, "→", r.Floats, "from", r.Stage, err)
	}
	// Output:
	// 7 → [14] from merge <nil>
	// 70 → [-30] from merge <nil>
}
