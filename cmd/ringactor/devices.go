package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	rk "github.com/ringactor/ringactor/ringkernel"
	ra "github.com/ringactor/ringactor/runtime"
)

// deviceRow is a device as devices -json prints it: the registry's
// fields and its affinity.
type deviceRow struct {
	ra.Device
	affinity
}

func devices(args []string, out, errOut io.Writer) error {
	fs := newFlags("devices")
	asJSON := fs.Bool("json", false, "print JSON: backend, note, devices (with cpu_affinity, numa_affinity), topology")
	backend := fs.String("backend", "auto", "auto, sim or cuda")
	if err := parseFlags(fs, args, out, 0); err != nil {
		return err
	}
	if err := checkBackend(*backend); err != nil {
		return err
	}
	reg, err := ra.DiscoverDevices(ra.DeviceOptions{Backend: *backend})
	if err != nil {
		return err
	}
	devs := reg.Devices()
	topo := make([][]ra.Connection, len(devs))
	rows := make([]deviceRow, len(devs))
	for i, d := range devs {
		for j := range devs {
			topo[i] = append(topo[i], reg.Connection(i, j))
		}
		rows[i] = deviceRow{d, affinityOf(sysfsRoot, d)}
	}
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Backend  string            `json:"backend"`
			Note     string            `json:"note"`
			Devices  []deviceRow       `json:"devices"`
			Topology [][]ra.Connection `json:"topology"`
		}{reg.BackendName(), reg.Note(), rows, topo})
	}
	fmt.Fprintln(out, reg.Note())
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "id\tname\tkind\tbackend\tsource\tmemory\tcompute\tSMs/cores")
	for _, d := range devs {
		units := "-"
		if d.SMs > 0 {
			units = strconv.Itoa(d.SMs)
		} else if d.Cores > 0 {
			units = strconv.Itoa(d.Cores)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%.1f GiB\t%s\t%s\n", d.ID, d.Name, d.Kind, d.Backend, d.Source, float64(d.MemoryBytes)/(1<<30), d.ComputeCapability, units)
	}
	tw.Flush()
	fmt.Fprintln(out, "\nTopology (as nvidia-smi topo -m):")
	label := func(d ra.Device) string {
		if d.Kind == ra.KindCPU {
			return "CPU"
		}
		return fmt.Sprintf("GPU%d", d.ID)
	}
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "\t")
	for _, d := range devs {
		fmt.Fprintf(tw, "%s\t", label(d))
	}
	fmt.Fprintln(tw, "CPU Affinity\tNUMA Affinity\tP2P to")
	for i, d := range devs {
		fmt.Fprintf(tw, "%s\t", label(d))
		var peers []string
		for j := range devs {
			fmt.Fprintf(tw, "%s\t", topo[i][j])
			if reg.Peer(i, j) {
				peers = append(peers, strconv.Itoa(j))
			}
		}
		if len(peers) == 0 {
			peers = []string{"-"}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", orDash(rows[i].CPUs, "-"), orDash(rows[i].NUMA, "N/A"), strings.Join(peers, ","))
	}
	tw.Flush()
	fmt.Fprint(out, legend(topo))
	return nil
}

func orDash(s, none string) string {
	if s == "" {
		return none
	}
	return s
}

// legendLines explain the matrix's cells in nvidia-smi topo -m's words,
// in its order, by level.
var legendLines = []struct {
	level rk.Level
	text  string
}{
	{rk.LevelSelf, "  X    = Self"},
	{rk.LevelSYS, "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)"},
	{rk.LevelNODE, "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node"},
	{rk.LevelPHB, "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU); the way a GPU reaches the CPU's memory"},
	{rk.LevelPXB, "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)"},
	{rk.LevelPIX, "  PIX  = Connection traversing at most a single PCIe bridge"},
	{rk.LevelNVLink, "  NV#  = Connection traversing a bonded set of # NVLinks"},
	{rk.LevelUnknown, "  ?    = Not known (NVML did not say)"},
}

// legend explains the symbols topo's cells use, and only those, then the
// columns after them.
func legend(topo [][]ra.Connection) string {
	seen := map[rk.Level]bool{}
	for _, row := range topo {
		for _, c := range row {
			seen[c.Level] = true
		}
	}
	var b strings.Builder
	b.WriteString("\nLegend:\n\n")
	for _, l := range legendLines {
		if seen[l.level] {
			b.WriteString(l.text + "\n")
		}
	}
	b.WriteString("\n  CPU Affinity, NUMA Affinity = the CPUs and NUMA node nearest the device (sysfs; - and N/A where not known)\n")
	b.WriteString("  P2P to = the devices whose memory this one writes directly (peer access)\n")
	return b.String()
}
