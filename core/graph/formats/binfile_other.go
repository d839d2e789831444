//go:build !unix

package formats

import (
	"io"
	"os"
	"unsafe"
)

// mapFile reads the file into 8-byte aligned memory on platforms without
// mmap; the returned function is a no-op.
func mapFile(f *os.File, size int64) ([]byte, func() error, error) {
	words := make([]uint64, (size+7)/8)
	data := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), len(words)*8)[:size]
	if _, err := f.ReadAt(data, 0); err != nil && err != io.EOF {
		return nil, nil, err
	}
	return data, func() error { return nil }, nil
}
