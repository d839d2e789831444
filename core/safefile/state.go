package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular is wrapped when a file to read is a FIFO, a device, a
// socket or a directory: bad input, exit 2.
var ErrNotRegular = errors.New("not a regular file")

// OpenRegularFile opens path for reading when it is a regular file, and
// returns it with its file info. A special file is refused before it is
// opened (opening a FIFO blocks until a writer comes; a device streams
// without end), and the opened file is checked again, since path may be
// replaced in between: the open itself does not block (O_NONBLOCK, which
// changes nothing for a regular file). Errors of a missing file wrap
// fs.ErrNotExist.
func OpenRegularFile(path string) (*os.File, fs.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s is %s, not a regular file: %w", path, kind(st.Mode()), ErrNotRegular)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	fst, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if !fst.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s is %s, not a regular file: %w", path, kind(fst.Mode()), ErrNotRegular)
	}
	return f, fst, nil
}
