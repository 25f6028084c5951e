// Command build compiles the emulated CUDA driver (package cudaemu) and
// prints the library's path: go run ./internal/cudaemu/build -o .emu
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/ringactor/ringactor/internal/cudaemu"
)

func main() {
	dir := flag.String("o", ".emu", "directory to build in")
	flag.Parse()
	lib, err := cudaemu.Build(*dir, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(lib)
}
