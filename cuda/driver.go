package cuda

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// DriverEnv names the environment variable that points at the libcuda to
// load. When it is set, it is the only candidate.
const DriverEnv = "RINGACTOR_LIBCUDA"

// ErrNoDriver: no CUDA driver library could be loaded. The error LoadDriver
// returns wraps it and says what was tried and what to install.
var ErrNoDriver = errors.New("cuda: driver not found")

// ErrReleased is wrapped by the error of any use of a handle (context,
// memory, module, function, stream, event) after it was released, freed,
// unloaded or destroyed.
var ErrReleased = errors.New("cuda: handle already released")

// ErrUnsupported is wrapped by the error of a call the loaded driver has
// no entry point for (such as CUDA graphs on a driver older than 11.0).
var ErrUnsupported = errors.New("cuda: not supported by this driver")

// Result is a CUDA driver API status code (CUresult).
type Result int

// The CUresult values this package names. Any other value can still appear
// in an *Error; its Name then comes from the driver.
const (
	ResultSuccess                  Result = 0
	ErrorInvalidValue              Result = 1
	ErrorOutOfMemory               Result = 2
	ErrorNotInitialized            Result = 3
	ErrorDeinitialized             Result = 4
	ErrorNoDevice                  Result = 100
	ErrorInvalidDevice             Result = 101
	ErrorInvalidImage              Result = 200
	ErrorInvalidContext            Result = 201
	ErrorNoBinaryForGPU            Result = 209
	ErrorPeerAccessUnsupported     Result = 217
	ErrorInvalidPTX                Result = 218
	ErrorUnsupportedPTXVersion     Result = 222
	ErrorInvalidHandle             Result = 400
	ErrorIllegalState              Result = 401
	ErrorNotFound                  Result = 500
	ResultNotReady                 Result = 600
	ErrorIllegalAddress            Result = 700
	ErrorLaunchOutOfResources      Result = 701
	ErrorLaunchTimeout             Result = 702
	ErrorPeerAccessAlreadyEnabled  Result = 704
	ErrorPeerAccessNotEnabled      Result = 705
	ErrorLaunchFailed              Result = 719
	ErrorCooperativeLaunchTooLarge Result = 720
	ErrorNotSupported              Result = 801
	ErrorStreamCaptureUnsupported  Result = 900
	ErrorStreamCaptureInvalidated  Result = 901
	ErrorStreamCaptureWrongThread  Result = 908
	ErrorUnknown                   Result = 999
)

// Error is a failed driver API call.
type Error struct {
	Call   string // driver function, such as "cuMemAlloc_v2"
	Result Result // its status code
	Name   string // such as "CUDA_ERROR_OUT_OF_MEMORY" (cuGetErrorName), or "CUresult(N)"
	Text   string // such as "out of memory" (cuGetErrorString), may be empty
	Log    string // more the driver said, such as the JIT error log of a module load
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("cuda: ")
	b.WriteString(e.Call)
	b.WriteString(": ")
	if e.Name != "" {
		b.WriteString(e.Name)
	} else {
		fmt.Fprintf(&b, "CUresult(%d)", int(e.Result))
	}
	if e.Text != "" {
		b.WriteString(" (")
		b.WriteString(e.Text)
		b.WriteString(")")
	}
	if log := strings.TrimSpace(e.Log); log != "" {
		b.WriteString(":\n")
		b.WriteString(log)
	}
	return b.String()
}

// Is reports whether target is an *Error with the same Result, so that
// errors.Is(err, &cuda.Error{Result: cuda.ErrorOutOfMemory}) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t != nil && e != nil && t.Result == e.Result
}

// Attribute is a device attribute (CUdevice_attribute).
type Attribute int

