//go:build unix

package strategy

import (
	"os"
	"syscall"
)

// mapHostFile creates (or truncates) path to size bytes and maps it
// read-write and shared, so the kernel pages the host tier to the file.
// The returned function unmaps it and removes the file.
func mapHostFile(path string, size int64) ([]byte, func() error, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		os.Remove(path)
		return nil, nil, err
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		os.Remove(path)
		return nil, nil, err
	}
	return data, func() error {
		err := syscall.Munmap(data)
		if rerr := os.Remove(path); err == nil {
			err = rerr
		}
		return err
	}, nil
}
