package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Scratch is a scratch file that strata creates itself for one run (such
// as chunked.host_file): a new file, created exclusively, locked, and
// removed by Remove only while its path still names it.
type Scratch struct {
	f    *os.File
	path string
	lock *Lock
}

// CheckScratch refuses a scratch file's path that exists: whatever is
// there (a regular file, the run's config or dataset, a symbolic link, a
// device, a FIFO) is not strata's to overwrite or delete. A path in use
// by a running strata is refused with ErrLocked naming its pid; any other
// existing path with ErrUnsafe. The directory must exist.
func CheckScratch(path string, inputs ...string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return checkParent(path)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if holder := heldBy(path); holder != "" {
		return fmt.Errorf("%s is the scratch file of a running strata, %s (lock %s): wait for it to finish or give another path: %w", path, holder, LockPath(path), ErrLocked)
	}
	what := kind(st.Mode())
	if st.Mode().IsRegular() {
		what = "a file"
	}
	if in := sameAsInput(path, inputs); in != "" {
		what = "the input " + in + " of this run"
	}
	return fmt.Errorf("%s exists (%s); strata creates this scratch file itself and deletes it when the run ends, so it never writes over or deletes an existing file: give a path that does not exist (if a killed run left it behind, delete it): %w", path, what, ErrUnsafe)
}

// sameAsInput returns the input that path names (device and inode,
// through links), or "".
func sameAsInput(path string, inputs []string) string {
	st, err := os.Stat(path)
	if err != nil {
		return ""
	}
	for _, in := range inputs {
		if ist, err := os.Stat(in); in != "" && err == nil && os.SameFile(st, ist) {
			return in
		}
	}
	return ""
}

// CreateScratch creates the scratch file path of size bytes (CheckScratch
// first): it takes path's lock, then creates the file exclusively
// (O_EXCL, never through a symbolic link), so a second run given the same
// path is refused naming the first. On Linux the size is reserved on disk
// at once: a file system without room for it is refused here
// (ErrNoSpace), and the file removed, rather than mid-run.
func CreateScratch(path string, size int64, inputs ...string) (*Scratch, error) {
	if err := CheckScratch(path, inputs...); err != nil {
		return nil, err
	}
	lock, err := Acquire(path)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		lock.Release()
		if errors.Is(err, fs.ErrExist) {
			return nil, CheckScratch(path, inputs...)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s := &Scratch{f: f, path: path, lock: lock}
	if err := f.Truncate(size); err != nil {
		s.Remove()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := reserve(f, size); err != nil {
		s.Remove()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// File returns the open scratch file.
func (s *Scratch) File() *os.File { return s.f }

// Remove closes and deletes the scratch file (only while its path still
// names the file CreateScratch created) and releases its lock; nil-safe,
// and a second call does nothing.
func (s *Scratch) Remove() error {
	if s == nil || s.f == nil {
		return nil
	}
	var err error
	if !removeOwned(s.path, s.f) {
		err = fmt.Errorf("%s: not removed: the path no longer names the scratch file strata created", s.path)
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	s.lock.Release()
	s.f = nil
	return err
}

// CreateUnlinked returns a new file in dir that has no name: it is
// created under a temporary name (createTemp) and unlinked at once, so
// nothing is left behind whatever happens; closing it frees it.
func CreateUnlinked(dir, name string) (*os.File, error) {
	f, err := createTemp(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	if !removeOwned(f.Name(), f) {
		f.Close()
		return nil, fmt.Errorf("%s: cannot unlink the new file %s", dir, f.Name())
	}
	return f, nil
}

// Probe reports whether n bytes can be written to a new file in dir (a
// full disk or a read-only directory fails here); nothing is left behind.
func Probe(dir string, n int) error {
	f, err := CreateUnlinked(dir, "probe")
	if err != nil {
		return err
	}
	_, err = f.Write(make([]byte, n))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// RemoveFile removes path if it is a regular file (not followed through a
// symbolic link); anything else is refused with ErrUnsafe and left. A
// path that does not exist is not an error.
func RemoveFile(path string) error {
	st, err := lstat(path)
	if st == nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is %s, not a file strata wrote; not removing it: %w", path, kind(st.Mode()), ErrUnsafe)
	}
	return os.Remove(path)
}

// RemoveEntry removes the directory entry path whatever it is but a
// directory (a file, a symbolic link, a FIFO, a socket: unlinked, never
// followed or opened), for a directory strata owns, such as the compiled
// module cache, where a planted FIFO must go rather than stay. A path that
// does not exist is not an error.
func RemoveEntry(path string) error {
	st, err := lstat(path)
	if st == nil {
		return err
	}
	if st.IsDir() {
		return fmt.Errorf("%s is a directory; not removing it: %w", path, ErrUnsafe)
	}
	return os.Remove(path)
}

// RemoveTree removes the directory dir and everything in it (symbolic
// links inside are removed, never followed). dir itself must be a
// directory, not a symbolic link to one (ErrUnsafe); a dir that does not
// exist is not an error.
func RemoveTree(dir string) error {
	st, err := lstat(dir)
	if st == nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is %s, not a directory strata wrote; not removing it: %w", dir, kind(st.Mode()), ErrUnsafe)
	}
	return os.RemoveAll(dir)
}

// lstat returns path's file info (not followed), nil and no error when
// nothing is there.
func lstat(path string) (fs.FileInfo, error) {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return st, err
}

// WriteProc writes data to the kernel control file /proc/self/<name>
// (such as "clear_refs"): an existing file, opened for writing only,
// never created, truncated or followed through a symbolic link.
func WriteProc(name string, data []byte) error {
	if name == "" || strings.Contains(name, "/") || strings.HasPrefix(name, ".") {
		return fmt.Errorf("/proc/self/%s: not a control file of this process: %w", name, ErrUnsafe)
	}
	f, err := os.OpenFile("/proc/self/"+name, os.O_WRONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
