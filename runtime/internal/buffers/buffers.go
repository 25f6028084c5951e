// Package buffers is the runtime's public device buffers (runtime.Buffer):
// the set of buffers a runtime has allocated and not freed, the checks of
// every call on one (freed, another runtime's, the range), binding them
// to stages (reachable from the stage's device, held while the pipeline
// lives), and freeing what is left when the runtime closes. The memory
// itself is the backends' (ringkernel/devmem.Backend, behind the
// runtime's device mux).
package buffers

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/ringactor/ringactor/internal/ctxcheck"
	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/ringkernel/devmem"
)

// ErrFreed: a buffer used after Free (or after its runtime closed).
var ErrFreed = errors.New("ringactor: buffer freed")

// ErrInUse: a buffer bound to a stage of a pipeline that has not closed.
var ErrInUse = errors.New("ringactor: buffer in use")

// ErrBadBuffer: a buffer a call cannot take: nil, another runtime's, a
// range outside it, one a stage's device cannot reach.
var ErrBadBuffer = errors.New("ringactor: bad buffer")

// Set is one runtime's buffers.
type Set struct {
	mem    devmem.Backend
	reg    *rk.Registry
	closed error // wrapped by Alloc once Close has run (runtime.ErrRuntimeClosed)

	mu   sync.Mutex
	live map[*Buffer]struct{}
	shut bool
}

// New is the buffers of a runtime whose devices reg lists, allocated
// through mem; Alloc after Close returns an error wrapping closed.
func New(mem devmem.Backend, reg *rk.Registry, closed error) *Set {
	return &Set{mem: mem, reg: reg, closed: closed, live: map[*Buffer]struct{}{}}
}

// Option is an allocation option (runtime.BufferOption).
type Option func(*options)

type options struct{ kind devmem.Kind }

// Managed asks for managed (unified) memory, which host and device both
// address; refused where the device's ringkernel.Device.Managed is false.
func Managed(o *options) { o.kind = devmem.Managed }

// Buffer is device memory a program allocated on one device of a
// runtime: see runtime.Buffer. Its methods are safe for concurrent use;
// concurrent writes to one range leave either's bytes.
type Buffer struct {
	set *Set
	buf devmem.Buffer
	dev string // the device's name, for errors

	mu       sync.Mutex
	freed    bool // Free was called (or the runtime closed)
	released bool // its memory went back to the backend
	calls    int  // calls under way: the last one gives the memory back after a Free
	pins     int  // live pipelines it is bound to
	freeErr  error
}

// Alloc allocates size bytes (zeroed) on device (a registry id; the
// caller resolves runtime.CPU).
func (s *Set) Alloc(ctx context.Context, device, size int, opts ...Option) (*Buffer, error) {
	if err := ctxcheck.Live(ctx, "Runtime.AllocBuffer"); err != nil {
		return nil, err
	}
	var o options
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	dev, err := s.reg.Device(device)
	if err != nil {
		return nil, fmt.Errorf("ringactor: AllocBuffer: %w", err)
	}
	if size <= 0 {
		return nil, fmt.Errorf("%w: a buffer of %d bytes on device %d; ask for at least 1", ErrBadBuffer, size, device)
	}
	if o.kind == devmem.Managed && !dev.Managed {
		return nil, fmt.Errorf("ringactor: device %d (%s): %w; allocate without Managed(), or on a device whose Device.Managed is true", device, dev.Name, devmem.ErrNoManaged)
	}
	if s.isShut() {
		return nil, fmt.Errorf("%w: cannot allocate a buffer; make a new Runtime", s.closed)
	}
	raw, err := s.mem.AllocBuffer(ctx, device, size, o.kind)
	if err != nil {
		return nil, fmt.Errorf("ringactor: AllocBuffer of %d bytes on device %d (%s): %w", size, device, dev.Name, err)
	}
	b := &Buffer{set: s, buf: raw, dev: dev.Name}
	s.mu.Lock()
	if s.shut { // Close ran meanwhile: it did not see this one
		s.mu.Unlock()
		return nil, errors.Join(fmt.Errorf("%w: cannot allocate a buffer; make a new Runtime", s.closed), s.mem.FreeBuffer(raw))
	}
	s.live[b] = struct{}{}
	s.mu.Unlock()
	return b, nil
}

func (s *Set) isShut() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shut
}

