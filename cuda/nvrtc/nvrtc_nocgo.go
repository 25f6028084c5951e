//go:build !cgo || !(linux || freebsd)

package nvrtc

// NVRTC is a loaded NVRTC library; without cgo none can be loaded.
type NVRTC struct{}

func loadNVRTC(candidates []string) (*NVRTC, error) {
	return nil, noNVRTC(candidates, "; this build has no cgo: rebuild with CGO_ENABLED=1 and a C compiler")
}

func (n *NVRTC) Path() string                { return "" }
func (n *NVRTC) Version() (major, minor int) { return 0, 0 }
func (n *NVRTC) Compile(src Source, arch string, options ...string) (*Compiled, error) {
	return nil, ErrNoNVRTC
}
