package main

import (
	"regexp"
	"strings"
	"testing"

	ra "github.com/ringactor/ringactor/runtime"
)

// A device's row shows its utilization (its kernels' busy share) and,
// beside it in its own column, the backend sampler's figure labelled with
// its source; "-" where there is none.
func TestFrameShowsSampledUtilizationBeside(t *testing.T) {
	rt, err := ra.New(ra.Config{Devices: ra.DeviceOptions{Backend: "sim"}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	m := ra.Metrics{Devices: []ra.DeviceMetrics{
		{Device: 0, Name: "gpu-0", Kind: "gpu", Utilization: 0.125, UtilizationFrom: "kernels", SampledUtilization: 0.97, SampledFrom: "nvml"},
		{Device: 1, Name: "cpu", Kind: "cpu", Utilization: 0.5, UtilizationFrom: "kernels", SampledUtilization: -1},
	}}
	text := strings.Join(frameLines(rt, m, 200), "\n")
	for _, re := range []string{`(?m)^\s+device\s+name\s+kind\s+util\s+sampled\s+kernels`, `(?m)^\s+0\s+gpu-0\s+gpu\s+12\.5%\s+97\.0% nvml\s+0`, `(?m)^\s+1\s+cpu\s+cpu\s+50\.0%\s+-\s+0`} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("no %s in\n%s", re, text)
		}
	}
}
