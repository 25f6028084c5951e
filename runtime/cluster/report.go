package cluster

import (
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/cluster/internal/wire"
)

// reportOf is p's report: its stages' counters and latencies, in order.
func reportOf(p *ra.Pipeline) []wire.ReportStage {
	st, lat := p.Stats().Stages, p.Latency()
	rep := make([]wire.ReportStage, len(st))
	for i := range st {
		rep[i].Stats = st[i]
		if i < len(lat) {
			rep[i].Lat = lat[i]
		}
	}
	return rep
}

// onNode marks a report's stages as running on node.
func onNode(rep []wire.ReportStage, node string) []wire.ReportStage {
	out := make([]wire.ReportStage, len(rep))
	for i, s := range rep {
		s.Stats.Node, s.Lat.Node = node, node
		out[i] = s
	}
	return out
}
