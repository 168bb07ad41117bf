// Package examples holds sample job files (*.yaml, one per common shape) and
// a library program (library/). It has no code of its own: its test runs
// every job file through validate and checks that the README links it.
package examples
