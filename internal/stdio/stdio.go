// Package stdio keeps a program's standard output for the program's own
// output.
//
// ringactor's library prints nothing (runtime.Config.Logger gets its
// records and protoactor's, and cluster.Join uses its own provider, not
// protoactor's automanaged one, whose HTTP server announced itself on
// stdout: "⇨ http server started on ..."). Other code a program links may
// still print to os.Stdout, and a command whose stdout is a document
// (`ringactor bench -json`) or a protocol (a node process's "ready" line)
// cannot have that mixed in, so main claims stdout first: a guard.
package stdio

import (
	"os"
	"sync"
)

var (
	once sync.Once
	out  *os.File
)

// Claim returns the process's standard output and points os.Stdout at
// standard error, so whatever a library prints to os.Stdout from now on
// goes to stderr. Call it first thing in main, and write the program's
// own output to the file it returns; later calls return the same file.
func Claim() *os.File {
	once.Do(func() {
		out = os.Stdout
		os.Stdout = os.Stderr
	})
	return out
}
