package devreg

import (
	"context"
	"errors"
	"fmt"

	"github.com/ringactor/ringactor/kernels"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// Stage is where one stage of a pipeline runs, for OpenDevices.
type Stage struct {
	Name   string
	Device int
}

// OpenDevices opens, within ctx, every device the stages of pipeline run
// on, where b has setup to do (rk.DeviceOpener: the CUDA backend's
// context, arenas and clock calibration), so that Build's ctx, not a
// constant, bounds that setup on a busy host.
func OpenDevices(ctx context.Context, b rk.Backend, pipeline string, stages []Stage) error {
	o, ok := b.(rk.DeviceOpener)
	if !ok {
		return nil
	}
	seen := map[int]bool{}
	for _, s := range stages {
		if seen[s.Device] {
			continue
		}
		seen[s.Device] = true
		if err := o.OpenDevice(ctx, s.Device); err != nil {
			return fmt.Errorf("ringactor: pipeline %q: opening device %d for stage %q: %w", pipeline, s.Device, s.Name, err)
		}
	}
	return nil
}

// SupportsOp asks b whether device can run op (rk.Supporter). Where the
// answer is no and the CPU, device cpu, can run it, the fix it gives
// names the CPU as code names it, runtime.CPU, and its id here.
func SupportsOp(b rk.Backend, cpu, device int, op kernels.Op) error {
	s, ok := b.(rk.Supporter)
	if !ok {
		return nil
	}
	err := s.Supports(device, op)
	u, ok := errors.AsType[*rk.UnsupportedError](err)
	if !ok {
		return err
	}
	if u.Kind != rk.KindCPU && s.Supports(cpu, op) == nil {
		g := *u
		g.Fix = fmt.Sprintf("place it on the CPU: Device: runtime.CPU (device %d here, %q in a device list)", cpu, rk.CPUName)
		return &g
	}
	return err
}
