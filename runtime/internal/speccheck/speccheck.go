// Package speccheck checks a pipeline spec before Build makes anything
// (runtime.Runtime.Build): its name, sample ratio and sinks, each
// stage's device, links, op and backpressure, and then its graph
// (package graph). Every error says what to change, and wraps the
// caller's sentinel (runtime.ErrBadPipeline).
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
	// Bad is the sentinel every error wraps, then the pipeline's name
	// ("<Bad> \"name\": ..."; a bad name itself: "<Bad>: ...").
	Bad error
}

// Check checks the pipeline and resolves its graph.
func Check(p Pipeline) (graph.Graph, error) {
	if err := naming.Check("pipeline", p.Name, ""); err != nil {
		return graph.Graph{}, fmt.Errorf("%w: %w", p.Bad, err)
	}
	g, err := check(p)
	if err != nil {
		return g, fmt.Errorf("%w %q: %w", p.Bad, p.Name, err)
	}
	return g, nil
}

// check is Check once the name is good; its errors say which stage.
func check(p Pipeline) (g graph.Graph, err error) {
	if len(p.Stages) == 0 {
		return g, fmt.Errorf("no stages")
	}
	if p.SampleRatio < 0 || p.SampleRatio > 1 || math.IsNaN(p.SampleRatio) {
		return g, fmt.Errorf("sample ratio %g; want 0 to 1", p.SampleRatio)
	}
	if p.Sinks > 1 {
		return g, fmt.Errorf("Deliver names %d sinks; set one of Func, Batch, Chan, PID", p.Sinks)
	}
	gs := make([]graph.Stage, len(p.Stages))
	for i, s := range p.Stages {
		name, device := s.Link.Name, s.Link.Device
		if s.Node != "" {
			return g, fmt.Errorf("stage %q names node %q: a pipeline across nodes is built with package runtime/cluster (Join, then Node.Build)", name, s.Node)
		}
		dev, err := p.Reg.Device(device)
		if err != nil {
			return g, fmt.Errorf("stage %q: %w", name, err)
		}
		if err := links.Check(s.Link, dev, p.Reg.CPUDevice().MemoryBytes, p.DefCapacity, p.DefSlot); err != nil {
			return g, err
		}
		gs[i] = s.Graph
		if gs[i].Op, err = s.Kernel.Resolve(); err != nil {
			return g, err
		}
		if !s.BackpressureOK {
			return g, fmt.Errorf("stage %q: Backpressure %d; use Block or Reject", name, s.Backpressure)
		}
		if err := p.Supports(device, gs[i].Op); err != nil {
			return g, fmt.Errorf("stage %q: %w", name, err)
		}
	}
	g, err = graph.Resolve(gs, p.StealIn, p.TypeName)
	return g, err
}
