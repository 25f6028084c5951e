//go:build !cgo

package runtime

import "errors"

func nvmlDevices() ([]nvmlGPU, error) {
	return nil, errors.New("built without cgo, so NVML cannot be loaded")
}
