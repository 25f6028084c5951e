// Package directory is a runtime's names: the pipelines it holds by name
// (claimed while one is built, listed once built, given back when it
// closes) and the roles its users have claimed (runtime/cluster's node).
// Pure: a mutex and two maps, no actors, no kernels.
package directory
