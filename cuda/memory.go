package cuda

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"
)

// DevicePtr is an address in a device's (or, with unified addressing, the
// process's) CUDA address space (CUdeviceptr).
type DevicePtr uint64

// maxAlloc bounds sizes so that they fit size_t and uint64 arithmetic.
const maxAlloc = 1 << 62

// Alloc allocates n bytes of device memory (cuMemAlloc_v2). The memory is
// not cleared; see Memset.
func (c *Context) Alloc(n int) (DevicePtr, error) {
	if c == nil {
		return 0, errNilContext
	}
	if n <= 0 || n > maxAlloc {
		return 0, fmt.Errorf("cuda: Alloc(%d): size must be between 1 and 2^62 bytes", n)
	}
	var p uint64
	err := c.do("cuMemAlloc_v2", func() (r Result) {
		p, r = c.driver().memAlloc(uint64(n))
		return r
	})
	if err != nil {
		return 0, fmt.Errorf("cuda: Alloc(%d) on device %d: %w", n, c.dev.ordinal, err)
	}
	c.driver().addAlloc(allocation{base: DevicePtr(p), size: uint64(n), ctx: c.handle})
	return DevicePtr(p), nil
}

// AllocManaged allocates n bytes of managed (unified) memory
// (cuMemAllocManaged, CU_MEM_ATTACH_GLOBAL): one address for the host and
// every device with AttrManagedMemory, host being the host's view. The
// host may touch it while kernels run only where the device has
// AttrConcurrentManagedAccess. The memory is not cleared; Free frees it.
// ErrorNotSupported where the driver or device has none.
func (c *Context) AllocManaged(n int) (DevicePtr, []byte, error) {
	if c == nil {
		return 0, nil, errNilContext
	}
	if n <= 0 || n > maxAlloc {
		return 0, nil, fmt.Errorf("cuda: AllocManaged(%d): size must be between 1 and 2^62 bytes", n)
	}
	var p uint64
	var h unsafe.Pointer
	err := c.do("cuMemAllocManaged", func() (r Result) {
		p, h, r = c.driver().memAllocManaged(uint64(n))
		return r
	})
	if err != nil {
		return 0, nil, fmt.Errorf("cuda: AllocManaged(%d) on device %d: %w", n, c.dev.ordinal, err)
	}
	c.driver().addAlloc(allocation{base: DevicePtr(p), size: uint64(n), ctx: c.handle})
	return DevicePtr(p), unsafe.Slice((*byte)(h), n), nil
}

// Free frees device memory from Alloc or AllocManaged. Freeing anything else, or twice, is
// an error wrapping ErrReleased.
func (c *Context) Free(p DevicePtr) error {
	if c == nil {
		return errNilContext
	}
	// The record is taken inside do, after the context was found live, so a
	// released context does not lose the record of memory it cannot free.
	var refused error
	err := c.do("cuMemFree_v2", func() Result {
		var a allocation
		a, refused = c.driver().takeAlloc(p, func(a allocation) error {
			if a.host {
				return fmt.Errorf("cuda: Free(%#x): mapped host memory is freed with FreeHost", uint64(p))
			}
			if a.ctx != c.handle {
				return fmt.Errorf("cuda: Free(%#x): the memory belongs to another context than device %d's", uint64(p), c.dev.ordinal)
			}
			return nil
		})
		if refused != nil {
			return ResultSuccess
		}
		r := c.driver().memFree(uint64(p))
		if r != ResultSuccess {
			c.driver().addAlloc(a) // not freed: still the caller's to free
		}
		return r
	})
	if err != nil {
		return err
	}
	return refused
}

// Memset sets n bytes at p to b (cuMemsetD8_v2). n == 0 does nothing.
// For device memory it is asynchronous to the host: it may return before
// the bytes are set, ordered like CopyToDevice.
func (c *Context) Memset(p DevicePtr, b byte, n int) error {
	if c == nil {
		return errNilContext
	}
	if n == 0 {
		return c.do("cuMemsetD8_v2", func() Result { return ResultSuccess })
	}
	if err := c.checkRange("Memset", p, n); err != nil {
		return err
	}
	return c.do("cuMemsetD8_v2", func() Result { return c.driver().memsetD8(uint64(p), b, uint64(n)) })
}

// CopyToDevice copies src to device memory at dst (cuMemcpyHtoD_v2). It
// returns once src may be reused: from pageable memory the driver stages
// the bytes and may return before the copy has landed in device memory.
// Work on the context's legacy stream (and blocking streams) runs after
// it; anything else (a kernel on a non-blocking stream, another device)
// must wait for an event recorded on the legacy stream after it.
func (c *Context) CopyToDevice(dst DevicePtr, src []byte) error {
	if c == nil {
		return errNilContext
	}
	if len(src) == 0 {
		return c.do("cuMemcpyHtoD_v2", func() Result { return ResultSuccess })
	}
	if err := c.checkRange("CopyToDevice", dst, len(src)); err != nil {
		return err
	}
	return c.do("cuMemcpyHtoD_v2", func() Result { return c.driver().memcpyHtoD(uint64(dst), src) })
}

