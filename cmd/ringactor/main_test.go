package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestDevices(t *testing.T) {
	t.Setenv("RINGACTOR_SIM_P2P", "0-1")
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"devices"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"no GPU to run on", "using 4 simulated devices", "sim-3", "P2P (row writes column's memory)", "  0   -  Y  .  ."} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("devices output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := run(context.Background(), []string{"devices", "-json"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Backend string
		Devices []struct {
			ID  int
			P2P []bool
		}
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc.Backend != "sim" || len(doc.Devices) != 4 || !doc.Devices[1].P2P[0] || doc.Devices[1].P2P[2] {
		t.Fatalf("json %v: %s", err, out.String())
	}
}

func TestDescribe(t *testing.T) {
	t.Setenv("RINGACTOR_SIM_P2P", "none")
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"describe", "-devices", "0,0,3"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"from x2: local (device memory on device 0)", "from sqrt: staged (portable-pinned memory on device 3)", "egress"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("describe lacks %q:\n%s", want, out.String())
		}
	}
	for _, bad := range [][]string{{"describe", "-devices", "0,1"}, {"describe", "-devices", "0,1,7"}, {"nope"}, {}} {
		if err := run(context.Background(), bad, &out, &errOut); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
