// Package extid names what package runtime and runtime/internal/ext must
// agree on without importing each other: the id under which runtime
// registers its extension on a protoactor actor system (ID), and the roles
// a sub-package may claim of a runtime (Role). It imports nothing of
// ours, so runtime can import it, and ext, which imports runtime, too.
package extid
