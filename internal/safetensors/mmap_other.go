//go:build !unix

package safetensors

import (
	"fmt"
	"io"
	"os"
)

// mapFile reads the first size bytes of f: without mmap, the file is
// copied into memory.
func mapFile(f *os.File, size int) ([]byte, func([]byte) error, error) {
	b := make([]byte, size)
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, int64(size)), b); err != nil {
		return nil, nil, fmt.Errorf("reading the file: %w", err)
	}
	return b, func([]byte) error { return nil }, nil
}
