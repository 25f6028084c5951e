package bench

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	ra "github.com/ringactor/ringactor/runtime"
)

// The copy rows: for every ordered pair of the runtime's devices (the
// GPUs and the CPU, the diagonal included), how fast Buffer.CopyTo moves
// one buffer's bytes into another's, at sizes from 1 KiB to 64 MiB: the
// documents' "P2P vs host staging" table. Each row says the path the
// copy took (peer, staged through pinned host memory, local, or host
// where the CPU is an end) and its GB/s; a "message" of the row is one
// copy of its size. On simulated devices a copy is a Go memory copy (a
// staged one two), over the emulated driver the emulator's copy engine:
// their notes say so, as the P2P rows' do.

// copySize is one size of the copy rows.
type copySize struct {
	name  string
	bytes int
}

// copySizes are 1 KiB to 64 MiB by powers of 4.
var copySizes = func() (s []copySize) {
	for b := 1 << 10; b <= 64<<20; b <<= 2 {
		name := fmt.Sprintf("%dKiB", b>>10)
		if b >= 1<<20 {
			name = fmt.Sprintf("%dMiB", b>>20)
		}
		s = append(s, copySize{name, b})
	}
	return s
}()

// copyBudget is the bytes one run of a row copies at full size
// (quickCopyBudget with -quick; Run halves both), in at most copyMost
// copies and at least one: the 16 MiB and 64 MiB rows copy once under
// -quick.
const (
	copyBudget      = 64 << 20
	quickCopyBudget = 16 << 20
	copyMost        = 2000
)

// copyName is the row name of a copy from device from to device to.
func copyName(backend string, from, to int, size string) string {
	return fmt.Sprintf("copy/%s/%d->%d/%s", backend, from, to, size)
}

// copyNames is the copy rows' shape, for Names.
func copyNames() []string { return []string{"copy/<backend>/<src>-><dst>/{1KiB,4KiB,...,64MiB}"} }

// copyRows is the devices the copy rows run on, opened once, with two
// buffers of the largest size on each: a source and a destination (a
// copy on one device is between two buffers, not onto itself).
type copyRows struct {
	rt       *ra.Runtime
	src, dst map[int]*ra.Buffer
}

// copyDevices opens the devices of o.Devices, allocates a buffer on each,
// and returns the comparisons: one per ordered pair and size, with no
// baseline (the path column is the comparison).
func copyDevices(ctx context.Context, o Options, say func(string, ...any)) (*copyRows, []comparison, error) {
	dopts := o.Devices
	if dopts.Log == nil {
		dopts.Log = io.Discard
	}
	rt, err := ra.New(ra.Config{Devices: dopts})
	if err != nil {
		return nil, nil, fmt.Errorf("copy rows: %w", err)
	}
	cr := &copyRows{rt: rt, src: map[int]*ra.Buffer{}, dst: map[int]*ra.Buffer{}}
	reg := rt.Registry()
	devs := reg.Devices()
	note := deviceNote(reg)
	say("copy rows on %d %s devices and the CPU: %s", len(devs)-1, reg.BackendName(), reg.Note())
	largest := copySizes[len(copySizes)-1].bytes
	zeros := make([]byte, largest)
	for _, d := range devs {
		src, err := rt.AllocBuffer(ctx, d.ID, largest)
		if err == nil {
			cr.src[d.ID] = src
			cr.dst[d.ID], err = rt.AllocBuffer(ctx, d.ID, largest)
		}
		for _, b := range []*ra.Buffer{src, cr.dst[d.ID]} { // written once, so no row pays for the first touch of its pages
			if err == nil {
				err = b.Write(ctx, 0, zeros)
			}
		}
		if err != nil {
			cr.close()
			return nil, nil, fmt.Errorf("copy rows: two %d-byte buffers on device %d (%s): %w", largest, d.ID, d.Name, err)
		}
	}
	var cs []comparison
	backend := reg.BackendName()
	rounds, budget := 3, copyBudget // -quick: one round, every size (one copy of 64 MiB is a measurement)
	if o.Quick {
		rounds, budget = 1, quickCopyBudget
	}
	for _, sz := range copySizes {
		for _, from := range devs {
			for _, to := range devs {
				src, dst := cr.src[from.ID], cr.dst[to.ID]
				reps := min(max(budget/sz.bytes, 1), copyMost)
				path := ra.CopyPath(0)
				cs = append(cs, comparison{
					candidate: member{copyName(backend, from.ID, to.ID, sz.name), backend, func(ctx context.Context, n int, _ *latencies) (time.Duration, error) {
						start := time.Now()
						for range n {
							p, err := src.CopyTo(ctx, dst, 0, 0, sz.bytes)
							if err != nil {
								return 0, err
							}
							path = p
						}
						return time.Since(start), nil
					}},
					messages: reps, least: 1, bytes: sz.bytes, note: note, rounds: rounds,
					path: func() string { return path.String() },
				})
			}
		}
	}
	return cr, cs, nil
}

// close frees the buffers and closes the runtime.
func (c *copyRows) close() {
	for _, m := range []map[int]*ra.Buffer{c.src, c.dst} {
		for _, b := range m {
			b.Free()
		}
	}
	c.rt.Close()
}

// printCopy writes the copy rows among rows as one table per size: GB/s
// and path for each ordered pair.
func printCopy(w io.Writer, rows []Row) {
	type key struct{ from, to int }
	bySize := map[string]map[key]Row{}
	var sizes []string
	devs := map[int]bool{}
	note := ""
	for _, r := range rows {
		var backend, size string
		var from, to int
		if !strings.HasPrefix(r.Name, "copy/") {
			continue
		}
		parts := strings.Split(r.Name, "/")
		if len(parts) != 4 {
			continue
		}
		backend, size = parts[1], parts[3]
		if _, err := fmt.Sscanf(parts[2], "%d->%d", &from, &to); err != nil {
			continue
		}
		if bySize[size] == nil {
			bySize[size] = map[key]Row{}
			sizes = append(sizes, size)
		}
		bySize[size][key{from, to}] = r
		devs[from], devs[to] = true, true
		note = " on " + backend
		if r.Note != "" {
			note += " (" + r.Note + ")"
		}
	}
	ids := slices.Sorted(maps.Keys(devs))
	for _, size := range sizes {
		fmt.Fprintf(w, "\ncopy %s buffers: GB/s and path%s\n", size, note)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprint(tw, "from\\to")
		for _, to := range ids {
			fmt.Fprintf(tw, "\t%d", to)
		}
		fmt.Fprintln(tw)
		for _, from := range ids {
			fmt.Fprintf(tw, "%d", from)
			for _, to := range ids {
				if r, ok := bySize[size][key{from, to}]; ok {
					fmt.Fprintf(tw, "\t%s %s", gbs(r.GBPerSec), r.Path)
				} else {
					fmt.Fprint(tw, "\t")
				}
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
	}
}