// Live is how many buffers are allocated and not freed.
func (s *Set) Live() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.live)
}

// Close frees every buffer still live, bound or not (the runtime has
// closed its pipelines first), and refuses allocations from then on. It
// returns how many it freed and what the backends said.
func (s *Set) Close() (int, error) {
	s.mu.Lock()
	s.shut = true
	live := make([]*Buffer, 0, len(s.live))
	for b := range s.live {
		live = append(live, b)
	}
	s.mu.Unlock()
	var errs []error
	for _, b := range live {
		errs = append(errs, b.free(true))
	}
	return len(live), errors.Join(errs...)
}

// Device is the device id the buffer is on.
func (b *Buffer) Device() int { return b.buf.Device }

// Size is its size in bytes.
func (b *Buffer) Size() int { return b.buf.Size }

// Managed reports whether it is managed (unified) memory.
func (b *Buffer) Managed() bool { return b.buf.Kind == devmem.Managed }

func (b *Buffer) String() string {
	return fmt.Sprintf("%d-byte %s buffer on device %d (%s)", b.buf.Size, b.buf.Kind, b.buf.Device, b.dev)
}

// Raw is the buffer as its backend knows it (for ringkernel.Binding).
func (b *Buffer) Raw() devmem.Buffer { return b.buf }

// use checks ctx and b, and counts a call under way; done ends it.
func (b *Buffer) use(ctx context.Context, call string) error {
	if b == nil {
		return fmt.Errorf("%w: %s on a nil *Buffer", ErrBadBuffer, call)
	}
	if err := ctxcheck.Live(ctx, "Buffer."+call); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.freed {
		return fmt.Errorf("%w: %s on the %v; allocate a new one", ErrFreed, call, b)
	}
	b.calls++
	return nil
}

// done ends a call; the last call after a Free gives the memory back.
func (b *Buffer) done() {
	b.mu.Lock()
	b.calls--
	give := b.freed && b.calls == 0 && !b.released
	b.released = b.released || give
	b.mu.Unlock()
	if give {
		b.giveBack()
	}
}

func (b *Buffer) giveBack() {
	err := b.set.mem.FreeBuffer(b.buf)
	b.set.mu.Lock()
	delete(b.set.live, b)
	b.set.mu.Unlock()
	b.mu.Lock()
	b.freeErr = err
	b.mu.Unlock()
}

// Write copies src into the buffer at byte offset off.
func (b *Buffer) Write(ctx context.Context, off int, src []byte) error {
	if err := b.use(ctx, "Write"); err != nil {
		return err
	}
	defer b.done()
	return b.set.mem.Write(ctx, b.buf, off, src)
}

// Read copies len(dst) bytes of the buffer at byte offset off into dst.
func (b *Buffer) Read(ctx context.Context, off int, dst []byte) error {
	if err := b.use(ctx, "Read"); err != nil {
		return err
	}
	defer b.done()
	return b.set.mem.Read(ctx, b.buf, off, dst)
}

// WriteFloat32s writes src little-endian at float offset off (byte
// offset 4*off).
func (b *Buffer) WriteFloat32s(ctx context.Context, off int, src []float32) error {
	raw := make([]byte, 4*len(src))
	for i, f := range src {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(f))
	}
	return b.Write(ctx, 4*off, raw)
}

