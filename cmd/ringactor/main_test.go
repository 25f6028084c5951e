package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/ringactor/ringactor/cuda/cudatest"
	ra "github.com/ringactor/ringactor/runtime"
)

func TestDevices(t *testing.T) {
	t.Setenv("RINGACTOR_SIM_P2P", "0-1:nv4,2-3:pxb,*:sys")
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"devices", "-backend", "sim"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	matrix := regexp.MustCompile(`(?m)^\s+GPU0\s+GPU1\s+GPU2\s+GPU3\s+CPU\s+CPU Affinity\s+NUMA Affinity\s+P2P to\n` +
		`GPU0\s+X\s+NV4\s+SYS\s+SYS\s+PHB\s+-\s+N/A\s+1\n` +
		`GPU1\s+NV4\s+X\s+SYS\s+SYS\s+PHB\s+-\s+N/A\s+0\n` +
		`GPU2\s+SYS\s+SYS\s+X\s+PXB\s+PHB\s+-\s+N/A\s+3\n` +
		`GPU3\s+SYS\s+SYS\s+PXB\s+X\s+PHB\s+-\s+N/A\s+2\n` +
		`CPU\s+PHB\s+PHB\s+PHB\s+PHB\s+X\s+\S+\s+\S+\s+-\n`)
	cpuRow := regexp.MustCompile(`(?m)^4\s+cpu\s+cpu\s+cpu\s+host\s+[0-9.]+ GiB\s+cpu\s+[1-9][0-9]*$`)
	for _, want := range []string{"using 4 simulated devices", "sim-3", "the CPU ("} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("devices output lacks %q:\n%s", want, out.String())
		}
	}
	if !matrix.MatchString(out.String()) || !cpuRow.MatchString(out.String()) {
		t.Fatalf("devices output lacks the topology matrix or the CPU's row:\n%s", out.String())
	}
	// The legend explains the symbols the matrix uses, and no others.
	_, legend, _ := strings.Cut(out.String(), "Legend:")
	for sym, want := range map[string]bool{"X": true, "SYS": true, "PHB": true, "PXB": true, "NV#": true, "NODE": false, "PIX": false, "?": false} {
		if got := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(sym) + ` +=`).MatchString(legend); got != want {
			t.Errorf("legend explains %s: %v, want %v:\n%s", sym, got, want, legend)
		}
	}
	if !strings.Contains(legend, "CPU Affinity, NUMA Affinity =") || !strings.Contains(legend, "P2P to =") {
		t.Errorf("legend lacks the columns after the matrix:\n%s", legend)
	}
	out.Reset()
	if err := run(context.Background(), []string{"devices", "-json", "-backend", "sim"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Backend string `json:"backend"`
		Devices []struct {
			ID          int    `json:"id"`
			Kind        string `json:"kind"`
			MemoryBytes uint64 `json:"memory_bytes"`
			Cores       int    `json:"cores"`
			P2P         []bool `json:"p2p"`
			CPUs        string `json:"cpu_affinity"`
			NUMA        string `json:"numa_affinity"`
		} `json:"devices"`
		Topology [][]string `json:"topology"`
	}
	checkSnakeCase(t, out.Bytes())
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc.Devices[0].MemoryBytes != 16<<30 || doc.Backend != "sim" || len(doc.Devices) != 5 || !doc.Devices[1].P2P[0] || doc.Devices[1].P2P[2] ||
		doc.Devices[4].Kind != "cpu" || doc.Devices[4].Cores < 1 || len(doc.Topology) != 5 || doc.Topology[0][1] != "NV4" || doc.Topology[2][3] != "PXB" || doc.Topology[4][0] != "PHB" ||
		doc.Devices[0].CPUs != "" || doc.Devices[0].NUMA != "" || doc.Devices[4].CPUs != affinityOf(sysfsRoot, ra.Device{Kind: ra.KindCPU}).CPUs {
		t.Fatalf("json %v: %s", err, out.String())
	}
}

