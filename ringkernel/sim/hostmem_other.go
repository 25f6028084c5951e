//go:build !linux

package sim

// hostMemory is unknown off Linux: 0, 0.
func hostMemory() (total, free uint64) { return 0, 0 }