// Device attributes, with the driver's numbering.
const (
	AttrMaxThreadsPerBlock          Attribute = 1
	AttrMultiprocessorCount         Attribute = 16
	AttrKernelExecTimeout           Attribute = 17 // a watchdog ends long kernels (display GPUs)
	AttrCanMapHostMemory            Attribute = 19
	AttrPCIBusID                    Attribute = 33
	AttrPCIDeviceID                 Attribute = 34
	AttrMaxThreadsPerMultiprocessor Attribute = 39
	AttrUnifiedAddressing           Attribute = 41
	AttrComputeCapabilityMajor      Attribute = 75
	AttrComputeCapabilityMinor      Attribute = 76
	AttrManagedMemory               Attribute = 83 // cuMemAllocManaged works
	AttrHostNativeAtomicSupported   Attribute = 86
	AttrPageableMemoryAccess        Attribute = 88
	AttrConcurrentManagedAccess     Attribute = 89
	AttrCooperativeLaunch           Attribute = 95
)

// P2PAttribute is an attribute of the link between two devices
// (CUdevice_P2PAttribute).
type P2PAttribute int

// Peer-to-peer link attributes, with the driver's numbering.
const (
	P2PPerformanceRank          P2PAttribute = 1
	P2PAccessSupported          P2PAttribute = 2
	P2PNativeAtomicSupported    P2PAttribute = 3
	P2PCudaArrayAccessSupported P2PAttribute = 4
)

// Flags and options of the driver API used here.
const (
	memHostAllocPortable  = 0x01 // CU_MEMHOSTALLOC_PORTABLE
	memHostAllocDeviceMap = 0x02 // CU_MEMHOSTALLOC_DEVICEMAP
	streamNonBlocking     = 0x01 // CU_STREAM_NON_BLOCKING
	captureModeRelaxed    = 2    // CU_STREAM_CAPTURE_MODE_RELAXED (GLOBAL 0, THREAD_LOCAL 1)
	eventDefault          = 0x00 // CU_EVENT_DEFAULT (timing enabled)
	memAttachGlobal       = 0x01 // CU_MEM_ATTACH_GLOBAL (HOST 2, SINGLE 4)
)

// Driver is the loaded CUDA driver library. It is safe for concurrent use.
type Driver struct {
	path    string
	version int
	fn      driverFuncs // per build: function pointers, or nothing without cgo

	mu      sync.Mutex
	allocs  []allocation // live device and mapped host allocations, by base
	retains map[int]int  // CUdevice -> live Contexts retaining its primary context
}

var (
	driverOnce sync.Once
	driverLib  *Driver
	driverErr  error
)

// LoadDriver loads the CUDA driver once per process and returns it: it
// opens the library (the path in RINGACTOR_LIBCUDA, else libcuda.so.1, else
// libcuda.so), resolves every function this package calls and runs
// cuInit(0). The error wraps ErrNoDriver when no library could be loaded,
// or is the *Error of cuInit (such as CUDA_ERROR_NO_DEVICE) when one was.
//
// Before cuInit it sets CUDA_MODULE_LOADING=EAGER unless the variable is
// already set: under lazy loading (the default from CUDA 12.2) a module's
// kernels are loaded at their first use, which may wait for the device,
// and a device running persistent ring kernels never becomes idle.
func LoadDriver() (*Driver, error) {
	driverOnce.Do(func() {
		eagerModuleLoading()
		driverLib, driverErr = loadDriverFrom(driverCandidates())
	})
	return driverLib, driverErr
}

// ModuleLoadingEnv is the driver's variable that chooses lazy or eager
// module loading; it is read once, by cuInit.
const ModuleLoadingEnv = "CUDA_MODULE_LOADING"

// MaxConnectionsEnv is the driver's variable for the number of hardware
// work queues a context's streams are spread over (default 8, at most 32),
// read once, by cuInit. Streams beyond that share queues, and a kernel
// queued behind a persistent kernel in the same hardware queue never starts.
const MaxConnectionsEnv = "CUDA_DEVICE_MAX_CONNECTIONS"

// eagerModuleLoading sets CUDA_MODULE_LOADING=EAGER, and
// CUDA_DEVICE_MAX_CONNECTIONS=32, where they are unset.
func eagerModuleLoading() {
	if _, ok := os.LookupEnv(ModuleLoadingEnv); !ok {
		os.Setenv(ModuleLoadingEnv, "EAGER")
	}
	if _, ok := os.LookupEnv(MaxConnectionsEnv); !ok {
		os.Setenv(MaxConnectionsEnv, "32")
	}
}

