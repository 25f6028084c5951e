//go:build !cgo || !(linux || freebsd)

package hostbuild

import "github.com/ringactor/ringactor/cuda"

func lookup(lib, sym string) uintptr { return 0 }

func build(f uintptr, ptx []byte, name, code string, names, texts []string) (string, cuda.Result) {
	return "", cuda.ErrorNotInitialized
}

func errorText(lib string, r cuda.Result) (name, text string) { return "", "" }