// CopyFromDevice copies len(dst) bytes of device memory at src into dst
// (cuMemcpyDtoH_v2) and returns when the copy is done.
func (c *Context) CopyFromDevice(dst []byte, src DevicePtr) error {
	if c == nil {
		return errNilContext
	}
	if len(dst) == 0 {
		return c.do("cuMemcpyDtoH_v2", func() Result { return ResultSuccess })
	}
	if err := c.checkRange("CopyFromDevice", src, len(dst)); err != nil {
		return err
	}
	return c.do("cuMemcpyDtoH_v2", func() Result { return c.driver().memcpyDtoH(dst, uint64(src)) })
}

// checkRange refuses a range that is not inside one live allocation, so a
// stale or wrong pointer is an error rather than a fault.
func (c *Context) checkRange(what string, p DevicePtr, n int) error {
	if n < 0 {
		return fmt.Errorf("cuda: %s(%#x, %d bytes): negative size", what, uint64(p), n)
	}
	if _, ok := c.driver().findAlloc(p, uint64(n)); !ok {
		return fmt.Errorf("cuda: %s(%#x, %d bytes): the range is not inside a live allocation (freed, or out of bounds): %w", what, uint64(p), n, ErrReleased)
	}
	return nil
}

// HostMemory is page-locked host memory mapped into the device's address
// space (cuMemHostAlloc with DEVICEMAP): the host reads and writes Bytes,
// kernels read and write the same bytes at Device. After FreeHost, Bytes
// is nil; a copy of the slice kept elsewhere must not be used.
type HostMemory struct {
	Bytes    []byte    // host view, len n
	Device   DevicePtr // device view, for kernels of the allocating context
	Portable bool      // mapped into every context (CU_MEMHOSTALLOC_PORTABLE)

	ctx   *Context
	ptr   unsafe.Pointer // C memory from cuMemHostAlloc
	mu    sync.Mutex
	freed bool
}

// AllocHost allocates n bytes of page-locked host memory mapped into the
// device's address space, zeroed. portable also maps it into every other
// context, as a link shared by two GPUs without peer access needs.
func (c *Context) AllocHost(n int, portable bool) (*HostMemory, error) {
	if c == nil {
		return nil, errNilContext
	}
	if n <= 0 || n > maxAlloc {
		return nil, fmt.Errorf("cuda: AllocHost(%d): size must be between 1 and 2^62 bytes", n)
	}
	flags := uint32(memHostAllocDeviceMap)
	if portable {
		flags |= memHostAllocPortable
	}
	var p unsafe.Pointer
	err := c.do("cuMemHostAlloc", func() (r Result) {
		p, r = c.driver().memHostAlloc(uint64(n), flags)
		return r
	})
	if err != nil {
		return nil, fmt.Errorf("cuda: AllocHost(%d) on device %d: %w", n, c.dev.ordinal, err)
	}
	var dp uint64
	err = c.do("cuMemHostGetDevicePointer_v2", func() (r Result) {
		dp, r = c.driver().memHostGetDevicePointer(p)
		return r
	})
	if err != nil {
		_ = c.do("cuMemFreeHost", func() Result { return c.driver().memFreeHost(p) })
		return nil, fmt.Errorf("cuda: AllocHost(%d) on device %d: %w", n, c.dev.ordinal, err)
	}
	m := &HostMemory{Bytes: unsafe.Slice((*byte)(p), n), Device: DevicePtr(dp), Portable: portable, ctx: c, ptr: p}
	clear(m.Bytes)
	c.driver().addAlloc(allocation{base: m.Device, size: uint64(n), ctx: c.handle, host: true})
	return m, nil
}

