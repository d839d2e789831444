//go:build linux

package safefile

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// reserve allocates size bytes of disk for f (fallocate), so that a
// scratch file that does not fit fails when it is created, not in the
// middle of a run. A file system without fallocate is checked against its
// free space instead.
func reserve(f *os.File, size int64) error {
	if size <= 0 {
		return nil
	}
	err := syscall.Fallocate(int(f.Fd()), 0, 0, size)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.ENOSPC):
		return noSpace(f, size)
	case errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS):
		if free, ok := freeBytes(f); ok && free < size {
			return noSpace(f, size)
		}
		return nil
	}
	return fmt.Errorf("reserving %d bytes: %w", size, err)
}

// noSpace is the error of a file system without room for size bytes.
func noSpace(f *os.File, size int64) error {
	if free, ok := freeBytes(f); ok {
		return fmt.Errorf("needs %d bytes, its file system has %d free: %w", size, free, ErrNoSpace)
	}
	return fmt.Errorf("needs %d bytes: %w", size, ErrNoSpace)
}

// freeBytes returns the bytes available to an unprivileged user on f's
// file system.
func freeBytes(f *os.File) (int64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Fstatfs(int(f.Fd()), &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * st.Bsize, true
}
