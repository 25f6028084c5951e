// Package speccheck checks a pipeline spec before Build makes anything
// (runtime.Runtime.Build): its name, sample ratio and sinks, each
// stage's device, links, op and backpressure, and then its graph
// (package graph). Every error says what to change; the caller wraps it
// in runtime.ErrBadPipeline.
package speccheck

import (
	"fmt"
	"math"

	"github.com/ringactor/ringactor/kernels"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/runtime/internal/graph"
	"github.com/ringactor/ringactor/runtime/internal/links"
	"github.com/ringactor/ringactor/runtime/internal/naming"
)

// Stage is what Check reads of one stage, defaults filled in and its
// device resolved.
type Stage struct {
	Node string
	// Graph is the stage as the graph sees it; Check resolves its Op.
	Graph  graph.Stage
	Kernel rk.Stage
	Link   links.Stage
	// BackpressureOK: Backpressure is Block or Reject; Backpressure is
	// its value, for the error.
	BackpressureOK bool
	Backpressure   int
}

// Pipeline is what Check reads of the spec and the runtime.
type Pipeline struct {
	Name        string
	SampleRatio float64
	Sinks       int // how many of Deliver's sinks are set
	StealIn     int // a stage group's extra in-links of the first stage
	Stages      []Stage

	Reg                  *rk.Registry
	DefCapacity, DefSlot int
	Supports             func(device int, op kernels.Op) error
	TypeName             func(uint32) string
}

// Check checks the pipeline and resolves its graph. A naming error is
// returned bare (the caller says it is the pipeline's), the others say
// which stage.
func Check(p Pipeline) (g graph.Graph, named bool, err error) {
	if err := naming.Check("pipeline", p.Name, ""); err != nil {
		return g, false, err
	}
	if len(p.Stages) == 0 {
		return g, true, fmt.Errorf("no stages")
	}
	if p.SampleRatio < 0 || p.SampleRatio > 1 || math.IsNaN(p.SampleRatio) {
		return g, true, fmt.Errorf("sample ratio %g; want 0 to 1", p.SampleRatio)
	}
	if p.Sinks > 1 {
		return g, true, fmt.Errorf("Deliver names %d sinks; set one of Func, Chan, PID", p.Sinks)
	}
	gs := make([]graph.Stage, len(p.Stages))
	for i, s := range p.Stages {
		name, device := s.Link.Name, s.Link.Device
		if s.Node != "" {
			return g, true, fmt.Errorf("stage %q names node %q: a pipeline across nodes is built with package runtime/cluster (Join, then Node.Build)", name, s.Node)
		}
		dev, err := p.Reg.Device(device)
		if err != nil {
			return g, true, fmt.Errorf("stage %q: %w", name, err)
		}
		if err := links.Check(s.Link, dev, p.Reg.CPUDevice().MemoryBytes, p.DefCapacity, p.DefSlot); err != nil {
			return g, true, err
		}
		gs[i] = s.Graph
		if gs[i].Op, err = s.Kernel.Resolve(); err != nil {
			return g, true, err
		}
		if !s.BackpressureOK {
			return g, true, fmt.Errorf("stage %q: Backpressure %d; use Block or Reject", name, s.Backpressure)
		}
		if err := p.Supports(device, gs[i].Op); err != nil {
			return g, true, fmt.Errorf("stage %q: %w", name, err)
		}
	}
	g, err = graph.Resolve(gs, p.StealIn, p.TypeName)
	return g, true, err
}
