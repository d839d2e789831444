package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Lock is an exclusive advisory lock (flock) on an output, held in a
// lock file that records the holder's pid.
type Lock struct {
	f    *os.File
	path string
}

// maxLockBytes bounds what a lock file holds: a pid and a newline.
const maxLockBytes = 32

// lockFlags open a lock file: never through a symbolic link, never
// blocking (a FIFO that appears at the path after the check).
const lockFlags = os.O_RDWR | syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_CLOEXEC

// LockPath returns the lock file of an output: "<dir>/.lock" for a
// directory, "<dir>/.<name>.lock" for a file.
func LockPath(output string) string {
	if st, err := os.Stat(output); err == nil && st.IsDir() {
		return filepath.Join(output, ".lock")
	}
	return filepath.Join(filepath.Dir(output), "."+filepath.Base(output)+".lock")
}

// Acquire takes the exclusive lock of output without waiting. When
// another process holds it the error wraps ErrLocked and names its pid. A
// lock path that is not a regular file (a symbolic link, FIFO, device or
// directory), or a regular file that is not a lock (it holds more than a
// pid, or has other hard links), is refused with ErrUnsafe and left as it
// is. Holding the lock, it removes the temporary files a killed writer of
// output left (RemoveStaleTemps).
func Acquire(output string) (*Lock, error) {
	path := LockPath(output)
	for range 3 { // the holder may release (unlink) the file between our open and flock
		f, err := openLock(output, path)
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			holder := holderOf(f)
			f.Close()
			return nil, fmt.Errorf("%s is in use by %s (lock %s): wait for it to finish or write elsewhere: %w", output, holder, path, ErrLocked)
		}
		if !namesFile(path, f) {
			f.Close()
			continue
		}
		if err := f.Truncate(0); err == nil {
			f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		}
		if filepath.Base(path) == ".lock" {
			RemoveStaleTemps(filepath.Dir(path), "")
		} else {
			RemoveStaleTemps(filepath.Dir(output), filepath.Base(output))
		}
		return &Lock{f: f, path: path}, nil
	}
	return nil, fmt.Errorf("%s: the lock file %s keeps being replaced: %w", output, path, ErrLocked)
}

// openLock opens (creating if needed) the lock file path of output,
// refusing anything that is not a lock file of this package.
func openLock(output, path string) (*os.File, error) {
	refuse := func(what string) error {
		return fmt.Errorf("%s: the lock file %s is %s, not a lock file strata created; remove it or write elsewhere: %w", output, path, what, ErrUnsafe)
	}
	if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
		return nil, refuse(kind(st.Mode()))
	}
	f, err := os.OpenFile(path, lockFlags|os.O_CREATE|os.O_EXCL, 0o644)
	if err == nil {
		return f, nil // ours, new
	}
	if errors.Is(err, fs.ErrExist) {
		f, err = os.OpenFile(path, lockFlags, 0)
	}
	if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.ENXIO) {
		return nil, refuse("not a regular file")
	}
	if err != nil {
		return nil, fmt.Errorf("%s: cannot open the lock file %s: %w", output, path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	what := ""
	switch {
	case !st.Mode().IsRegular():
		what = kind(st.Mode())
	case links(st) > 1:
		what = "a file with other hard links"
	case st.Size() > maxLockBytes || !holdsPid(f):
		what = "a file that holds something other than a pid"
	}
	if what != "" {
		f.Close()
		return nil, refuse(what)
	}
	return f, nil
}

// readPid returns the content of a lock file and whether it is empty or
// one pid (and a newline).
func readPid(f *os.File) (int, bool) {
	b := make([]byte, maxLockBytes+1)
	n, _ := f.ReadAt(b, 0)
	if n > maxLockBytes {
		return 0, false
	}
	s := strings.TrimSuffix(string(b[:n]), "\n")
	if s == "" {
		return 0, true
	}
	pid, err := strconv.Atoi(s)
	return pid, err == nil && pid > 0 && digits(s)
}

// holdsPid reports whether a lock file is empty or holds a pid.
func holdsPid(f *os.File) bool {
	_, ok := readPid(f)
	return ok
}

// holderOf names the process whose pid a lock file records.
func holderOf(f *os.File) string {
	if pid, ok := readPid(f); ok && pid > 0 {
		return fmt.Sprintf("process %d", pid)
	}
	return "another process"
}

// links returns the number of hard links of a file (1 where unknown).
func links(st fs.FileInfo) uint64 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(s.Nlink)
	}
	return 1
}

// namesFile reports whether path (not followed) is the file f has open:
// the same device and inode.
func namesFile(path string, f *os.File) bool {
	st, err := os.Lstat(path)
	if err != nil {
		return false
	}
	fst, err := f.Stat()
	return err == nil && os.SameFile(st, fst)
}

// removeOwned removes path if it still names the file f has open, and
// reports whether it did: a file another process put at the path since
// is left alone.
func removeOwned(path string, f *os.File) bool {
	return namesFile(path, f) && os.Remove(path) == nil
}

// Release removes the lock file (when its path still names the file this
// lock opened) and releases the lock; nil-safe.
func (l *Lock) Release() {
	if l == nil || l.f == nil {
		return
	}
	removeOwned(l.path, l.f)
	syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
	l.f = nil
}

// heldBy returns the holder of output's lock when a process holds it
// ("process 1234"), or "" when none does (or there is no lock file).
func heldBy(output string) string {
	f, err := os.OpenFile(LockPath(output), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return ""
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err == nil {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return ""
	}
	return holderOf(f)
}
