//go:build unix

package cpu

import "syscall"

// mapRegion maps n bytes of anonymous, zero-filled memory outside the Go
// heap.
func mapRegion(n int64) ([]byte, error) {
	return syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
}

// unmapRegion gives a region from mapRegion back to the system.
func unmapRegion(r []byte) error { return syscall.Munmap(r) }
