package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ringactor/ringactor/cuda/cudatest"
	"github.com/ringactor/ringactor/internal/nodeproc"
	"github.com/ringactor/ringactor/internal/racecheck"
)

// The main job runs end to end on simulated devices, verifies every result
// and prints the stage table.
func TestMainJob(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	err := run(ctx, []string{"-backend", "sim", "-messages", "5000", "-payload", "8", "-sample", "0.1", "-quiet"}, &out, &errOut)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out.String(), errOut.String())
	}
	for _, want := range []string{"pipeline \"guide\" (number ", ") on sim backend, 3 stages", "wait p99", "service p50", "verified 5000 results against the Go reference: 0 mismatches",
		"delivered 5000, dead-lettered 0"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
	for _, stage := range []string{"x2", "sqrt", "plus1"} {
		if !strings.Contains(out.String(), stage) {
			t.Fatalf("no row for stage %s", stage)
		}
	}
}

// -devices 0,cpu,2 puts the middle stage on the CPU beside two GPUs; every
// result is still verified, and Describe shows the CPU's links.
func TestMainJobOnTheCPU(t *testing.T) {
	for _, c := range []struct{ backend, devices string }{{"sim", "0,cpu,2"}, {"cuda", "0,cpu,0"}} {
		t.Run(c.backend, func(t *testing.T) {
			if c.backend == "cuda" {
				cudatest.Device(t, 0)
			}
			var out, errOut bytes.Buffer
			err := run(context.Background(), []string{"-backend", c.backend, "-devices", c.devices, "-messages", "5000", "-payload", "8", "-quiet"}, &out, &errOut)
			if err != nil {
				t.Fatalf("%v\n%s\n%s", err, out.String(), errOut.String())
			}
			for _, want := range []string{"(cpu), stateless", "from x2: egress (mapped-pinned memory on device 0) over PHB",
				"verified 5000 results against the Go reference: 0 mismatches", "delivered 5000, dead-lettered 0"} {
				if !strings.Contains(out.String(), want) {
					t.Fatalf("output lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}

func TestMainJobTraceStdout(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"-backend", "sim", "-messages", "20", "-sample", "1", "-trace", "stdout", "-quiet", "-devices", "3"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), `"Name":"process guide/`); n != 60 {
		t.Fatalf("%d stage spans exported for 20 messages through 3 stages", n)
	}
}

// -metrics stdout prints the runtime's metrics at exit, -pprof serves
// pprof meanwhile (on a port of its own choosing).
func TestMainJobMetricsStdout(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"-backend", "sim", "-messages", "20", "-sample", "1", "-quiet", "-metrics", "stdout", "-pprof", "127.0.0.1:0"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"Name":"ringactor.stage.service_time"`, `"Name":"ringactor.pipeline.sent"`, `"Name":"ringactor.link.messages"`, `"Unit":"{message}"`} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %s:\n%s", want, out.String())
		}
	}
}

func TestFlagsRefused(t *testing.T) {
	for _, args := range [][]string{{"-devices", "0,1"}, {"-devices", "a,b,c"}, {"-messages", "0"}, {"-payload", "100"},
		{"-sample", "2"}, {"-trace", "jaeger"}, {"-metrics", "graphite"}, {"-backend", "opencl", "-messages", "1"}, {"-devices", "0,1,9", "-backend", "sim"}, {"-devices", "0,gpu,1"}} {
		var out, errOut bytes.Buffer
		if err := run(context.Background(), args, &out, &errOut); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// -devices with an id that is no device names that id and the ids there
// are, rather than the length of the list; a list of known ids of the
// wrong length is still refused for its length.
func TestDevicesUnknownID(t *testing.T) {
	t.Setenv("RINGACTOR_SIM_DEVICES", "4") // GPUs 0..3, the CPU 4
	for _, c := range []struct {
		devices    string
		want, lack []string
	}{
		{"0,7", []string{"-devices: ", "no such device 7: GPUs are 0..3 and the CPU is 4", "RINGACTOR_SIM_DEVICES"}, []string{"names 2 devices", "give three"}},
		{"7,0,1", []string{"no such device 7: GPUs are 0..3 and the CPU is 4"}, nil},
		{"0,1", []string{`"0,1" names 2 devices; give one per stage (3), one for all, or auto`}, []string{"no such device 7"}},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), []string{"-backend", "sim", "-devices", c.devices, "-messages", "1", "-quiet"}, &out, &errOut)
		if err == nil {
			t.Fatalf("-devices %s accepted", c.devices)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("-devices %s: %q lacks %q", c.devices, err, w)
			}
		}
		for _, l := range c.lack {
			if strings.Contains(err.Error(), l) {
				t.Errorf("-devices %s: %q says %q", c.devices, err, l)
			}
		}
	}
}

// TestMain lets this test binary be the stage-2 node of -remote-stage2.
func TestMain(m *testing.M) {
	nodeproc.Main()
	os.Exit(cudatest.CheckRules(m.Run()))
}

// With -remote-stage2 the middle stage runs in a second process, and every
// result is still checked against the Go reference.
func TestMainJobRemoteStage2(t *testing.T) {
	if racecheck.Enabled {
		t.Skip(racecheck.Reason)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	err := run(ctx, []string{"-backend", "sim", "-messages", "5000", "-payload", "8", "-quiet", "-remote-stage2"}, &out, &errOut)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out.String(), errOut.String())
	}
	sqrt := regexp.MustCompile(`(?m)^ +sqrt +\d+@stage2 +5000 +50 `) // the remote stage's row, from its node's report
	if !sqrt.MatchString(out.String()) {
		t.Errorf("the latency table lacks the remote stage's row (sqrt on node stage2, 5000 messages, 50 sampled):\n%s", out.String())
	}
	for _, want := range []string{`segment 1 on node "stage2" via protoactor remote`, "verified 5000 results against the Go reference: 0 mismatches",
		"delivered 5000, dead-lettered 0"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// -trace-file writes the sampled spans and checks them: every stage span
// lies within its message's span.
func TestMainJobTraceFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spans.json")
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"-backend", "sim", "-messages", "300", "-sample", "0.1", "-quiet", "-trace-file", path}, &out, &errOut); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "span check ("+path+"): PASS: 90 stage spans of 30 messages") {
		t.Fatalf("output lacks the span check:\n%s", out.String())
	}
}

// The main job on GPU 0 with every span checked; it skips without a GPU
// (fails instead under RINGACTOR_REQUIRE_GPU=1).
func TestMainJobCUDA(t *testing.T) {
	cudatest.Device(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "spans.json")
	var out, errOut bytes.Buffer
	err := run(ctx, []string{"-backend", "cuda", "-devices", "0,0,0", "-messages", "20000", "-payload", "8", "-sample", "0.05", "-quiet", "-trace-file", path}, &out, &errOut)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out.String(), errOut.String())
	}
	for _, want := range []string{`pipeline "guide" (number `, `) on cuda backend, 3 stages`, "verified 20000 results against the Go reference: 0 mismatches", "PASS"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestCheckSpans(t *testing.T) {
	at := func(us int) string { return time.Unix(1700000000, int64(us)*1000).UTC().Format(time.RFC3339Nano) }
	span := func(name, id, parent string, start, end int) string {
		return `{"Name":"` + name + `","SpanContext":{"TraceID":"t1","SpanID":"` + id + `"},"Parent":{"TraceID":"t1","SpanID":"` + parent +
			`"},"StartTime":"` + at(start) + `","EndTime":"` + at(end) + `"}` + "\n"
	}
	good := span("send p", "r", "", 0, 100) + span("process p/a", "a", "r", 0, 40) + span("process p/b", "b", "r", 40, 100)
	if c, err := checkSpans(strings.NewReader(good)); err != nil || c.Roots != 1 || c.Stages != 2 {
		t.Fatalf("good spans: %+v %v", c, err)
	}
	for name, bad := range map[string]string{
		"late":    span("send p", "r", "", 0, 100) + span("process p/b", "b", "r", 40, 101),
		"early":   span("send p", "r", "", 10, 100) + span("process p/a", "a", "r", 9, 50),
		"orphan":  span("send p", "r", "", 0, 100) + span("process p/a", "a", "x", 0, 50),
		"no root": span("process p/a", "a", "r", 0, 50),
		"garbage": "{not json",
	} {
		if c, err := checkSpans(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: passed: %+v", name, c)
		}
	}
}
