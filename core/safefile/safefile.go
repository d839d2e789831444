// Package safefile writes output files safely: only regular files, never
// an input of the same run (compared by device and inode), atomically
// (a temporary file in the same directory, fsynced, renamed over the
// target, then the directory fsynced), and under an exclusive lock whose
// holder (pid) is named when another process has it. Lock files are never
// followed through a symbolic link, and only what this package created is
// removed (lock.go); temporary files carry the writer's pid, so those of a
// killed writer are recognised and removed (temp.go); scratch files are
// created exclusively and removed only while their path still names them
// (scratch.go); a new output directory is filled under a temporary name
// carrying the pid and renamed to its path only if nothing is there
// (dir.go).
//
// Every strata writer (convert, output.csv, experiment results) goes
// through this package, so a crash or a full disk never leaves a partial
// file where a complete one is expected.
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

// ErrUnsafe is wrapped by every refusal of an output path (a device, a
// FIFO, a directory, or the same file as an input): bad input, exit 2.
var ErrUnsafe = errors.New("unsafe output path")

// ErrLocked is wrapped when another process holds an output's lock.
var ErrLocked = errors.New("output is locked")

// ErrNoSpace marks a file that does not fit on its file system.
var ErrNoSpace = errors.New("no room on the file system")

// CheckOutput refuses an output path that exists and is not a regular
// file, or that is the same file (device and inode, through links) as one
// of inputs. Inputs that do not exist are ignored.
func CheckOutput(path string, inputs ...string) error {
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return checkParent(path)
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s: output is %s; give the path of a regular file to write: %w", path, kind(st.Mode()), ErrUnsafe)
	}
	if in := sameAsInput(path, inputs); in != "" {
		return fmt.Errorf("%s: output is the same file as the input %s; writing it would destroy the input: choose another output path: %w", path, in, ErrUnsafe)
	}
	return nil
}

// checkParent checks that the directory an output would be created in
// exists and is a directory.
func checkParent(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s: the output's directory %s does not exist: create it first: %w", path, dir, ErrUnsafe)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s: %s is not a directory: %w", path, dir, ErrUnsafe)
	}
	return nil
}

// kind names a non-regular file mode.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file"
}

// File is an output being written: a temporary file next to the target
// that Commit renames over it. Until then the target is untouched.
type File struct {
	f      *os.File
	target string
	done   bool
}

// Create starts writing path (after CheckOutput on path and inputs): the
// data goes to a temporary file in the same directory.
func Create(path string, inputs ...string) (*File, error) {
	if err := CheckOutput(path, inputs...); err != nil {
		return nil, err
	}
	f, err := createTemp(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &File{f: f, target: path}, nil
}

// Write writes to the temporary file.
func (w *File) Write(p []byte) (int, error) { return w.f.Write(p) }

// Name returns the target path.
func (w *File) Name() string { return w.target }

// Commit syncs the temporary file, renames it over the target and syncs
// the directory. On any error the temporary file is removed and the
// target is left as it was.
func (w *File) Commit() error {
	if w.done {
		return fmt.Errorf("%s: already committed or aborted", w.target)
	}
	w.done = true
	tmp := w.f.Name()
	err := w.f.Chmod(0o644)
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, w.target)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("%s: %w", w.target, err)
	}
	return SyncDir(filepath.Dir(w.target))
}

// Abort removes the temporary file; the target is untouched. Abort after
// Commit does nothing, so `defer f.Abort()` is safe.
func (w *File) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.f.Close()
	os.Remove(w.f.Name())
}

// WriteFile writes data to path atomically (see Create and Commit).
func WriteFile(path string, data []byte, inputs ...string) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}, inputs...)
}

// Write writes path atomically with fill: the target is replaced only
// when fill and the sync succeed.
func Write(path string, fill func(w io.Writer) error, inputs ...string) error {
	f, err := Create(path, inputs...)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := fill(f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Commit()
}

// SyncDir fsyncs a directory, making a rename in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) { // some file systems cannot sync directories
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
