package msgtype

import (
	"errors"
	"fmt"

	"github.com/ringactor/ringactor/kernels"
	"github.com/ringactor/ringactor/p2pqueue"
)

// GoOp is the op named name that runs f in Go: it decodes each message as
// a T, calls f, and encodes its U into the output slot. T and U must be
// registered (or []float32). An error from f is the message's; a message
// that does not decode is kernels.ErrWrongType, a result too large for
// the slot kernels.ErrOutputTooSmall.
func GoOp[T, U any](name string, f func(T) (U, error)) (kernels.Op, error) {
	in, err := For[T]()
	if err != nil {
		return kernels.Op{}, fmt.Errorf("ringactor: Go stage %q takes: %w", name, err)
	}
	out, err := For[U]()
	if err != nil {
		return kernels.Op{}, fmt.Errorf("ringactor: Go stage %q gives: %w", name, err)
	}
	return kernels.Op{Name: name, In: in.ID, Out: out.ID,
		Typed: func(_, _ []float32, inType uint32, b, dst []byte) (uint32, int, int, error) {
			v, err := in.decode(b)
			if err != nil {
				return 0, 0, 0, fmt.Errorf("%w: %w", kernels.ErrWrongType, err)
			}
			r, err := f(v.(T))
			if err != nil {
				return 0, 0, 0, err
			}
			n, err := out.encode(r, dst)
			if errors.Is(err, p2pqueue.ErrTooLarge) {
				return 0, 0, 0, fmt.Errorf("%w: the %s result is %d bytes, room for %d", kernels.ErrOutputTooSmall, out.Name, n, len(dst))
			}
			return out.ID, n, 0, err
		}}, nil
}
