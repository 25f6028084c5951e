// Command ringactor inspects what ringactor sees and does:
//
//	ringactor devices [-json] [-backend auto|sim|cuda]
//	ringactor describe [-devices 0,1,2] [-backend ...]
//	ringactor bench [-quick] [-json] [-only PREFIX] [-scale F]
//	ringactor bench-gpu [-json] [-samples N] [-messages N]
//	ringactor top [-once] [-duration D] [-interval D] [-devices auto] [-backend ...]
//
// top runs a demo workload and shows every device's utilization, memory
// and link traffic and every stage's rate, redrawn each interval
// (Runtime.Metrics).
//
// devices lists the devices of the backend chosen as the runtime would
// choose it (the CUDA driver's GPUs, else simulated devices) with their P2P
// matrix; describe builds the main job's pipeline on the given device ids
// and shows where each link lives, without running it; bench measures
// ringactor beside protoactor-go actors, goroutines and channels (and, with
// a GPU, a kernel launch per message and a CUDA graph replayed per
// message) in one run, as ratios.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/ringactor/ringactor/internal/demo"
	"github.com/ringactor/ringactor/internal/devlist"
	"github.com/ringactor/ringactor/internal/nodeproc"
	"github.com/ringactor/ringactor/internal/stdio"
	ra "github.com/ringactor/ringactor/runtime"
)

func main() {
	out := stdio.Claim() // stdout is ours: -json prints a document there
	nodeproc.Main()      // the remote benchmark starts this binary again as its peer node
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], out, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, errorLine(err))
		}
		os.Exit(2)
	}
}

// errorLine is how the command reports err: after its name, "ringactor:",
// unless err already begins with it, as the runtime's errors do
// ("ringactor: backend unavailable: ..."), which would read
// "ringactor: ringactor: ...".
func errorLine(err error) string {
	msg := err.Error()
	if strings.HasPrefix(msg, "ringactor:") {
		return msg
	}
	return "ringactor: " + msg
}

const usage = `usage: ringactor <command> [flags]

commands:
  devices    list devices (GPUs and the CPU) and their topology matrix (-json for JSON)
  describe   show the main job's pipeline placement on -devices 0,1,2
  bench      every benchmark this machine can run, beside its baseline (-quick, -json, -only)
  bench-gpu  ring kernels on GPU 0 vs a kernel launch and a CUDA graph replay per message (needs a GPU)
  top        live view of devices, links and stages under a demo workload (-once, -duration, -interval)
`

func run(ctx context.Context, args []string, out, errOut io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(errOut, usage)
		return errors.New("no command")
	}
	switch args[0] {
	case "devices":
		return devices(args[1:], out, errOut)
	case "describe":
		return describe(ctx, args[1:], out, errOut)
	case "bench":
		return benchCmd(ctx, args[1:], out, errOut)
	case "bench-gpu":
		return benchGPU(ctx, args[1:], out, errOut)
	case "top":
		return top(ctx, args[1:], out, errOut)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(out, usage)
		return nil
	}
	fmt.Fprint(errOut, usage)
	return fmt.Errorf("unknown command %q", args[0])
}

func devices(args []string, out, errOut io.Writer) error {
	fs := flag.NewFlagSet("devices", flag.ContinueOnError)
	fs.SetOutput(errOut)
	asJSON := fs.Bool("json", false, "print JSON")
	backend := fs.String("backend", "auto", "auto, sim or cuda")
	if err := fs.Parse(args); err != nil {
		return err
	}
	reg, err := ra.DiscoverDevices(ra.DeviceOptions{Backend: *backend, Log: io.Discard})
	if err != nil {
		return err
	}
	devs := reg.Devices()
	topo := make([][]ra.Connection, len(devs))
	for i := range devs {
		for j := range devs {
			topo[i] = append(topo[i], reg.Connection(i, j))
		}
	}
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Backend  string            `json:"backend"`
			Note     string            `json:"note"`
			Devices  []ra.Device       `json:"devices"`
			Topology [][]ra.Connection `json:"topology"`
		}{reg.BackendName(), reg.Note(), devs, topo})
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
	fmt.Fprintln(tw, "P2P to")
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
		fmt.Fprintln(tw, strings.Join(peers, ","))
	}
	tw.Flush()
	fmt.Fprint(out, topologyLegend)
	return nil
}

const topologyLegend = `
Legend:
  X    = self
  NV#  = connection traversing a bonded set of # NVLinks
  PIX  = connection traversing at most a single PCIe bridge
  PXB  = connection traversing multiple PCIe bridges (without a PCIe host bridge)
  PHB  = connection traversing PCIe as well as a PCIe host bridge (the CPU's memory is reached so)
  NODE = connection traversing PCIe and the interconnect between PCIe host bridges within a NUMA node
  SYS  = connection traversing PCIe and the SMP interconnect between NUMA nodes
  ?    = not known (NVML did not say)
  P2P to = the devices whose memory this one writes directly (peer access)
`

// guideRuntime opens a runtime on backend and reads -devices for the main
// job's three stages.
func guideRuntime(backend, devices string, errOut io.Writer) (*ra.Runtime, [3]int, error) {
	rt, err := ra.New(ra.Config{Devices: ra.DeviceOptions{Backend: backend, Log: errOut}})
	if err != nil {
		return nil, [3]int{}, err
	}
	reg := rt.Registry()
	id := func(name string) (int, error) { d, err := reg.Lookup(name); return d.ID, err }
	ids, err := devlist.Parse(devices, 3, id, reg.Chain, ra.ErrNoDevice)
	if err != nil {
		rt.Close()
		return nil, [3]int{}, fmt.Errorf("-devices: %w", err)
	}
	return rt, [3]int(ids), nil
}

func describe(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := flag.NewFlagSet("describe", flag.ContinueOnError)
	fs.SetOutput(errOut)
	devs := fs.String("devices", "auto", `devices of the three stages: ids or "cpu", one for all, or auto (the fastest links)`)
	backend := fs.String("backend", "auto", "auto, sim or cuda")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rt, ids, err := guideRuntime(*backend, *devs, errOut)
	if err != nil {
		return err
	}
	defer rt.Close()
	p, err := rt.Build(ctx, demo.Guide("guide", ids))
	if err != nil {
		return err
	}
	fmt.Fprint(out, p.Describe())
	return p.Close(ctx, false)
}