// checkSnakeCase fails t unless every key of the JSON document, at every
// depth, is lowercase snake_case, as bench -json's are (msgs_per_sec).
func checkSnakeCase(t *testing.T, doc []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatalf("%v: %s", err, doc)
	}
	snake := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	keys := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				keys[k] = true
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	for k := range keys {
		if !snake.MatchString(k) {
			t.Errorf("key %q is not snake_case", k)
		}
	}
	for _, k := range []string{"backend", "note", "devices", "topology", "id", "name", "kind", "source", "memory_bytes", "free_bytes",
		"compute_capability", "sms", "cores", "p2p", "cpu_affinity", "numa_affinity"} {
		if !keys[k] {
			t.Errorf("no key %q in %s", k, doc)
		}
	}
}

// devices -backend cuda lists the GPUs the driver reports, with memory,
// compute capability and SMs; it skips without a GPU (fails instead under
// RINGACTOR_REQUIRE_GPU=1).
func TestDevicesCUDA(t *testing.T) {
	dev := cudatest.Device(t, 0)
	name, _ := dev.Name()
	major, minor, err := dev.ComputeCapability()
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"devices", "-backend", "cuda"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^0\s+` + regexp.QuoteMeta(name) + `\s+gpu\s+cuda\s+driver\s+[0-9.]+ GiB\s+` + fmt.Sprintf("%d\\.%d", major, minor) + `\s+[1-9][0-9]*$`)
	if !strings.Contains(out.String(), "CUDA GPU(s) through") || !row.MatchString(out.String()) {
		t.Fatalf("devices -backend cuda:\n%s", out.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"devices", "-backend", "auto"}, &out, &errOut); err != nil || !strings.Contains(out.String(), "CUDA GPU(s)") {
		t.Fatalf("auto on a GPU machine: %v\n%s", err, out.String())
	}
}

func TestDescribe(t *testing.T) {
	t.Setenv("RINGACTOR_SIM_P2P", "none")
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"describe", "-devices", "0,0,3", "-backend", "sim"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"from x2: local (device memory on device 0)", "from sqrt: staged (portable-pinned memory on device 3)", "egress"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("describe lacks %q:\n%s", want, out.String())
		}
	}
	for _, bad := range [][]string{{"describe", "-devices", "0,1"}, {"describe", "-devices", "0,1,7", "-backend", "sim"}, {"nope"}, {}} {
		if err := run(context.Background(), bad, &out, &errOut); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestBenchJSON(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"bench", "-quick", "-json", "-only", "link/", "-scale", "0.001"}, &out, &errOut); err != nil {
		t.Fatal(err, errOut.String())
	}
	var rows []map[string]any
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4: %s", len(rows), out.String())
	}
	keys := []string{"name", "backend", "msgs_per_sec", "p50_ns", "p99_ns", "baseline", "ratio"}
	for _, r := range rows {
		if len(r) != len(keys) {
			t.Errorf("row has keys %v, want exactly %v", r, keys)
		}
		for _, k := range keys {
			if _, ok := r[k]; !ok {
				t.Errorf("row %v lacks %q", r, k)
			}
		}
	}
	if rows[0]["name"] != "link/64B-single" || rows[0]["baseline"] != "channel/64B-single" || rows[0]["ratio"].(float64) <= 0 {
		t.Errorf("first row %v", rows[0])
	}
	if !strings.Contains(errOut.String(), "bench: [1/2] link/64B-single") || !strings.Contains(errOut.String(), ", eta ") {
		t.Errorf("no progress line, or none with the time left, on stderr: %q", errOut.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"bench", "-only", "link/64B-s", "-scale", "0.001", "-quiet"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "channel/64B-single") || !strings.Contains(out.String(), "ratio") {
		t.Errorf("table: %s", out.String())
	}
	for _, bad := range [][]string{{"bench", "-scale", "0"}, {"bench", "-only", "nope"}, {"bench", "extra"}} {
		if err := run(context.Background(), bad, &out, &errOut); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

// bench -json has the limit rows, and the pipeline rows say what share
// of limit/3-stage-compute they reach (of_limit).
func TestBenchJSONLimit(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"bench", "-quick", "-json", "-only", "pipeline/", "-scale", "0.001"}, &out, &errOut); err != nil {
		t.Fatal(err, errOut.String())
	}
	var rows []map[string]any
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	rate := map[string]float64{}
	for _, r := range rows {
		rate[r["name"].(string)] = r["msgs_per_sec"].(float64)
	}
	lim, ok := rate["limit/3-stage-compute"]
	if _, mok := rate["limit/memcpy-64B"]; !ok || !mok || lim <= 0 {
		t.Fatalf("no limit rows: %s", out.String())
	}
	for _, r := range rows {
		name := r["name"].(string)
		if strings.HasPrefix(name, "limit/") {
			continue
		}
		of, ok := r["of_limit"].(float64)
		if !ok || r["limit"] != "limit/3-stage-compute" {
			t.Errorf("row %s: limit %v, of_limit %v; want limit/3-stage-compute and a share", name, r["limit"], r["of_limit"])
			continue
		}
		if d := of - rate[name]/lim; d > 1e-9 || d < -1e-9 {
			t.Errorf("row %s: of_limit %g, want %g", name, of, rate[name]/lim)
		}
	}
}

// top -once prints one frame of the demo workload: every device (the CPU
// too), the links in use and the three stages, then the demo's account.
func TestTopOnce(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"top", "-backend", "sim", "-devices", "0,cpu,2", "-once", "-interval", "200ms"}, &out, &errOut); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	s := out.String()
	for _, re := range []string{
		`(?m)^\s+device\s+name\s+kind\s+util\s+sampled\s+kernels\s+runtime mem\s+used\s+total$`,
		`(?m)^\s+0\s+sim-0\s+gpu\s+[0-9.]+%\s+-\s+1\s+`, // sim samples no utilization of its own
		`(?m)^\s+4\s+cpu\s+cpu\s+[0-9.]+%\s+-\s+1\s+`,
		`(?m)^\s+2\s+ingress\s+2\s+[1-9][0-9]*\s+[1-9][0-9]*\s+`,
		`(?m)^\s+demo\s+sqrt\s+4\s+[1-9][0-9]*\s+[1-9][0-9]*\s+\d+\s+[0-9.]+%$`,
		`demo: sent (\d+), delivered (\d+), dead-lettered 0, in flight 0`,
	} {
		if !regexp.MustCompile(re).MatchString(s) {
			t.Fatalf("top -once output lacks %s:\n%s", re, s)
		}
	}
	if m := regexp.MustCompile(`sent (\d+), delivered (\d+)`).FindStringSubmatch(s); m[1] != m[2] {
		t.Fatalf("the demo lost messages: %s", m[0])
	}
	if strings.Contains(s, "\x1b[") {
		t.Fatal("-once output redraws the screen")
	}
}

// top without -once redraws until -duration ends, then stops by itself.
func TestTopDuration(t *testing.T) {
	// -duration counts from the first frame, not from setup: 1ns is
	// shorter than any setup (it used to end Build with "context deadline
	// exceeded") and still shows a frame, however slow the machine.
	for _, d := range []string{"400ms", "1ns"} {
		var out, errOut bytes.Buffer
		if err := run(context.Background(), []string{"top", "-backend", "sim", "-devices", "1", "-interval", "50ms", "-duration", d}, &out, &errOut); err != nil {
			t.Fatalf("-duration %s: %v\n%s", d, err, errOut.String())
		}
		if n := strings.Count(out.String(), "ringactor top:"); n < 1 || !strings.Contains(out.String(), "dead-lettered 0, in flight 0") {
			t.Fatalf("-duration %s: %d frames; output:\n%s", d, n, out.String())
		}
	}
	var out, errOut bytes.Buffer
	for _, bad := range [][]string{{"top", "-interval", "0s"}, {"top", "-duration", "-1s"}, {"top", "-backend", "sim", "-devices", "0,9,1", "-once"}} {
		if err := run(context.Background(), bad, &out, &errOut); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// TestBenchCopyJSON is issue 37's check: `ringactor bench -quick -only
// copy/ -json` has a row for every ordered pair of the devices (two
// simulated GPUs and the CPU here) and every size, 1 KiB to 64 MiB, each
// with GB/s and the path its copies took.
func TestBenchCopyJSON(t *testing.T) {
	t.Setenv("RINGACTOR_SIM_DEVICES", "2")
	t.Setenv("RINGACTOR_SIM_P2P", "none")
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"bench", "-quick", "-only", "copy/", "-json", "-backend", "sim", "-scale", "0.0001"}, &out, &errOut); err != nil {
		t.Fatal(err, errOut.String())
	}
	var rows []struct {
		Name     string  `json:"name"`
		Bytes    int     `json:"message_bytes"`
		GBPerSec float64 `json:"gb_per_sec"`
		Path     string  `json:"path"`
		Note     string  `json:"note"`
	}
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	seen := map[string]bool{}
	for _, r := range rows {
		seen[r.Name] = true
		if r.GBPerSec <= 0 || r.Bytes == 0 || r.Path == "" || !strings.Contains(r.Note, "simulated") {
			t.Errorf("row %+v: want GB/s, the size, the path and the sim note", r)
		}
	}
	sizes := []string{"1KiB", "4KiB", "16KiB", "64KiB", "256KiB", "1MiB", "4MiB", "16MiB", "64MiB"}
	for from := range 3 {
		for to := range 3 {
			for _, size := range sizes {
				if name := fmt.Sprintf("copy/sim/%d->%d/%s", from, to, size); !seen[name] {
					t.Errorf("no row %s", name)
				}
			}
		}
	}
	if len(rows) != 9*len(sizes) {
		t.Errorf("%d rows, want %d", len(rows), 9*len(sizes))
	}
}

