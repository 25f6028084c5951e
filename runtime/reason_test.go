package runtime_test

import (
	"slices"
	"testing"

	ra "github.com/ringactor/ringactor/runtime"
)

// The reasons' names are what the docs, traces and the wire carry: the
// generated String (stringer -linecomment) keeps every one, in order, and
// an invalid value reads as a number.
func TestReasonNamesStay(t *testing.T) {
	want := []string{"stage error", "decode error", "oversize payload", "shutdown without drain", "stage faulted", "route error",
		"wrong type", "stage panic", "pipeline closed", "stage stopped", "send cancelled", "mailbox full", "queue closed",
		"unregistered type", "sink not read", "bad request", "remote unreachable"}
	var got []string
	for _, r := range ra.Reasons {
		got = append(got, r.String())
	}
	if !slices.Equal(got, want) {
		t.Fatalf("reason names %q, want %q", got, want)
	}
	if ra.Reasons[0] != ra.ReasonStageError || ra.Reasons[len(ra.Reasons)-1] != ra.ReasonRemoteUnreachable {
		t.Fatalf("Reasons %v", ra.Reasons)
	}
	end := ra.ReasonRemoteUnreachable + 1
	for _, r := range []ra.Reason{0, end, 1000} {
		if r.Valid() {
			t.Errorf("%d is valid", r)
		}
		if _, err := r.MarshalText(); err == nil {
			t.Errorf("%d marshals", r)
		}
	}
	if s := ra.Reason(0).String(); s != "Reason(0)" {
		t.Errorf("the zero Reason reads %q", s)
	}
	if s := end.String(); s != "Reason(18)" {
		t.Errorf("past the last reads %q", s)
	}
}
