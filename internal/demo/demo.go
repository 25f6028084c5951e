// Package demo holds the demo pipeline of the multi-GPU guide, x*2 →
// sqrt → +1: the main job's (examples/pipeline), the one `ringactor
// describe` and `ringactor top` show, and the benchmarks' and tests'. A
// demo is not library API, so it lives here and not in package runtime.
package demo

import ra "github.com/ringactor/ringactor/runtime"

// Guide is the guide's pipeline, x*2 → sqrt → +1, with its stages on
// devices[0], devices[1] and devices[2].
func Guide(name string, devices [3]int) ra.PipelineSpec {
	return ra.PipelineSpec{Name: name, Stages: []ra.StageSpec{
		{Name: "x2", Op: "scale", Params: []float32{2}, Device: devices[0]},
		{Name: "sqrt", Op: "sqrt", Device: devices[1]},
		{Name: "plus1", Op: "offset", Params: []float32{1}, Device: devices[2]},
	}}
}
