//go:build !linux

package jsonl

import (
	"errors"
	"os"
)

func reserveBlocks(f *os.File, off, n int64) error { return errors.ErrUnsupported }
