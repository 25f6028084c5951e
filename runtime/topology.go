package runtime

import (
	"github.com/ringactor/ringactor/internal/devlist"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// Level is how directly two devices are connected, in the terms of
// nvidia-smi topo -m, fastest first (ringkernel.Level).
type Level = rk.Level

// The levels, fastest first (see ringkernel.Level's).
const (
	LevelSelf    = rk.LevelSelf
	LevelNVLink  = rk.LevelNVLink
	LevelPIX     = rk.LevelPIX
	LevelPXB     = rk.LevelPXB
	LevelPHB     = rk.LevelPHB
	LevelNODE    = rk.LevelNODE
	LevelSYS     = rk.LevelSYS
	LevelUnknown = rk.LevelUnknown
)

// Connection is how one device reaches another (ringkernel.Connection).
type Connection = rk.Connection

// ParseConnection reads a cell: X, NV<n>, PIX, PXB, PHB, NODE, SYS or ?.
func ParseConnection(s string) (Connection, error) { return rk.ParseConnection(s) }

// Connection says how device a reaches device b (LevelUnknown for ids not
// in the registry).
func (r *Registry) Connection(a, b int) Connection { return r.reg().Connection(a, b) }

// Chain picks GPUs for n consecutive stages (a pipeline's stage i sends to
// stage i+1), preferring the fastest link between each stage and the
// next: distinct GPUs joined by NVLink where there is some, then PCIe
// switches, then host bridges, and so on. Of the chains its greedy walk
// finds from each start, it takes the one whose slowest link is fastest
// (then the next slowest, then the lowest ids). With fewer GPUs than
// stages the chain starts over on the same GPUs, so one GPU takes every
// stage. The CPU is never picked: place stages there by name.
func (r *Registry) Chain(n int) ([]int, error) { return r.reg().Chain(n) }

// DeviceList reads a list of devices for n stages as command lines give
// it: "auto" (Chain(n)), one device for all of them ("2", "cpu"), or one
// per stage ("0,cpu,2"), each an id or "cpu". A name that is no device is
// reported (with the ids there are) before a list of the wrong length.
//
// Deprecated: reading a command line is the program's job, not the
// library's; DeviceList goes in the next release. Copy the few lines of
// parsing a program needs: split the list on commas, name each device
// with Registry.Lookup (an id or "cpu"), and take Registry.Chain(n) for
// "auto".
func (r *Registry) DeviceList(s string, n int) ([]int, error) { return devlist.Parse(s, n, r) }
