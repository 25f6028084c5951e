//go:build !cgo || !(linux || freebsd)

package gpubench

func lookup(lib, sym string) uintptr { return 0 }

func ledgerMark(f uintptr) uint64 { return 0 }

func ledgerAt(f uintptr, from uint64, i int) (name string, n int, c [ledgerN]uint64, ok bool) {
	return "", 0, c, false
}
