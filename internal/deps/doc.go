// Package deps holds the import-rule test that keeps the dependency arrows
// of docs/ARCHITECTURE.md §1 honest, as Go's own go/build deps test does
// for the standard library. It has no code of its own.
package deps
