package runtime

import (
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