// ReadFloat32s reads len(dst) little-endian float32s from float offset
// off (byte offset 4*off).
func (b *Buffer) ReadFloat32s(ctx context.Context, off int, dst []float32) error {
	raw := make([]byte, 4*len(dst))
	if err := b.Read(ctx, 4*off, raw); err != nil {
		return err
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return nil
}

// CopyTo copies n bytes from byte offset srcOff of b to dst at dstOff,
// and says the path taken: p2pqueue.PathLocal on one device,
// PathPeer between GPUs with peer access, PathStaged through pinned host
// memory between GPUs without, PathHost when one end is the CPU.
func (b *Buffer) CopyTo(ctx context.Context, dst *Buffer, dstOff, srcOff, n int) (p2pqueue.Path, error) {
	if err := b.use(ctx, "CopyTo"); err != nil {
		return 0, err
	}
	defer b.done()
	if dst == nil || dst.set != b.set {
		return 0, fmt.Errorf("%w: CopyTo a buffer of another runtime (or nil); copy within one runtime, through host memory (Read, then Write) between runtimes", ErrBadBuffer)
	}
	if dst != b {
		if err := dst.use(ctx, "CopyTo (destination)"); err != nil {
			return 0, err
		}
		defer dst.done()
	}
	return b.set.mem.Copy(ctx, dst.buf, dstOff, b.buf, srcOff, n)
}

// Free gives the buffer back; a second Free does nothing, any other call
// after it returns an error wrapping ErrFreed. A call under way finishes
// first (the memory goes back when it ends). A buffer bound to a stage of
// a pipeline that has not closed is refused (ErrInUse).
func (b *Buffer) Free() error {
	if b == nil {
		return nil
	}
	return b.free(false)
}

func (b *Buffer) free(force bool) error {
	b.mu.Lock()
	if b.freed {
		b.mu.Unlock()
		return nil
	}
	if b.pins > 0 && !force {
		b.mu.Unlock()
		return fmt.Errorf("%w: the %v is bound to a stage of %d pipeline(s) still open; close them first", ErrInUse, b, b.pins)
	}
	b.freed = true
	give := b.calls == 0
	b.released = give
	b.mu.Unlock()
	if !give {
		return nil // the last call under way gives it back
	}
	b.giveBack()
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.freeErr
}

// Use is a buffer bound to a stage (runtime.BufferUse): the stage's
// function gets its memory, in StageSpec.Buffers' order; Write says the
// stage writes it.
type Use struct {
	Buffer *Buffer
	Write  bool
}

// Bindings is uses as the kernel takes them (a nil Buffer: a zero
// binding, which Pin refuses first).
func Bindings(uses []Use) []rk.Binding {
	if len(uses) == 0 {
		return nil
	}
	out := make([]rk.Binding, len(uses))
	for i, u := range uses {
		out[i].Write = u.Write
		if u.Buffer != nil {
			out[i].Buf = u.Buffer.buf
		}
	}
	return out
}

// Binding is one stage's buffers, for Pin.
type Binding struct {
	Stage  string
	Device int
	Uses   []Use
}

// Pin checks every stage's buffers (live, of this set, at most
// ringkernel.MaxStageBuffers, on the stage's device or one it reaches by
// peer access) and holds them until unpin is called: Free refuses them
// meanwhile. On an error nothing is held.
func (s *Set) Pin(stages []Binding) (unpin func(), err error) {
	var held []*Buffer
	var once sync.Once
	unpin = func() {
		once.Do(func() {
			for _, b := range held {
				b.mu.Lock()
				b.pins--
				b.mu.Unlock()
			}
		})
	}
	for _, st := range stages {
		if len(st.Uses) > rk.MaxStageBuffers {
			unpin()
			return nil, fmt.Errorf("%w: stage %q binds %d buffers; at most %d", ErrBadBuffer, st.Stage, len(st.Uses), rk.MaxStageBuffers)
		}
		for i, u := range st.Uses {
			if err := s.pin(st, i, u.Buffer); err != nil {
				unpin()
				return nil, err
			}
			held = append(held, u.Buffer)
		}
	}
	return unpin, nil
}

func (s *Set) pin(st Binding, i int, b *Buffer) error {
	where := fmt.Sprintf("stage %q buffer %d", st.Stage, i)
	if b == nil {
		return fmt.Errorf("%w: %s is nil; allocate it with Runtime.AllocBuffer", ErrBadBuffer, where)
	}
	if b.set != s {
		return fmt.Errorf("%w: %s is the %v of another runtime; allocate it on this runtime", ErrBadBuffer, where, b)
	}
	switch path := p2pqueue.PathOf(st.Device, b.buf.Device, s.reg); path {
	case p2pqueue.PathLocal, p2pqueue.PathPeer:
	default:
		why := "the two GPUs have no peer access"
		if path == p2pqueue.PathHost {
			why = "one of them is the CPU, whose memory and a GPU's do not reach each other"
		}
		return fmt.Errorf("%w: %s is the %v, which the stage's device %d cannot reach (%s path: %s); allocate it on device %d, or copy it there (Buffer.CopyTo)",
			ErrBadBuffer, where, b, st.Device, path, why, st.Device)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.freed {
		return fmt.Errorf("%w: %s is the %v, freed; allocate a new one", ErrFreed, where, b)
	}
	b.pins++
	return nil
}
