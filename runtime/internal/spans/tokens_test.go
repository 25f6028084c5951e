package spans

import "testing"

// A message through a graph: the host's token, a RouteAll stage that
// makes two copies, both ending; in any order of events the count is
// settled only once every token made has ended.
func TestTokensSettleWhateverTheOrder(t *testing.T) {
	type ev struct {
		j uint32
		d int32
	}
	// Stage 1 (from the host) fans out to stages 2 and 3, exits whose
	// copies end at their egress. A record ends a token of the stage the
	// message came from and makes the copies it sent on, at once.
	events := [][]ev{
		{{0, -1}, {1, 2}}, // stage 1's record
		{{1, -1}, {2, 1}}, // stage 2's
		{{1, -1}, {3, 1}}, // stage 3's
		{{2, -1}},         // the egress of 2's copy
		{{3, -1}},         // the egress of 3's copy
	}
	orders := [][]int{{0, 1, 2, 3, 4}, {4, 3, 2, 1, 0}, {3, 0, 4, 2, 1}, {2, 4, 1, 3, 0}}
	for _, order := range orders {
		tk := newTokens(3)
		tk.settle(0, 1) // the message itself
		for k, i := range order {
			if tk.settled() {
				t.Fatalf("order %v: settled after %d of %d events", order, k, len(order))
			}
			for _, e := range events[i] {
				tk.settle(e.j, e.d)
			}
		}
		if !tk.settled() {
			t.Errorf("order %v: not settled after every event: %v", order, tk.open)
		}
	}
}

// A stage id outside the pipeline, and a zero change, settle nothing.
func TestTokensIgnoreStrangers(t *testing.T) {
	tk := newTokens(1)
	tk.settle(0, 1)
	tk.settle(2, -1)
	tk.settle(7, 1)
	tk.settle(1, 0)
	if tk.unsettled != 1 || tk.open[0] != 1 || tk.open[1] != 0 {
		t.Fatalf("tokens: %+v", tk)
	}
	tk.settle(0, -1)
	if !tk.settled() {
		t.Fatalf("tokens: %+v", tk)
	}
}
