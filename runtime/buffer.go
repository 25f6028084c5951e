package runtime

import (
	"context"

	"github.com/ringactor/ringactor/p2pqueue"
	"github.com/ringactor/ringactor/runtime/internal/buffers"
)

// Buffer is device memory allocated on one device of a runtime
// (AllocBuffer): Device, Size, Managed; Write and Read (byte offsets),
// WriteFloat32s and ReadFloat32s (little-endian, offsets in floats);
// CopyTo another buffer of the runtime, which returns the CopyPath taken;
// Free (idempotent; any other call after it wraps ErrBufferFreed). Close
// frees the buffers still live. A stage binds buffers (StageSpec.Buffers).
type Buffer = buffers.Buffer

// BufferOption is an option of AllocBuffer.
type BufferOption = buffers.Option

// Managed asks AllocBuffer for managed (unified) memory; refused (an error
// wrapping devmem.ErrNoManaged) where the device's Device.Managed is false.
func Managed() BufferOption { return buffers.Managed }

// BufferUse is a buffer a stage binds (StageSpec.Buffers), and whether it
// writes it.
type BufferUse = buffers.Use

// CopyPath is the path of a copy (Buffer.CopyTo): CopyLocal, CopyPeer,
// CopyStaged (through pinned host memory) or CopyHost (one end the CPU).
type CopyPath = p2pqueue.Path

const (
	CopyLocal  = p2pqueue.PathLocal
	CopyPeer   = p2pqueue.PathPeer
	CopyStaged = p2pqueue.PathStaged
	CopyHost   = p2pqueue.PathHost
)

// ErrBufferFreed: a buffer used after Free or its runtime's Close.
// ErrBufferInUse: Free of a buffer bound to a pipeline still open.
// ErrBadBuffer: nil, of another runtime, or out of a stage's reach.
var (
	ErrBufferFreed = buffers.ErrFreed
	ErrBufferInUse = buffers.ErrInUse
	ErrBadBuffer   = buffers.ErrBadBuffer
)

// AllocBuffer allocates size zeroed bytes on device (CPU: the CPU). Out
// of memory is a *devmem.OutOfMemoryError (the device, its free memory,
// the size asked); a closed runtime refuses (ErrRuntimeClosed).
func (rt *Runtime) AllocBuffer(ctx context.Context, device, size int, opts ...BufferOption) (*Buffer, error) {
	return rt.bufs.Alloc(ctx, rt.reg.Resolve(device), size, opts...)
}
