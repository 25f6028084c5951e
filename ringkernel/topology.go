package ringkernel

import (
	"fmt"
	"strconv"
	"strings"
)

// Level is how directly two devices are connected, in the terms of
// nvidia-smi topo -m, fastest first.
type Level uint8

const (
	// LevelSelf is a device and itself ("X").
	LevelSelf Level = iota
	// LevelNVLink is a bonded set of NVLinks ("NV#", # the link count).
	LevelNVLink
	// LevelPIX: at most a single PCIe bridge between them.
	LevelPIX
	// LevelPXB: several PCIe bridges, no host bridge.
	LevelPXB
	// LevelPHB: through a PCIe host bridge (the CPU). Also how a GPU
	// reaches the CPU device's memory.
	LevelPHB
	// LevelNODE: across PCIe host bridges within one NUMA node.
	LevelNODE
	// LevelSYS: across NUMA nodes (the SMP interconnect).
	LevelSYS
	// LevelUnknown: nothing said how (no NVML on a machine with GPUs).
	LevelUnknown
)

var levelNames = [...]string{"X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS", "?"}

// Connection is how one device reaches another.
type Connection struct {
	Level Level
	// NVLinks is the number of NVLinks joining them, at LevelNVLink.
	NVLinks int
}

// String is the nvidia-smi topo -m cell: X, NV4, PIX, PXB, PHB, NODE, SYS,
// or ? where it is not known.
func (c Connection) String() string {
	if c.Level == LevelNVLink {
		return fmt.Sprintf("NV%d", c.NVLinks)
	}
	if int(c.Level) < len(levelNames) {
		return levelNames[c.Level]
	}
	return fmt.Sprintf("Level(%d)", c.Level)
}

// MarshalText writes the cell, so JSON shows "NV4".
func (c Connection) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText reads a cell (case does not matter).
func (c *Connection) UnmarshalText(b []byte) error {
	v, err := ParseConnection(string(b))
	if err == nil {
		*c = v
	}
	return err
}

// ParseConnection reads a cell: X, NV<n>, PIX, PXB, PHB, NODE, SYS or ?.
// Its errors wrap ErrNoDevice.
func ParseConnection(s string) (Connection, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	if rest, ok := strings.CutPrefix(u, "NV"); ok && rest != "" {
		n, err := strconv.Atoi(rest)
		if err != nil || n < 1 || n > 64 {
			return Connection{}, fmt.Errorf("%w: link kind %q: NV takes a link count from 1 to 64, as in nv4", ErrNoDevice, s)
		}
		return Connection{Level: LevelNVLink, NVLinks: n}, nil
	}
	for l, name := range levelNames {
		if u == name && Level(l) != LevelNVLink {
			return Connection{Level: Level(l)}, nil
		}
	}
	return Connection{}, fmt.Errorf("%w: link kind %q; want nv<links> (nv4), pix, pxb, phb, node or sys", ErrNoDevice, s)
}

// Faster reports whether c is a faster way between two devices than d:
// more NVLinks, else NVLink over PCIe, else the nearer PCIe level.
func (c Connection) Faster(d Connection) bool {
	if c.Level != d.Level {
		return c.Level < d.Level
	}
	return c.NVLinks > d.NVLinks
}

// Peerable reports whether a connection of this kind usually carries peer
// access: NVLink, or PCIe below a host bridge. Simulated topologies derive
// P2P from it; real GPUs say for themselves.
func (c Connection) Peerable() bool {
	return c.Level == LevelNVLink || c.Level == LevelPIX || c.Level == LevelPXB
}
