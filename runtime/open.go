package runtime

import (
	"context"
	"fmt"

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
