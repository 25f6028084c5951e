package ringkernel_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ringactor/ringactor/kernels"
	rk "github.com/ringactor/ringactor/ringkernel"
	"github.com/ringactor/ringactor/ringkernel/devmem"
)

// An op with MoreParams takes its Params or more (a ring step's chunk);
// any other op exactly its Params.
func TestResolveParamCounts(t *testing.T) {
	for _, c := range []struct {
		op     string
		params []float32
		want   string // "" for accepted
	}{
		{"ring_sum", []float32{2, 1, 1}, ""},
		{"ring_sum", []float32{0}, ""},
		{"ring_sum", nil, "takes 1 or more params, got 0"},
		{"scale", []float32{2}, ""},
		{"scale", []float32{2, 3}, "takes 1 params, got 2"},
	} {
		_, err := rk.Stage{Name: "s", Op: c.op, Params: c.params}.Resolve()
		if c.want == "" && err != nil || c.want != "" && (!errors.Is(err, rk.ErrBadStage) || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s%v: %v; want %q", c.op, c.params, err, c.want)
		}
	}
}

// A stage binds exactly the buffers its op takes, each a buffer a backend
// allocated; an op that takes none is given none.
func TestResolveBuffers(t *testing.T) {
	const name = "resolve_buffers_test"
	if _, err := kernels.Lookup(name); err != nil {
		err = kernels.Register(kernels.Op{Name: name, Buffers: 2,
			GoBuf: func(_, _ []float32, _ [][]byte, in, out []float32) (int, error) { return copy(out, in), nil }})
		if err != nil {
			t.Fatal(err)
		}
	}
	buf := rk.Binding{Buf: devmem.Buffer{Device: 0, Size: 64, Addr: 0x1000}}
	for _, c := range []struct {
		op   string
		bufs []rk.Binding
		want string // "" for accepted
	}{
		{name, []rk.Binding{buf, {Buf: buf.Buf, Write: true}}, ""},
		{name, []rk.Binding{buf}, "op " + name + " takes 2 buffers, the stage binds 1; bind exactly 2 in Stage.Buffers (at most 8)"},
		{name, []rk.Binding{buf, buf, buf}, "takes 2 buffers, the stage binds 3"},
		{"identity", []rk.Binding{buf}, "op identity takes 0 buffers, the stage binds 1"},
		{"identity", make([]rk.Binding, rk.MaxStageBuffers+1), "the stage binds 9"},
		{name, []rk.Binding{buf, {Buf: devmem.Buffer{Device: 1, Addr: 0x1000}}}, "buffer 1 (device 1) has 0 bytes"},
		{name, []rk.Binding{{Buf: devmem.Buffer{Size: 64}}, buf}, "buffer 0 (device 0) has 64 bytes at 0x0: bind a buffer its backend allocated"},
	} {
		_, err := rk.Stage{Name: "s", Op: c.op, Buffers: c.bufs}.Resolve()
		if c.want == "" && err != nil || c.want != "" && (!errors.Is(err, rk.ErrBadStage) || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s with %d buffers: %v; want %q", c.op, len(c.bufs), err, c.want)
		}
	}
}
