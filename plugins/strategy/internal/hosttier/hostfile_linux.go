package hosttier

import (
	"os"
	"syscall"
)

// mapAnon maps n bytes of zeroed anonymous memory outside the Go heap;
// the returned function unmaps it.
func mapAnon(n int64) ([]byte, func(), error) {
	mem, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil, nil, err
	}
	return mem, func() { syscall.Munmap(mem) }, nil
}

// punchHole deallocates n bytes at off of f, which then read as zeros.
func punchHole(f *os.File, off, n int64) error {
	const punchHole, keepSize = 0x02, 0x01 // FALLOC_FL_PUNCH_HOLE, FALLOC_FL_KEEP_SIZE
	return syscall.Fallocate(int(f.Fd()), punchHole|keepSize, off, n)
}

// zeroRange makes n bytes at off of f read as zeros while keeping their
// blocks allocated, so that the host file's reservation (made when it was
// created, safefile.CreateScratch) holds: FALLOC_FL_ZERO_RANGE, or where
// the file system lacks it, a punched hole allocated again.
func zeroRange(f *os.File, off, n int64) error {
	const zeroRange, keepSize = 0x10, 0x01 // FALLOC_FL_ZERO_RANGE, FALLOC_FL_KEEP_SIZE
	fd := int(f.Fd())
	if syscall.Fallocate(fd, zeroRange|keepSize, off, n) == nil {
		return nil
	}
	if err := punchHole(f, off, n); err != nil {
		return err
	}
	return syscall.Fallocate(fd, keepSize, off, n)
}
