package cluster

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/cluster/internal/wire"
)

// onNode marks every stage of a report with the node, on a copy.
func TestOnNode(t *testing.T) {
	got := []wire.ReportStage{{Stats: ra.StageStats{Stage: "sqrt"}}, {Stats: ra.StageStats{Stage: "plus1"}}}
	if marked := onNode(got, "b"); marked[1].Stats.Node != "b" || marked[1].Lat.Node != "b" || got[1].Stats.Node != "" {
		t.Errorf("onNode: %+v (from %+v)", marked, got)
	}
}

// A dead letter whose error text is over wire.MaxText still travels to the
// origin, its text cut at a word and marked (EncodeMessage alone refuses it).
func TestFitDeadLetter(t *testing.T) {
	text := "ringactor: stage \"sqrt\": " + strings.Repeat("kernel fault ", wire.MaxText/13+10)
	d := ra.DeadLetter{ID: 9, Stage: "sqrt", Device: 1, Reason: ra.ReasonStageFaulted, Err: errors.New(text)}
	if _, err := wire.EncodeMessage(d); !errors.Is(err, wire.ErrNotEncodable) {
		t.Fatalf("EncodeMessage of a %d-byte error text: %v, want wire.ErrNotEncodable", len(text), err)
	}
	b, err := wire.EncodeMessage(fitDead(d))
	if err != nil {
		t.Fatal(err)
	}
	v, err := wire.DecodeMessage(b)
	got, ok := v.(ra.DeadLetter)
	if err != nil || !ok || got.ID != 9 || got.Stage != "sqrt" || got.Reason != ra.ReasonStageFaulted || got.Err == nil {
		t.Fatalf("decoded %+v, %v", v, err)
	}
	head, left, _ := strings.Cut(got.Err.Error(), " … (")
	if !strings.HasPrefix(text, head) || len(head) < wire.MaxText/2 || text[len(head)] != ' ' || left != fmt.Sprintf("%d bytes left out)", len(text)-len(head)) {
		t.Fatalf("error text of %d bytes: %q ... %q", len(head), head[max(len(head)-40, 0):], left) // cut at a word's end
	}
	short := ra.DeadLetter{ID: 1, Stage: "x", Reason: 0, Err: ra.ErrClosed}
	if f := fitDead(short); f.Err != ra.ErrClosed || f.Stage != "x" || f.Reason != 0 {
		t.Fatalf("fitDead changed a dead letter that fits: %+v", f)
	}
}