// FreeHost frees memory from AllocHost. Freeing it twice is an error
// wrapping ErrReleased.
func (c *Context) FreeHost(m *HostMemory) error {
	if c == nil {
		return errNilContext
	}
	if m == nil {
		return errors.New("cuda: FreeHost(nil)")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.freed {
		return fmt.Errorf("cuda: FreeHost: host memory already freed: %w", ErrReleased)
	}
	if m.ctx == nil || m.ctx.handle != c.handle {
		return fmt.Errorf("cuda: FreeHost: the memory was allocated in another context than device %d's", c.dev.ordinal)
	}
	if err := c.do("cuMemFreeHost", func() Result { return c.driver().memFreeHost(m.ptr) }); err != nil {
		return err
	}
	m.freed = true
	m.Bytes = nil
	c.driver().takeAlloc(m.Device, func(allocation) error { return nil }) // gone already if the context was destroyed
	return nil
}

// CopyToDeviceAsync queues a copy of n bytes of m, from offset off, to
// device memory at dst in stream s (nil: the default stream) and returns
// (cuMemcpyHtoDAsync_v2). The source must be page-locked, so it is host
// memory from AllocHost; it must stay allocated, and unchanged if the copy
// is to see it as it is now, until the copy is done (s.Synchronize). A
// copy issued while s is capturing (Stream.BeginCapture) becomes a node of
// the graph and reads m's bytes at each launch of it.
func (c *Context) CopyToDeviceAsync(dst DevicePtr, m *HostMemory, off, n int, s *Stream) error {
	return c.copyAsync("cuMemcpyHtoDAsync_v2", "CopyToDeviceAsync", dst, m, off, n, s, true)
}

// CopyFromDeviceAsync queues a copy of n bytes of device memory at src into
// m at offset off in stream s (nil: the default stream) and returns
// (cuMemcpyDtoHAsync_v2). m comes from AllocHost and must stay allocated
// until the copy is done (s.Synchronize); its bytes are not to be read
// before then. Captured, as CopyToDeviceAsync.
func (c *Context) CopyFromDeviceAsync(m *HostMemory, off int, src DevicePtr, n int, s *Stream) error {
	return c.copyAsync("cuMemcpyDtoHAsync_v2", "CopyFromDeviceAsync", src, m, off, n, s, false)
}

func (c *Context) copyAsync(call, what string, p DevicePtr, m *HostMemory, off, n int, s *Stream, toDevice bool) error {
	if c == nil {
		return errNilContext
	}
	if m == nil {
		return fmt.Errorf("cuda: %s: nil *HostMemory (use AllocHost)", what)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.freed {
		return fmt.Errorf("cuda: %s: host memory was freed: %w", what, ErrReleased)
	}
	if off < 0 || n < 0 || off > len(m.Bytes) || n > len(m.Bytes)-off {
		return fmt.Errorf("cuda: %s: host range [%d, %d+%d) is outside the %d-byte host memory", what, off, off, n, len(m.Bytes))
	}
	if !m.Portable && (m.ctx == nil || m.ctx.handle != c.handle) {
		return fmt.Errorf("cuda: %s: the host memory is pinned for another context than device %d's (allocate it portable)", what, c.dev.ordinal)
	}
	defer s.rlock()()
	sh, err := c.streamHandle(s)
	if err != nil {
		return fmt.Errorf("cuda: %s: %w", call, err)
	}
	if n == 0 {
		return c.do(call, func() Result { return ResultSuccess })
	}
	if err := c.checkRange(what, p, n); err != nil {
		return err
	}
	h := unsafe.Add(m.ptr, off)
	return c.do(call, func() Result {
		if toDevice {
			return c.driver().memcpyHtoDAsync(uint64(p), h, uint64(n), sh)
		}
		return c.driver().memcpyDtoHAsync(h, uint64(p), uint64(n), sh)
	})
}

// CopyDeviceAsync queues a copy of n bytes of this context's device memory
// from src to dst in stream s (nil: the default stream) and returns
// (cuMemcpyDtoDAsync_v2; ErrorNotSupported where the driver lacks it).
func (c *Context) CopyDeviceAsync(dst, src DevicePtr, n int, s *Stream) error {
	return c.copyDevice("cuMemcpyDtoDAsync_v2", dst, nil, src, n, s)
}

// CopyPeerAsync queues a copy of n bytes from src, device memory of
// srcCtx, to dst, device memory of this context, in stream s (of this
// context; nil: the default stream) and returns (cuMemcpyPeerAsync).
func (c *Context) CopyPeerAsync(dst DevicePtr, srcCtx *Context, src DevicePtr, n int, s *Stream) error {
	if srcCtx == nil {
		return errNilContext
	}
	return c.copyDevice("cuMemcpyPeerAsync", dst, srcCtx, src, n, s)
}

func (c *Context) copyDevice(call string, dst DevicePtr, srcCtx *Context, src DevicePtr, n int, s *Stream) error {
	if c == nil {
		return errNilContext
	}
	if n <= 0 {
		return c.do(call, func() Result { return ResultSuccess })
	}
	if err := c.checkRange(call+" destination", dst, n); err != nil {
		return err
	}
	if err := c.checkRange(call+" source", src, n); err != nil {
		return err
	}
	var sctx uintptr
	if srcCtx != nil {
		srcCtx.mu.RLock()
		h, gone := srcCtx.handle, srcCtx.released
		srcCtx.mu.RUnlock()
		if gone {
			return fmt.Errorf("cuda: %s: the source context (device %d) was released: %w", call, srcCtx.dev.ordinal, ErrReleased)
		}
		sctx = h
	}
	defer s.rlock()()
	sh, err := c.streamHandle(s)
	if err != nil {
		return fmt.Errorf("cuda: %s: %w", call, err)
	}
	return c.do(call, func() Result {
		if srcCtx == nil {
			return c.driver().memcpyDtoDAsync(uint64(dst), uint64(src), uint64(n), sh)
		}
		return c.driver().memcpyPeerAsync(uint64(dst), c.handle, uint64(src), sctx, uint64(n), sh)
	})
}
