//go:build unix

package formats

import (
	"os"
	"sync"
	"syscall"
)

// mapFile maps size bytes of f read-only and returns the mapping and a
// function that unmaps it (safe to call more than once).
func mapFile(f *os.File, size int64) ([]byte, func() error, error) {
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	var once sync.Once
	var uerr error
	return data, func() error {
		once.Do(func() { uerr = syscall.Munmap(data) })
		return uerr
	}, nil
}
