package spans

// tokens is one message's token count: open[j] is stage j's tokens made
// minus those ended (j = 0: the host); unsettled counts the j where that
// is not 0.
type tokens struct {
	open      []int32
	unsettled int
}

// newTokens counts tokens for the host and stages stages.
func newTokens(stages int) tokens { return tokens{open: make([]int32, stages+1)} }

// settle adds d to stage j's open tokens.
func (t *tokens) settle(j uint32, d int32) {
	if int(j) >= len(t.open) || d == 0 {
		return // not a stage of this pipeline: nothing it could settle
	}
	was := t.open[j]
	t.open[j] += d
	switch {
	case was == 0:
		t.unsettled++
	case t.open[j] == 0:
		t.unsettled--
	}
}

// settled says whether every stage's tokens made equal those ended.
func (t *tokens) settled() bool { return t.unsettled == 0 }
