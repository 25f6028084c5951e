// Package inmem holds the single-process tests of cluster membership: one
// node joined through protoactor's in-memory test provider (one remote per
// process, so these live in a test binary of their own).
package inmem
