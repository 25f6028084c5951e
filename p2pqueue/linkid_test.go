package p2pqueue

import (
	"errors"
	"strings"
	"testing"
)

func TestLinkIDDecodes(t *testing.T) {
	for _, c := range []struct {
		id   LinkID
		want string
	}{
		{NewLinkID(7, RoleIn, 0, 0), "pipeline 7 stage 0 in"},
		{NewLinkID(7, RoleOut, 1, 2), "pipeline 7 stage 1 out 2"},
		{NewLinkID(7, RoleEgress, 2, 0), "pipeline 7 stage 2 egress"},
		{NewLinkID(9, RoleSteal, 3, 1), "group 9 steal 3 → 1"},
		{NewLinkID(4, RoleTrace, 0, 0), "trace of stage 4"},
		{LinkID(258), "link 0x102"},
	} {
		if got := c.id.String(); got != c.want {
			t.Errorf("%#x: %q, want %q", uint64(c.id), got, c.want)
		}
	}
}

// Errors name a link by its decoded id, not a raw number, and an id of no
// known role as its hex value.
func TestErrorsNameTheLinkDecoded(t *testing.T) {
	for _, c := range []struct {
		id   LinkID
		want string
	}{
		{NewLinkID(12, RoleOut, 1, 2), "link (pipeline 12 stage 1 out 2) already has a producer"},
		{42, "link 0x2a already has a producer"},
	} {
		l, err := NewHostQueue(Config{Capacity: 8, SlotSize: 64, LinkID: c.id})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Producer(); err != nil {
			t.Fatal(err)
		}
		_, err = l.Producer()
		if !errors.Is(err, ErrClaimed) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("second producer: %v, want ErrClaimed naming %q", err, c.want)
		}
	}
}
