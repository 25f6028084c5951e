package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	q "github.com/ringactor/ringactor/p2pqueue"
)

// The checked-in header must be what the generator writes from today's Go
// constants: a stale header means kernels and host disagree on the layout.
func TestCheckedInHeaderIsFresh(t *testing.T) {
	got, err := os.ReadFile("../../include/ringactor_layout.h")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, header()) {
		t.Fatal("kernels/include/ringactor_layout.h is stale: run `go generate ./kernels/...` and commit the result")
	}
}

func TestHeaderCarriesTheGoValues(t *testing.T) {
	h := string(header())
	for _, want := range []string{
		"#define RA_Q_OFF_TAIL              0x80u",
		"#define RA_Q_OFF_HEAD              0x100u",
		"#define RA_Q_OFF_SLOTS             0x180u",
		"#define RA_SLOT_HEADER_SIZE        0x20u",
		"#define RA_CB_OFF_STATE            0x80u",
		"#define RA_CODE_SHUTDOWN           (-7)",
	} {
		if !strings.Contains(h, want) {
			t.Errorf("header lacks %q", want)
		}
	}
	if q.OffTail != 0x80 || q.OffHead != 0x100 || q.OffSlots != 0x180 {
		t.Fatal("layout moved: update this test with docs/ARCHITECTURE.md §2")
	}
	names := map[string]bool{}
	for _, d := range defs() {
		if names[d.name] {
			t.Errorf("%s defined twice", d.name)
		}
		names[d.name] = true
	}
}
