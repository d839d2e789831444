package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// The read gate: every file strata reads at a path a user named (a
// dataset file, a config, a layer module, a checkpoint, a compilation
// cache entry) is opened by Open or read by ReadFile, so that a FIFO
// (opening it blocks until a writer comes), a device (/dev/zero streams
// without end) or a directory is refused before anything is read, and the
// file's size is known before its reader allocates.

// ErrNotRegular is wrapped by every refusal of an input that is not a
// regular file (after symbolic links): bad input, exit 2.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped when an input is larger than its reader's bound.
var ErrTooLarge = errors.New("input too large")

// NotRegularError is the refusal of an input path that is a FIFO, a
// device, a socket or a directory.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

// Kind names what the path is ("a FIFO", "a character device", ...).
func (e *NotRegularError) Kind() string { return kind(e.Mode) }

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s: is %s, not a regular file", e.Path, e.Kind())
}

func (e *NotRegularError) Unwrap() error { return ErrNotRegular }

// TooLargeError is the refusal of an input larger than its bound.
type TooLargeError struct {
	Path        string
	Size, Limit int64 // Size -1: the file grew past Limit while it was read
}

func (e *TooLargeError) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("%s: grew past the limit of %d bytes while it was read", e.Path, e.Limit)
	}
	return fmt.Sprintf("%s: %d bytes, more than the limit of %d", e.Path, e.Size, e.Limit)
}

func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

// CheckInput refuses an input whose mode (st, from os.Stat: links
// followed) is not a regular file.
func CheckInput(path string, st fs.FileInfo) error {
	if st.Mode().IsRegular() {
		return nil
	}
	return &NotRegularError{Path: path, Mode: st.Mode()}
}

// Open opens the input path for reading and returns it with its FileInfo.
// A path that is not a regular file is refused (NotRegularError) before
// it is opened; the open is non-blocking and the opened file is checked
// again, so a FIFO put in the file's place after the check cannot block
// either. A missing file's error wraps fs.ErrNotExist.
func Open(path string) (*os.File, fs.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if err := CheckInput(path, st); err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	if st, err = f.Stat(); err == nil {
		err = CheckInput(path, st)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// ReadFile reads the input path whole (see Open). A file of more than
// limit bytes is refused (TooLargeError) before anything is allocated,
// and at most limit+1 bytes are read, so a file that grows meanwhile is
// refused too.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, st, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > limit {
		return nil, &TooLargeError{Path: path, Size: st.Size(), Limit: limit}
	}
	b := make([]byte, 0, st.Size()+1)
	b, err = readAllInto(b, io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, &TooLargeError{Path: path, Size: -1, Limit: limit}
	}
	return b, nil
}

// readAllInto appends what r holds to b, as io.ReadAll does.
func readAllInto(b []byte, r io.Reader) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// DirFS is os.DirFS(dir) behind the read gate: Open opens a regular file
// as Open does (a FIFO or device under dir is refused, and the open never
// blocks) and a directory as os.DirFS does, for ReadDir; Stat and ReadDir
// are os.DirFS's. Loaders that walk a dataset directory read through it.
func DirFS(dir string) fs.FS { return gatedDir{dir: dir, fsys: os.DirFS(dir)} }

// gatedDir is DirFS's file system.
type gatedDir struct {
	dir  string
	fsys fs.FS
}

var (
	_ fs.StatFS    = gatedDir{}
	_ fs.ReadDirFS = gatedDir{}
)

// Open implements fs.FS.
func (g gatedDir) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	st, err := fs.Stat(g.fsys, name)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return g.fsys.Open(name)
	}
	f, _, err := Open(filepath.Join(g.dir, filepath.FromSlash(name)))
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Stat implements fs.StatFS.
func (g gatedDir) Stat(name string) (fs.FileInfo, error) { return fs.Stat(g.fsys, name) }

// ReadDir implements fs.ReadDirFS.
func (g gatedDir) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(g.fsys, name) }
