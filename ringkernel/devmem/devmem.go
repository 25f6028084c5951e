// Package devmem is the buffer interface of the backends (ggml-backend's
// buffer type): device memory a program allocates on a device, fills from
// host memory, reads back, copies to another device's buffer and frees.
// The sim backend, the CPU device's engine and the CUDA backend implement
// Backend; the runtime's public buffers are built on it.
//
// A copy between two devices takes the path p2pqueue.PathOf decides for
// the pair, the same decision p2pqueue.Place makes for links
// (docs/ARCHITECTURE.md §7): a peer copy where the source can write the
// destination's memory, staged through pinned host memory where it
// cannot.
package devmem

import (
	"context"
	"errors"
	"fmt"

	"github.com/ringactor/ringactor/p2pqueue"
)

// Kind is the kind of memory of a buffer.
type Kind uint8

const (
	// DeviceMemory is memory of the device only: the host reaches it by
	// Write and Read.
	DeviceMemory Kind = iota
	// Managed is unified memory, which host and device both address
	// (Buffer.Bytes is the host's view); only where the device reports
	// ringkernel.Device.Managed.
	Managed
)

func (k Kind) String() string {
	switch k {
	case DeviceMemory:
		return "device"
	case Managed:
		return "managed"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// ErrOutOfMemory: a device has not the memory a buffer asks for. The
// error is an *OutOfMemoryError that names the device, its free memory
// and the size asked.
var ErrOutOfMemory = errors.New("out of device memory")

// ErrNoManaged: a device has no managed (unified) memory.
var ErrNoManaged = errors.New("no managed memory on the device")

// OutOfMemoryError is an allocation a device refused for want of memory.
type OutOfMemoryError struct {
	Device int
	Name   string
	// Free is what the device had free, as far as the backend knows;
	// Asked is the buffer's size.
	Free, Asked uint64
}

func (e *OutOfMemoryError) Error() string {
	return fmt.Sprintf("%v: device %d (%s) has %d bytes free, %d bytes asked; free buffers on it, or allocate on another device", ErrOutOfMemory, e.Device, e.Name, e.Free, e.Asked)
}

// Is makes errors.Is(err, ErrOutOfMemory) true.
func (e *OutOfMemoryError) Is(target error) bool { return target == ErrOutOfMemory }

// Buffer is a buffer as its backend hands it out.
type Buffer struct {
	Device int
	Size   int
	Kind   Kind
	// Addr is its address on the device (the key its backend knows it by).
	Addr uint64
	// Bytes is the host's view where the host addresses the memory itself
	// (sim, the CPU, managed memory); nil for device memory of a GPU.
	Bytes []byte
}

// Backend is a ringkernel.Backend that has buffers. Every call that may
// wait takes a ctx and returns its error once it is done; a copy stopped
// by ctx may have written part of its destination.
type Backend interface {
	// AllocBuffer returns a zeroed buffer of size bytes on device; an
	// *OutOfMemoryError where it does not fit.
	AllocBuffer(ctx context.Context, device, size int, kind Kind) (Buffer, error)
	// Write copies src into b at off (host → device).
	Write(ctx context.Context, b Buffer, off int, src []byte) error
	// Read copies len(dst) bytes of b at off into dst (device → host).
	Read(ctx context.Context, b Buffer, off int, dst []byte) error
	// Copy copies n bytes of src at srcOff to dst at dstOff, on the path
	// p2pqueue.PathOf(src.Device, dst.Device, the backend's topology)
	// says, and returns it.
	Copy(ctx context.Context, dst Buffer, dstOff int, src Buffer, srcOff, n int) (p2pqueue.Path, error)
	// FreeBuffer gives b back. Freeing it twice is an error.
	FreeBuffer(b Buffer) error
}

// CheckAlloc refuses the AllocBuffer arguments no backend takes, the
// checks every backend makes first, in this order: a device outside
// 0..devices-1 (devices <= 0: no bound known here), a done ctx (its
// error), a size below 1, a kind other than DeviceMemory and Managed.
// who names the backend in the error.
func CheckAlloc(ctx context.Context, who string, devices, device, size int, kind Kind) error {
	if device < 0 || (devices > 0 && device >= devices) {
		return fmt.Errorf("%s: no device %d: this backend has devices 0..%d; pick one of those", who, device, devices-1)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if size <= 0 {
		return fmt.Errorf("%s: a buffer of %d bytes; ask for at least 1", who, size)
	}
	if kind != DeviceMemory && kind != Managed {
		return fmt.Errorf("%s: buffer kind %v; want devmem.DeviceMemory or devmem.Managed", who, kind)
	}
	return nil
}

// CheckCopy refuses a Copy of n bytes outside its source or destination.
func CheckCopy(dst Buffer, dstOff int, src Buffer, srcOff, n int) error {
	if err := CheckRange("copy source", src, srcOff, n); err != nil {
		return err
	}
	return CheckRange("copy destination", dst, dstOff, n)
}

// CheckRange refuses a range [off, off+n) outside b.
func CheckRange(what string, b Buffer, off, n int) error {
	if off < 0 || n < 0 || off > b.Size || n > b.Size-off {
		return fmt.Errorf("devmem: %s of %d bytes at %d is outside the %d-byte buffer on device %d", what, n, off, b.Size, b.Device)
	}
	return nil
}
