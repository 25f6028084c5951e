package cuda

import (
	"errors"
	"fmt"
)

// Device is one GPU as the driver numbers it. Device queries need no
// context.
type Device struct {
	d       *Driver
	ordinal int
	handle  int // CUdevice
}

var errNilDevice = errors.New("cuda: nil *Device (use Driver.Device)")

// DeviceCount is the number of devices the driver sees (after
// CUDA_VISIBLE_DEVICES).
func (d *Driver) DeviceCount() (int, error) {
	if d == nil {
		return 0, errNilDriver
	}
	n, r := d.deviceCount()
	if err := d.err("cuDeviceGetCount", r); err != nil {
		return 0, err
	}
	return n, nil
}

// Device returns the device with the given ordinal, or an error saying
// which ordinals exist.
func (d *Driver) Device(ordinal int) (*Device, error) {
	n, err := d.DeviceCount()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("cuda: no device %d: the driver (%s) sees no devices (check nvidia-smi and CUDA_VISIBLE_DEVICES)", ordinal, d.path)
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("cuda: no device %d: the driver sees %d device(s), ordinals 0 to %d", ordinal, n, n-1)
	}
	h, r := d.deviceGet(ordinal)
	if err := d.err("cuDeviceGet", r); err != nil {
		return nil, err
	}
	return &Device{d: d, ordinal: ordinal, handle: h}, nil
}

// Ordinal is the device's number, as passed to Driver.Device.
func (v *Device) Ordinal() int {
	if v == nil {
		return -1
	}
	return v.ordinal
}

// Name is the device's product name, such as "NVIDIA H100 80GB HBM3".
func (v *Device) Name() (string, error) {
	if v == nil {
		return "", errNilDevice
	}
	s, r := v.d.deviceName(v.handle)
	if err := v.d.err("cuDeviceGetName", r); err != nil {
		return "", err
	}
	return s, nil
}

// Attribute reads one device attribute.
func (v *Device) Attribute(a Attribute) (int, error) {
	if v == nil {
		return 0, errNilDevice
	}
	n, r := v.d.deviceAttribute(int(a), v.handle)
	if err := v.d.err(fmt.Sprintf("cuDeviceGetAttribute(%d)", int(a)), r); err != nil {
		return 0, err
	}
	return n, nil
}

// TotalMemory is the device's memory in bytes.
func (v *Device) TotalMemory() (uint64, error) {
	if v == nil {
		return 0, errNilDevice
	}
	n, r := v.d.deviceTotalMem(v.handle)
	if err := v.d.err("cuDeviceTotalMem_v2", r); err != nil {
		return 0, err
	}
	return n, nil
}

// ComputeCapability is the device's compute capability, such as 9, 0 for
// sm_90.
func (v *Device) ComputeCapability() (major, minor int, err error) {
	if major, err = v.Attribute(AttrComputeCapabilityMajor); err != nil {
		return 0, 0, err
	}
	if minor, err = v.Attribute(AttrComputeCapabilityMinor); err != nil {
		return 0, 0, err
	}
	return major, minor, nil
}

// PrimaryContext retains the device's primary context, the one the CUDA
// runtime shares. Release it with Context.Release.
func (v *Device) PrimaryContext() (*Context, error) {
	if v == nil {
		return nil, errNilDevice
	}
	h, r := v.d.primaryCtxRetain(v.handle)
	if err := v.d.err("cuDevicePrimaryCtxRetain", r); err != nil {
		return nil, err
	}
	v.d.mu.Lock()
	if v.d.retains == nil {
		v.d.retains = map[int]int{}
	}
	v.d.retains[v.handle]++
	v.d.mu.Unlock()
	return &Context{dev: v, handle: h}, nil
}
