// Package msgtype is what a message's type is and how its value travels
// as bytes: the process's registry of message types (an id per Go type,
// and back) and each type's codec. It is pure: no actors, no telemetry,
// no kernels launched; package runtime exports it as MessageType,
// RegisterType, TypeOf, Types, As, Result.Value and GoStage.
//
// Every message carries a 32-bit type id in its slot header; a Go type
// registered under an id travels as:
//   - its raw little-endian bytes, when it is a fixed-layout struct
//     (kernels.LayoutOf: numbers and arrays of them, no pointers,
//     slices, strings or maps): written straight into the slot, and read
//     by a device stage as the C struct kernels.Layout.C gives;
//   - msgpack otherwise, for stages that run in Go.
//
// Two types are built in, registered in init: []float32 (id 0,
// kernels.TypeFloats) and kernels.Keyed (id 1). The registry is the
// process's, like encoding/gob's, and safe for concurrent use. See
// docs/ARCHITECTURE.md §11.
package msgtype
