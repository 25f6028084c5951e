//go:build !cgo || !(linux || freebsd)

package cuda

func (d *Driver) lookupOptional(sym string) uintptr { return 0 }

func (d *Driver) hostBuild(f uintptr, ptx []byte, name, code string, names, texts []string) (string, Result) {
	return "", noCgo
}
