// Package readme holds no code: its test compiles and runs every Go
// snippet of the repository's README.md, and checks that every flag the
// README's commands name exists, so that the README works as written.
package readme
