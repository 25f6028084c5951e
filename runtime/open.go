package runtime

import (
	"context"

	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/runtime/internal/devreg"
)

// openDevices opens, within ctx, every device spec's stages run on, where
// the backend has setup to do (devreg.OpenDevices).
func (rt *Runtime) openDevices(ctx context.Context, spec *PipelineSpec) error {
	stages := make([]devreg.Stage, len(spec.Stages))
	for i, s := range spec.Stages {
		stages[i] = devreg.Stage{Name: s.Name, Device: s.Device}
	}
	return devreg.OpenDevices(ctx, rt.backend, spec.Name, stages)
}

// supports asks the backend of device whether it can run op; where the
// answer is no and the CPU can run it, the fix names the CPU's id
// (devreg.SupportsOp).
func (rt *Runtime) supports(device int, op kernels.Op) error {
	return devreg.SupportsOp(rt.backend, rt.reg.CPUDevice().ID, device, op)
}
