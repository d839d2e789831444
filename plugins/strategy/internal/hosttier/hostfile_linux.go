package hosttier

import (
	"os"
	"syscall"
)

// punchHole deallocates n bytes at off of f, which then read as zeros.
func punchHole(f *os.File, off, n int64) error {
	const punchHole, keepSize = 0x02, 0x01 // FALLOC_FL_PUNCH_HOLE, FALLOC_FL_KEEP_SIZE
	return syscall.Fallocate(int(f.Fd()), punchHole|keepSize, off, n)
}
