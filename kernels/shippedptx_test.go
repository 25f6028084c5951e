package kernels_test

import (
	"strings"
	"testing"

	"github.com/ringactor/ringactor/kernels"
)

// NVRTC numbers call sequences with a counter that outlives one compile:
// the shipped file numbers them per file, in order, so it depends on its
// source alone (TestShippedPTX compiles saxpy in a process that may have
// compiled others first; make ptx compiles every op in one process).
func TestShippedPTXOfNumbersCallSequencesPerFile(t *testing.T) {
	in := "\t{ // callseq 12, 0\n\tcall.uni f;\n\t} // callseq 12\n\t{ // callseq 13, 0\n\t} // callseq 13\n\t{ // callseq 12, 0\n"
	want := kernels.GeneratedPTXHeader + "\t{ // callseq 0, 0\n\tcall.uni f;\n\t} // callseq 0\n\t{ // callseq 1, 0\n\t} // callseq 1\n\t{ // callseq 0, 0\n"
	if got := string(kernels.ShippedPTXOf([]byte(in))); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	other := strings.ReplaceAll(strings.ReplaceAll(in, "12", "40"), "13", "41")
	if string(kernels.ShippedPTXOf([]byte(other))) != want {
		t.Fatal("the same PTX numbered from another start differs once shipped")
	}
}
