package nodeproc

import (
	"fmt"
	"strings"
	"testing"
)

// A child's stderr, quoted in Start's errors, is kept whole up to tailMax;
// past that its start is left out at a word, never mid-word, and marked
// with how many bytes were left out.
func TestTailCutsAtAWord(t *testing.T) {
	var short tail
	fmt.Fprintln(&short, "nodeproc: ringactor: cluster node \"stage2\": joining: context deadline exceeded")
	if got := short.String(); got != `nodeproc: ringactor: cluster node "stage2": joining: context deadline exceeded` {
		t.Fatalf("short stderr: %q", got)
	}

	var long tail
	line := "stage2 log: the segment of pipeline guide is running on device 1\n"
	var all strings.Builder
	for range 3 * tailMax / len(line) {
		fmt.Fprint(&long, line)
		all.WriteString(line)
	}
	fmt.Fprint(&long, "nodeproc: exiting")
	all.WriteString("nodeproc: exiting")
	got := long.String()
	mark, kept, ok := strings.Cut(got, ") ")
	var left int
	if _, err := fmt.Sscanf(mark, "(… %d bytes left out", &left); err != nil || !ok {
		t.Fatalf("no mark at the start: %q (%v)", got[:min(len(got), 80)], err)
	}
	full := all.String()
	if !strings.HasSuffix(full, kept) || !strings.HasSuffix(kept, "nodeproc: exiting") || len(kept) > tailMax {
		t.Fatalf("kept %d bytes, not the end of what was written: %q", len(kept), kept[:min(len(kept), 80)])
	}
	// It starts at a word: what precedes it in the stream is whitespace.
	at := len(full) - len(kept)
	if c := full[at-1]; c != ' ' && c != '\n' {
		t.Fatalf("kept part starts mid-word: ...%q|%q...", full[at-10:at], kept[:20])
	}
	if left != at {
		t.Fatalf("says %d bytes left out; %d were written and %d are shown", left, len(full), len(kept))
	}
}

// A cut that falls between words keeps the word after it.
func TestTailCutBetweenWords(t *testing.T) {
	var tl tail
	fmt.Fprint(&tl, "first ")
	fmt.Fprint(&tl, strings.Repeat("x", tailMax-4)+" end")
	if got, want := tl.String(), "(… 6 bytes left out) "+strings.Repeat("x", tailMax-4)+" end"; got != want {
		t.Fatalf("got %q...", got[:40])
	}
}
