package sim

import "syscall"

// hostMemory is the host's total and free memory in bytes (0, 0 where the
// kernel does not say).
func hostMemory() (total, free uint64) {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return 0, 0
	}
	unit := uint64(si.Unit)
	if unit == 0 {
		unit = 1
	}
	return uint64(si.Totalram) * unit, uint64(si.Freeram+si.Bufferram) * unit
}