// MaxConnections is the number of hardware queues the driver spreads
// streams over, as CUDA_DEVICE_MAX_CONNECTIONS says (8 when unset or
// unreadable, the driver's default).
func MaxConnections() int {
	n, err := strconv.Atoi(os.Getenv(MaxConnectionsEnv))
	if err != nil || n < 1 {
		return 8
	}
	return min(n, 32)
}

// driverCandidates lists the libraries to try, best first.
func driverCandidates() []string {
	if p := os.Getenv(DriverEnv); p != "" {
		return []string{p} // an explicit choice is not second-guessed
	}
	return []string{"libcuda.so.1", "libcuda.so"}
}

func noDriver(tried []string, why string) error {
	return fmt.Errorf("%w (tried %s%s); install the NVIDIA driver (it provides libcuda.so.1; nvidia-smi should list the GPUs) or set %s to the library's path",
		ErrNoDriver, strings.Join(tried, ", "), why, DriverEnv)
}

// Path is the library that was loaded.
func (d *Driver) Path() string {
	if d == nil {
		return ""
	}
	return d.path
}

// Version is the driver's CUDA version as cuDriverGetVersion reports it,
// 1000*major + 10*minor, such as 12040 for CUDA 12.4.
func (d *Driver) Version() int {
	if d == nil {
		return 0
	}
	return d.version
}

var errNilDriver = errors.New("cuda: nil *Driver (use LoadDriver)")

// err turns a failed call into an *Error, naming the result through the
// driver. It returns nil for ResultSuccess.
func (d *Driver) err(call string, r Result) error {
	if r == ResultSuccess {
		return nil
	}
	e := &Error{Call: call, Result: r}
	if d != nil {
		e.Name, _ = d.errorName(r)
		e.Text, _ = d.errorString(r)
	}
	if e.Name == "" {
		e.Name = fmt.Sprintf("CUresult(%d)", int(r))
	}
	return e
}

// allocation is one live allocation the driver handed out through this
// package: device memory, or the device view of mapped host memory.
type allocation struct {
	base DevicePtr
	size uint64
	ctx  uintptr // the CUcontext it belongs to
	host bool    // mapped host memory (free with FreeHost)
}

func (d *Driver) addAlloc(a allocation) {
	d.mu.Lock()
	defer d.mu.Unlock()
	i := sort.Search(len(d.allocs), func(i int) bool { return d.allocs[i].base >= a.base })
	d.allocs = append(d.allocs, allocation{})
	copy(d.allocs[i+1:], d.allocs[i:])
	d.allocs[i] = a
}

// findAlloc returns the live allocation that holds [p, p+n), if any; n is
// at least 1.
func (d *Driver) findAlloc(p DevicePtr, n uint64) (allocation, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	i := sort.Search(len(d.allocs), func(i int) bool { return d.allocs[i].base > p }) - 1
	if i < 0 {
		return allocation{}, false
	}
	a := d.allocs[i]
	off := uint64(p - a.base)
	if off >= a.size || n > a.size-off {
		return allocation{}, false
	}
	return a, true
}

// takeAlloc removes and returns the allocation based at p, when check
// accepts it.
func (d *Driver) takeAlloc(p DevicePtr, check func(allocation) error) (allocation, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	i := sort.Search(len(d.allocs), func(i int) bool { return d.allocs[i].base >= p })
	if i == len(d.allocs) || d.allocs[i].base != p {
		return allocation{}, fmt.Errorf("cuda: %#x is not the start of a live allocation (freed already, or not from Alloc): %w", uint64(p), ErrReleased)
	}
	a := d.allocs[i]
	if err := check(a); err != nil {
		return allocation{}, err
	}
	d.allocs = append(d.allocs[:i], d.allocs[i+1:]...)
	return a, nil
}

// dropAllocs forgets every allocation of a destroyed context.
func (d *Driver) dropAllocs(ctx uintptr) {
	d.mu.Lock()
	defer d.mu.Unlock()
	kept := d.allocs[:0]
	for _, a := range d.allocs {
		if a.ctx != ctx {
			kept = append(kept, a)
		}
	}
	d.allocs = kept
}
