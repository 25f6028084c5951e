// Package devlist reads the device lists command lines give (the -devices
// flag of cmd/ringactor and examples/pipeline): "auto", one device for
// every stage ("2", "cpu"), or one per stage ("0,cpu,2"). It is a leaf:
// it names devices through a Resolver, which *runtime.Registry is, and
// imports no runtime.
package devlist
