// Package ringkernel is one ring kernel: a stage function looping over its
// in-links, with a control block the host commands it through.
//
// Its lifecycle is a pure state machine (Next): launched, active, idle,
// terminating, terminated, faulted, driven by activate, deactivate and
// terminate commands, with every invalid transition an error. Device code
// implements the same table; tests run it on plain memory.
package ringkernel
