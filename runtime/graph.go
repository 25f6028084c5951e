package runtime

import (
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/runtime/internal/graph"
)

// Route picks which of a stage's To gets each of its results
// (ringkernel.Route has the table).
type Route = rk.Route

// The routes a stage may take.
const (
	// RouteOne: every result to the one stage in To (a chain's link).
	RouteOne = rk.RouteOne
	// RouteAll: a copy of every result to each stage in To, a message of
	// its own with the same id, counted in PipelineStats.Copied (how a
	// request is answered: Request, RequestAs).
	RouteAll = rk.RouteAll
	// RouteRoundRobin: the results to the stages in To in turn.
	RouteRoundRobin = rk.RouteRoundRobin
	// RouteKey: a result to To[KeyHash(key) mod len(To)], where key is the
	// u32 at the stage's KeyOffset in the result (for a float32 vector,
	// element KeyOffset/4's bits): one key always reaches the same stage.
	// Build refuses it on results that travel as msgpack.
	RouteKey = rk.RouteKey
	// RoutePort: a result to To[port], the port the stage's op chose (an
	// op with Ports, such as the built-in branch).
	RoutePort = rk.RoutePort
)

// fanout is how many messages each result of s makes downstream: a copy
// per stage in To under RouteAll, else one (an exit's goes to its egress).
func (s *stage) fanout() int { return graph.Fanout(s.spec.Route, len(s.outs)) }
