package safefile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// pidContent reports whether b is what a lock file may hold to be
// taken: nothing, or one pid (decimal digits, a positive int), then an
// optional newline.
func pidContent(b []byte) bool {
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return true
	}
	if strings.Trim(s, "0123456789") != "" {
		return false
	}
	pid, err := strconv.Atoi(s)
	return err == nil && pid > 0
}

// FuzzLockFile plants a file of arbitrary content at an output's lock
// path: a regular file, a symbolic link to a file of the user's, or a
// hard link to one. Acquire takes only a regular file holding nothing or
// a pid (and then Release removes it); anything else is refused with
// ErrUnsafe and left byte for byte as it was, and the user's file behind
// a link is never written.
func FuzzLockFile(f *testing.F) {
	for _, c := range []struct {
		content string
		kind    uint8
	}{{"", 0}, {"1234\n", 0}, {"keep me\n", 0}, {"0\n", 0}, {"12 34", 0}, {"1234\n", 1}, {"", 2}, {"99999999999999999999999999999999999", 0}} {
		f.Add([]byte(c.content), c.kind)
	}
	f.Fuzz(func(t *testing.T, content []byte, kind uint8) {
		dir := t.TempDir()
		out := filepath.Join(dir, "out.csv")
		lockPath, user := LockPath(out), filepath.Join(dir, "user.txt")
		switch kind % 3 {
		case 0:
			must(t, os.WriteFile(lockPath, content, 0o644))
		case 1:
			must(t, os.WriteFile(user, content, 0o644))
			must(t, os.Symlink(user, lockPath))
		case 2:
			must(t, os.WriteFile(user, content, 0o644))
			must(t, os.Link(user, lockPath))
		}
		takeable := kind%3 == 0 && len(content) <= maxLockBytes && pidContent(content)
		lock, err := Acquire(out)
		if err == nil {
			if !takeable {
				t.Fatalf("took the lock file %q (kind %d)", content, kind%3)
			}
			lock.Release()
			if _, err := os.Lstat(lockPath); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("Release left the lock file (%v)", err)
			}
			return
		}
		if takeable || !errors.Is(err, ErrUnsafe) {
			t.Fatalf("Acquire with %q (kind %d): %v", content, kind%3, err)
		}
		for _, p := range []string{lockPath, user} {
			if kind%3 == 0 && p == user {
				continue
			}
			if b, err := os.ReadFile(p); err != nil || !bytes.Equal(b, content) {
				t.Fatalf("%s changed: %q (%v), was %q", p, b, err, content)
			}
		}
	})
}
