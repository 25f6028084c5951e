package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Dim3 is a grid or block shape. Zero sizes are refused.
type Dim3 struct{ X, Y, Z uint32 }

func (d Dim3) valid() bool { return d.X > 0 && d.Y > 0 && d.Z > 0 }

// argSlot is the bytes a scalar kernel argument occupies in the marshalled
// parameter buffer: every scalar fits, and every argument starts 8-byte
// aligned. A []byte argument (a struct passed by value) takes its length
// rounded up to argSlot.
const argSlot = 8

// Launch starts f on grid blocks of block threads with sharedBytes of
// dynamic shared memory in stream s (nil: the default stream), passing
// args (cuLaunchKernel). It returns once the launch is queued.
//
// Each argument must have the width of the kernel's parameter: uint64,
// int64, uint32, int32, float32, float64, DevicePtr or uintptr; a []byte is
// a by-value struct parameter of that many bytes (at most 4 KiB, the
// driver's limit for all parameters together). Values are
// copied into C memory for the call, so no Go pointer reaches the driver.
func (c *Context) Launch(f *Function, grid, block Dim3, sharedBytes int, s *Stream, args ...any) error {
	return c.launch("cuLaunchKernel", false, f, grid, block, sharedBytes, s, args)
}

// LaunchCooperative is Launch through cuLaunchCooperativeKernel: all
// blocks are guaranteed co-resident, or the launch fails with
// CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE. The device must report
// AttrCooperativeLaunch.
func (c *Context) LaunchCooperative(f *Function, grid, block Dim3, sharedBytes int, s *Stream, args ...any) error {
	return c.launch("cuLaunchCooperativeKernel", true, f, grid, block, sharedBytes, s, args)
}

func (c *Context) launch(call string, coop bool, f *Function, grid, block Dim3, sharedBytes int, s *Stream, args []any) error {
	if c == nil {
		return errNilContext
	}
	if f == nil {
		return errNilFunction
	}
	if !grid.valid() || !block.valid() {
		return fmt.Errorf("cuda: %s(%s): grid %v and block %v must be at least 1 in every dimension", call, f.name, grid, block)
	}
	if sharedBytes < 0 || sharedBytes > math.MaxUint32 {
		return fmt.Errorf("cuda: %s(%s): dynamic shared memory %d bytes out of range", call, f.name, sharedBytes)
	}
	packed, offs, err := encodeArgs(args)
	if err != nil {
		return fmt.Errorf("cuda: %s(%s): %w", call, f.name, err)
	}
	if err := c.sameContext(fmt.Sprintf("kernel %s", f.name), f.mod.ctx); err != nil {
		return err
	}
	defer s.rlock()()
	sh, err := c.streamHandle(s)
	if err != nil {
		return fmt.Errorf("cuda: %s(%s): %w", call, f.name, err)
	}
	return f.mod.use(fmt.Sprintf("%s(%s)", call, f.name), func() Result {
		return c.driver().launch(coop, f.handle, grid, block, uint32(sharedBytes), sh, packed, offs)
	})
}

// encodeArgs lays the kernel arguments out little-endian, each at an
// 8-byte-aligned offset, or names the first argument of a type it cannot
// pass.
func encodeArgs(args []any) ([]byte, []int32, error) {
	var buf []byte
	offs := make([]int32, len(args))
	for i, a := range args {
		offs[i] = int32(len(buf))
		if b, ok := a.([]byte); ok {
			if len(b) == 0 || len(b) > 4096 {
				return nil, nil, fmt.Errorf("kernel argument %d is a %d-byte struct; by-value parameters take 1 to 4096 bytes", i, len(b))
			}
			n := (len(b) + argSlot - 1) / argSlot * argSlot
			buf = append(buf, make([]byte, n)...)
			copy(buf[offs[i]:], b)
			continue
		}
		buf = append(buf, make([]byte, argSlot)...)
		slot := buf[offs[i]:]
		switch v := a.(type) {
		case uint64:
			binary.LittleEndian.PutUint64(slot, v)
		case int64:
			binary.LittleEndian.PutUint64(slot, uint64(v))
		case DevicePtr:
			binary.LittleEndian.PutUint64(slot, uint64(v))
		case uintptr:
			binary.LittleEndian.PutUint64(slot, uint64(v))
		case float64:
			binary.LittleEndian.PutUint64(slot, math.Float64bits(v))
		case uint32:
			binary.LittleEndian.PutUint32(slot, v)
		case int32:
			binary.LittleEndian.PutUint32(slot, uint32(v))
		case float32:
			binary.LittleEndian.PutUint32(slot, math.Float32bits(v))
		case int, uint:
			return nil, nil, fmt.Errorf("kernel argument %d has type %T, whose width the kernel cannot know: use int32/uint32 or int64/uint64", i, a)
		default:
			return nil, nil, fmt.Errorf("kernel argument %d has unsupported type %T (want uint64, int64, uint32, int32, float32, float64, DevicePtr, uintptr, or []byte for a struct by value)", i, a)
		}
	}
	return buf, offs, nil
}
