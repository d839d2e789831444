package diskrows

import (
	"os"

	"golang.org/x/sys/unix"
)

// adviseRandom turns the kernel's readahead off for f: the tier's reads
// are random rows, and readahead would read (and count) pages no batch
// asked for. Advice only: an error changes nothing that matters.
func adviseRandom(f *os.File) { _ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_RANDOM) }

// dropPageCache evicts bytes [off, off+n) of f from the page cache
// (clean pages only; nothing is written).
func dropPageCache(f *os.File, off, n int64) error {
	return unix.Fadvise(int(f.Fd()), off, n, unix.FADV_DONTNEED)
}
