package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	ra "github.com/ringactor/ringactor/runtime"
)

// plainWidth is the width of top's frames when its output is no terminal
// (a pipe, a file) and $COLUMNS does not say one: wide, as `top -b`.
const plainWidth = 120

// outputWidth is the width of frames for a non-terminal: $COLUMNS when it
// is a positive number, else plainWidth.
func outputWidth() int {
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return plainWidth
}

// frameLines is one snapshot as lines no wider than width: a row per
// device, a row per link kind in use, a row per stage. A table too wide
// drops its least useful columns first, and any line still too wide is
// cut.
func frameLines(rt *ra.Runtime, m ra.Metrics, width int) []string {
	lines := []string{fmt.Sprintf("ringactor top: %s backend, %s, over %v", rt.Registry().BackendName(), m.At.Format("15:04:05"), m.Interval.Round(time.Millisecond)), ""}
	// util is the device's (its kernels' busy share where their loops
	// count it); sampled the backend's own figure beside it, labelled with
	// its source (NVML's counts a spinning ring kernel as busy).
	dev := table{head: []string{"device", "name", "kind", "util", "sampled", "kernels", "runtime mem", "used", "total"}, drop: []int{4, 6, 5, 2, 8, 1}}
	for _, d := range m.Devices {
		util, sampled := "-", "-"
		if d.Utilization >= 0 {
			util = fmt.Sprintf("%.1f%%", 100*d.Utilization)
		}
		if d.SampledUtilization >= 0 {
			sampled = fmt.Sprintf("%.1f%% %s", 100*d.SampledUtilization, d.SampledFrom)
		}
		dev.rows = append(dev.rows, []string{strconv.Itoa(d.Device), d.Name, d.Kind, util, sampled, strconv.Itoa(d.Kernels), size(d.RuntimeBytes), size(d.UsedBytes), size(d.TotalBytes)})
	}
	links := table{head: []string{"device", "link kind", "links", "messages", "msg/s", "MB/s"}, drop: []int{2, 3, 5}}
	for _, d := range m.Devices {
		for _, l := range d.Links {
			links.rows = append(links.rows, []string{strconv.Itoa(d.Device), l.Kind, strconv.Itoa(l.Links), strconv.FormatUint(l.Messages, 10), fmt.Sprintf("%.0f", l.MessagesPerSecond), fmt.Sprintf("%.2f", l.BytesPerSecond/1e6)})
		}
	}
	stages := table{head: []string{"pipeline", "stage", "device", "processed", "msg/s", "queued", "busy"}, drop: []int{0, 3, 5, 2}}
	for _, s := range m.Stages {
		busy := "-"
		if s.Busy >= 0 {
			busy = fmt.Sprintf("%.1f%%", 100*s.Busy)
		}
		stages.rows = append(stages.rows, []string{s.Pipeline, s.Stage, strconv.Itoa(s.Device), strconv.FormatUint(s.Processed, 10), fmt.Sprintf("%.0f", s.Rate), strconv.FormatUint(s.Queued, 10), busy})
	}
	lines = append(lines, dev.lines(width)...)
	lines = append(lines, "")
	lines = append(lines, links.lines(width)...)
	lines = append(lines, "")
	lines = append(lines, stages.lines(width)...)
	for i, l := range lines {
		lines[i] = cut(l, width)
	}
	return lines
}

// table is one of a frame's tables: every cell right-aligned in its
// column, two spaces before each (as text/tabwriter's AlignRight).
type table struct {
	head []string
	rows [][]string
	drop []int // the columns to leave out, in this order, while the table is wider than the screen
}

// lines renders t, leaving out columns (t.drop's order) until it fits
// width, if it can.
func (t table) lines(width int) []string {
	widths := make([]int, len(t.head))
	for i, h := range t.head {
		widths[i] = utf8.RuneCountInString(h)
		for _, r := range t.rows {
			widths[i] = max(widths[i], utf8.RuneCountInString(r[i]))
		}
	}
	shown := make([]bool, len(t.head))
	total := 0
	for i, w := range widths {
		shown[i] = true
		total += w + 2
	}
	for _, c := range t.drop {
		if total <= width {
			break
		}
		shown[c] = false
		total -= widths[c] + 2
	}
	line := func(cells []string) string {
		var b strings.Builder
		for i, c := range cells {
			if shown[i] {
				b.WriteString(strings.Repeat(" ", widths[i]+2-utf8.RuneCountInString(c)))
				b.WriteString(c)
			}
		}
		return b.String()
	}
	out := []string{line(t.head)}
	for _, r := range t.rows {
		out = append(out, line(r))
	}
	return out
}

// cut shortens s to width characters.
func cut(s string, width int) string {
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return string(r[:max(width, 0)])
}

// size says a byte count in the unit that suits it.
func size(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
