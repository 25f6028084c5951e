// Command genptx compiles every built-in stage's ring kernel through NVRTC
// for kernels.ShippedArch and writes the PTX that package kernels embeds, so
// a GPU machine needs only the driver. Run it through `make ptx`; `make
// check-ptx` fails when the checked-in PTX differs from a fresh build.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ringactor/ringactor/cuda/nvrtc"
	"github.com/ringactor/ringactor/kernels"
)

func main() {
	dir := flag.String("o", "kernels/ptx", "write the PTX files into this directory")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "genptx:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	n, err := nvrtc.Load()
	if err != nil {
		return fmt.Errorf("%w (install it with: bash .ci/install-nvrtc)", err)
	}
	major, minor := n.Version()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	want := map[string]bool{}
	for _, file := range kernels.Sources() {
		op, err := kernels.Lookup(strings.TrimSuffix(file, ".cu"))
		if err != nil {
			return fmt.Errorf("%s has no registered op: %w", file, err)
		}
		out, err := n.Compile(nvrtc.Source(kernels.RingSource(op)), kernels.ShippedArch, kernels.CompileOptions...)
		if err != nil {
			return err
		}
		name := kernels.Symbol(op.Name) + ".ptx"
		want[name] = true
		if err := os.WriteFile(filepath.Join(dir, name), kernels.ShippedPTXOf(out.PTX), 0o644); err != nil {
			return err
		}
		fmt.Printf("%s: %d bytes of PTX for %s (NVRTC %d.%d)\n", name, len(out.PTX), kernels.ShippedArch, major, minor)
	}
	// Remove PTX of stages that no longer exist.
	old, _ := filepath.Glob(filepath.Join(dir, "*.ptx"))
	for _, f := range old {
		if !want[filepath.Base(f)] {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
	}
	return nil
}
