//go:build !linux

package tables

// hugePages does nothing here: huge pages are asked for on Linux only.
func hugePages([]byte) {}
