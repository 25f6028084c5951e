// Package devlist reads the device lists command lines give (the -devices
// flag of cmd/ringactor and examples/pipeline, and the deprecated
// ringkernel.Registry.DeviceList): "auto", one device for every stage
// ("2", "cpu"), or one per stage ("0,cpu,2"). It is a leaf below
// ringkernel: the caller passes how to name a device and chain stages
// (a Registry's Lookup and Chain) and the error a bad list wraps, so it
// imports neither ringkernel nor runtime.
package devlist
