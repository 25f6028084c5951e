package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/ringactor/ringactor/kernels"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// openDevices opens, within ctx, every device spec's stages run on, where
// the backend has setup to do (rk.DeviceOpener: the CUDA backend's
// context, arenas and clock calibration), so that Build's ctx, not a
// constant, bounds that setup on a busy host.
func (rt *Runtime) openDevices(ctx context.Context, spec *PipelineSpec) error {
	o, ok := rt.backend.(rk.DeviceOpener)
	if !ok {
		return nil
	}
	seen := map[int]bool{}
	for _, s := range spec.Stages {
		if seen[s.Device] {
			continue
		}
		seen[s.Device] = true
		if err := o.OpenDevice(ctx, s.Device); err != nil {
			return fmt.Errorf("ringactor: pipeline %q: opening device %d for stage %q: %w", spec.Name, s.Device, s.Name, err)
		}
	}
	return nil
}

// supports asks the backend of device whether it can run op (ringkernel's
// Supporter). Where the answer is no and the CPU can run it, the fix it
// gives names the CPU's id.
func (rt *Runtime) supports(device int, op kernels.Op) error {
	s, ok := rt.backend.(rk.Supporter)
	if !ok {
		return nil
	}
	err := s.Supports(device, op)
	u, ok := errors.AsType[*rk.UnsupportedError](err)
	if !ok {
		return err
	}
	if cpu := rt.reg.CPUDevice(); u.Kind != KindCPU && s.Supports(cpu.ID, op) == nil {
		g := *u
		g.Fix = fmt.Sprintf("place it on the CPU, device %d (%q)", cpu.ID, CPUName)
		return &g
	}
	return err
}
