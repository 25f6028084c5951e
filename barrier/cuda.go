package barrier

import (
	_ "embed"
	"fmt"
	"strings"
)

// CUDAHeaderName is the include name of the device-side barrier:
// #include "ra_barrier.cuh" with CUDAHeader as its text among NVRTC's
// headers, beside the kernels package's (it includes ringactor.cuh).
const CUDAHeaderName = "ra_barrier.cuh"

//go:embed cuda/ra_barrier.cuh
var cudaBody string

// CUDAHeader is the device-side barrier's source: the layout #defines
// (RA_BAR_*) generated from this package's constants, then
// cuda/ra_barrier.cuh, which refuses to compile without them.
var CUDAHeader = cudaPrelude() + cudaBody

func cudaPrelude() string {
	var b strings.Builder
	b.WriteString("// Generated from package barrier's layout constants; do not edit.\n")
	def := func(name string, v any) { fmt.Fprintf(&b, "#define %s %v\n", name, v) }
	def("RA_BAR_MAGIC", fmt.Sprintf("0x%08xu", Magic))
	def("RA_BAR_VERSION", fmt.Sprintf("%du", Version))
	def("RA_BAR_OFF_MAGIC", OffMagic)
	def("RA_BAR_OFF_VERSION", OffVersion)
	def("RA_BAR_OFF_PARTICIPANTS", OffParticipants)
	def("RA_BAR_HEADER_SIZE", HeaderSize)
	def("RA_BAR_LINE_SIZE", LineSize)
	def("RA_BAR_OFF_GENERATION", OffGeneration)
	def("RA_BAR_MAX_PARTICIPANTS", fmt.Sprintf("%du", MaxParticipants))
	return b.String()
}
