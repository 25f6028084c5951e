package kernels

import (
	"embed"
	"io/fs"
	"sort"
	"strings"
)

//go:embed cuda/*.cu cuda/*.cuh
var cudaFS embed.FS

// DeviceHeaderName is the include name of the device helpers every stage
// source includes.
const DeviceHeaderName = "ringactor.cuh"

// LLHeaderName is the include name of the flagged-link helpers
// DeviceHeaderName includes (experimental).
const LLHeaderName = "ra_ll.cuh"

// Headers returns the headers a stage source compiles against, by include
// name, for NVRTC's in-memory includes.
func Headers() map[string]string {
	return map[string]string{
		LayoutHeaderName: LayoutHeader,
		TypesHeaderName:  typesHeader,
		DeviceHeaderName: mustRead("cuda/" + DeviceHeaderName),
		LLHeaderName:     mustRead("cuda/" + LLHeaderName),
		"ra_warp.cuh":    mustRead("cuda/ra_warp.cuh"), // the warp loop, which ringactor.cuh includes
	}
}

// Sources returns the CUDA sources of the built-in stages by file name
// (identity.cu, scale.cu, ...), sorted.
func Sources() []string {
	ents, _ := fs.Glob(cudaFS, "cuda/*.cu")
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, strings.TrimPrefix(e, "cuda/"))
	}
	sort.Strings(names)
	return names
}

// Source returns the CUDA source of the named file.
func Source(name string) (string, bool) {
	b, err := cudaFS.ReadFile("cuda/" + name)
	return string(b), err == nil
}

func mustRead(path string) string {
	b, err := cudaFS.ReadFile(path)
	if err != nil {
		panic(err) // embedded at build time: missing is a build bug
	}
	return string(b)
}
