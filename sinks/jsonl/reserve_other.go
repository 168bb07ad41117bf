//go:build !linux

package jsonl

import (
	"errors"
	"os"
)

// reserveBlocks reserves nothing where there is no fallocate.
func reserveBlocks(f *os.File, off, n int64) error { return errors.ErrUnsupported }