// TestBenchP2PJSON is the issue's check: `ringactor bench -quick -only
// p2p/ -json` prints rows for every ordered pair of devices.
func TestBenchP2PJSON(t *testing.T) {
	t.Setenv("RINGACTOR_SIM_DEVICES", "3")
	t.Setenv("RINGACTOR_SIM_P2P", "0-1:nv4,*:sys")
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"bench", "-quick", "-only", "p2p/", "-json", "-backend", "sim", "-scale", "0.0001"}, &out, &errOut); err != nil {
		t.Fatal(err, errOut.String())
	}
	var rows []struct {
		Name     string  `json:"name"`
		Baseline string  `json:"baseline"`
		Ratio    float64 `json:"ratio"`
		Bytes    int     `json:"message_bytes"`
		GBPerSec float64 `json:"gb_per_sec"`
		Note     string  `json:"note"`
	}
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	pairs := map[string]int{}
	for _, r := range rows {
		var from, to int
		if _, err := fmt.Sscanf(r.Name, "p2p/%d-%d/", &from, &to); err != nil || r.GBPerSec <= 0 || r.Bytes == 0 || r.Note == "" {
			t.Errorf("row %+v: want a p2p/<from>-<to>/ name, GB/s, the message size and the sim note", r)
		}
		pairs[fmt.Sprintf("%d-%d", from, to)]++
		if strings.HasSuffix(r.Name, "/peer") && (r.Baseline != strings.TrimSuffix(r.Name, "peer")+"staged" || r.Ratio <= 0) {
			t.Errorf("peer row %+v: want the staged row as its baseline", r)
		}
	}
	for from := range 3 {
		for to := range 3 {
			want := 3 // staged at 3 sizes
			if from == to || from+to == 1 {
				want = 6 // and peer
			}
			if got := pairs[fmt.Sprintf("%d-%d", from, to)]; got != want {
				t.Errorf("pair %d-%d: %d rows, want %d", from, to, got, want)
			}
		}
	}
}
