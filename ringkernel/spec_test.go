package ringkernel_test

import (
	"errors"
	"strings"
	"testing"

	rk "github.com/ringactor/ringactor/ringkernel"
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
