//go:build !cgo

package cuda

import "errors"

func nvmlDevices() ([]nvmlGPU, error) {
	return nil, errors.New("built without cgo, so NVML cannot be loaded")
}

type nvmlSample struct {
	util        float64
	used, total uint64
}

func nvmlSamples() (map[pciAddr]nvmlSample, error) {
	return nil, errors.New("built without cgo, so NVML cannot be loaded")
}
