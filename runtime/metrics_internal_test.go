package runtime

import (
	"testing"

	"github.com/ringactor/ringactor/runtime/internal/meter"
)

// The Metric* names users look up are the ones internal/meter registers.
func TestMetricNamesAreMeters(t *testing.T) {
	for _, c := range [][2]string{
		{MetricDeviceUtilization, meter.DeviceUtilization}, {MetricDeviceKernels, meter.DeviceKernels},
		{MetricDeviceMemRuntime, meter.DeviceMemRuntime}, {MetricDeviceMemUsed, meter.DeviceMemUsed},
		{MetricDeviceMemTotal, meter.DeviceMemTotal}, {MetricLinkMessages, meter.LinkMessages},
		{MetricLinkBytes, meter.LinkBytes}, {MetricLinkBandwidth, meter.LinkBandwidth},
	} {
		if c[0] != c[1] {
			t.Errorf("runtime says %q, internal/meter registers %q", c[0], c[1])
		}
	}
}
