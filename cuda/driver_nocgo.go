//go:build !cgo || !(linux || freebsd)

package cuda

import "unsafe"

// driverFuncs is empty: without cgo no driver can be loaded, so none of
// the calls below is ever reached; they exist so the package compiles.
type driverFuncs struct{}

func loadDriverFrom(candidates []string) (*Driver, error) {
	return nil, noDriver(candidates, "; this build has no cgo: rebuild with CGO_ENABLED=1 and a C compiler on Linux")
}

const noCgo = ErrorNotInitialized

func (d *Driver) errorName(r Result) (string, bool)                   { return "", false }
func (d *Driver) errorString(r Result) (string, bool)                 { return "", false }
func (d *Driver) deviceCount() (int, Result)                          { return 0, noCgo }
func (d *Driver) deviceGet(ordinal int) (int, Result)                 { return 0, noCgo }
func (d *Driver) deviceName(dev int) (string, Result)                 { return "", noCgo }
func (d *Driver) deviceAttribute(attr, dev int) (int, Result)         { return 0, noCgo }
func (d *Driver) deviceTotalMem(dev int) (uint64, Result)             { return 0, noCgo }
func (d *Driver) deviceCanAccessPeer(dev, peer int) (bool, Result)    { return false, noCgo }
func (d *Driver) deviceP2PAttribute(attr, src, dst int) (int, Result) { return 0, noCgo }
func (d *Driver) primaryCtxRetain(dev int) (uintptr, Result)          { return 0, noCgo }
func (d *Driver) primaryCtxRelease(dev int) Result                    { return noCgo }
func (d *Driver) ctxSetCurrent(ctx uintptr) Result                    { return noCgo }
func (d *Driver) ctxSynchronize() Result                              { return noCgo }
func (d *Driver) ctxEnablePeerAccess(peer uintptr) Result             { return noCgo }
func (d *Driver) memAlloc(n uint64) (uint64, Result)                  { return 0, noCgo }
func (d *Driver) memFree(p uint64) Result                             { return noCgo }
func (d *Driver) memAllocManaged(n uint64) (uint64, unsafe.Pointer, Result) {
	return 0, nil, noCgo
}
func (d *Driver) memsetD8(p uint64, b byte, n uint64) Result { return noCgo }
func (d *Driver) memcpyHtoD(dst uint64, src []byte) Result   { return noCgo }
func (d *Driver) memcpyDtoH(dst []byte, src uint64) Result   { return noCgo }
func (d *Driver) memHostAlloc(n uint64, flags uint32) (unsafe.Pointer, Result) {
	return nil, noCgo
}
func (d *Driver) memcpyHtoDAsync(dst uint64, src unsafe.Pointer, n uint64, stream uintptr) Result {
	return noCgo
}
func (d *Driver) memcpyDtoHAsync(dst unsafe.Pointer, src uint64, n uint64, stream uintptr) Result {
	return noCgo
}
func (d *Driver) memcpyDtoDAsync(dst, src, n uint64, stream uintptr) Result { return noCgo }
func (d *Driver) memcpyPeerAsync(dst uint64, dctx uintptr, src uint64, sctx uintptr, n uint64, stream uintptr) Result {
	return noCgo
}
func (d *Driver) memFreeHost(p unsafe.Pointer) Result                       { return noCgo }
func (d *Driver) memHostGetDevicePointer(p unsafe.Pointer) (uint64, Result) { return 0, noCgo }
func (d *Driver) moduleLoad(image []byte) (uintptr, string, string, Result) {
	return 0, "", "", noCgo
}
func (d *Driver) moduleUnload(mod uintptr) Result                              { return noCgo }
func (d *Driver) moduleGetFunction(mod uintptr, name string) (uintptr, Result) { return 0, noCgo }
func (d *Driver) occupancy(fn uintptr, block int, smem uint64) (int, Result)   { return 0, noCgo }
func (d *Driver) launch(coop bool, fn uintptr, grid, block Dim3, smem uint32, stream uintptr, packed []byte, offs []int32) Result {
	return noCgo
}
func (d *Driver) streamCreate(flags uint32) (uintptr, Result)       { return 0, noCgo }
func (d *Driver) streamQuery(s uintptr) Result                      { return noCgo }
func (d *Driver) streamSynchronize(s uintptr) Result                { return noCgo }
func (d *Driver) streamDestroy(s uintptr) Result                    { return noCgo }
func (d *Driver) eventCreate(flags uint32) (uintptr, Result)        { return 0, noCgo }
func (d *Driver) eventRecord(e, s uintptr) Result                   { return noCgo }
func (d *Driver) eventSynchronize(e uintptr) Result                 { return noCgo }
func (d *Driver) eventElapsed(start, end uintptr) (float32, Result) { return 0, noCgo }
func (d *Driver) eventDestroy(e uintptr) Result                     { return noCgo }
func (d *Driver) missingGraph() string                              { return "" }
func (d *Driver) streamBeginCapture(s uintptr, mode int) Result     { return noCgo }
func (d *Driver) streamEndCapture(s uintptr) (uintptr, Result)      { return 0, noCgo }
func (d *Driver) graphInstantiate(g uintptr) (uintptr, string, string, Result) {
	return 0, "cuGraphInstantiateWithFlags", "", noCgo
}
func (d *Driver) graphLaunch(e, s uintptr) Result   { return noCgo }
func (d *Driver) graphExecDestroy(e uintptr) Result { return noCgo }
func (d *Driver) graphDestroy(g uintptr) Result     { return noCgo }
