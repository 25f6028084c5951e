package runtime

// GuideSpec is the multi-GPU guide's pipeline, x*2 → sqrt → +1, with its
// stages on devices[0], devices[1] and devices[2]: the main job's pipeline,
// and the one `ringactor describe` shows.
//
// Deprecated: a demo, not library API; it will be removed in the next
// release. Write the three StageSpecs in your own code (they are the
// body of this function).
func GuideSpec(name string, devices [3]int) PipelineSpec {
	return PipelineSpec{Name: name, Stages: []StageSpec{
		{Name: "x2", Op: "scale", Params: []float32{2}, Device: devices[0]},
		{Name: "sqrt", Op: "sqrt", Device: devices[1]},
		{Name: "plus1", Op: "offset", Params: []float32{1}, Device: devices[2]},
	}}
}
