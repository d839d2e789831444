package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestLockRefusesUnsafe puts what is not a lock file at an output's lock
// path: a symbolic link to the dataset (the old Acquire truncated the
// dataset to the pid), a FIFO and a directory (the old Release deleted
// them), a hard link to the dataset and a file that holds data. Each is
// refused with ErrUnsafe and left as it was; a stale lock file holding a
// pid (a killed run's) and an empty one are taken.
func TestLockRefusesUnsafe(t *testing.T) {
	const data = "the dataset's bytes\n"
	cases := []struct {
		name  string
		make  func(t *testing.T, lock, dataset string)
		want  string // "" = taken
		after string // the lock path's content afterwards, for regular files
	}{
		{"symlink to the dataset", func(t *testing.T, lock, ds string) { must(t, os.Symlink(ds, lock)) }, "a symbolic link", ""},
		{"dangling symlink", func(t *testing.T, lock, ds string) { must(t, os.Symlink(ds+".none", lock)) }, "a symbolic link", ""},
		{"symlink to /dev/null", func(t *testing.T, lock, ds string) { must(t, os.Symlink("/dev/null", lock)) }, "a symbolic link", ""},
		{"fifo", func(t *testing.T, lock, ds string) { must(t, syscall.Mkfifo(lock, 0o600)) }, "a FIFO", ""},
		{"directory", func(t *testing.T, lock, ds string) { must(t, os.Mkdir(lock, 0o755)) }, "a directory", ""},
		{"hard link to the dataset", func(t *testing.T, lock, ds string) { must(t, os.Link(ds, lock)) }, "other hard links", data},
		{"a file of data", func(t *testing.T, lock, ds string) { must(t, os.WriteFile(lock, []byte("keep me\n"), 0o644)) }, "something other than a pid", "keep me\n"},
		{"a stale lock", func(t *testing.T, lock, ds string) { must(t, os.WriteFile(lock, []byte("999999999\n"), 0o644)) }, "", ""},
		{"an empty lock", func(t *testing.T, lock, ds string) { must(t, os.WriteFile(lock, nil, 0o644)) }, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ds := filepath.Join(dir, "data.strata")
			must(t, os.WriteFile(ds, []byte(data), 0o644))
			out := filepath.Join(dir, "out.csv")
			lock := LockPath(out)
			c.make(t, lock, ds)
			before, _ := os.Lstat(lock)
			l, err := Acquire(out)
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if b, _ := os.ReadFile(lock); string(b) != strconv.Itoa(os.Getpid())+"\n" {
					t.Errorf("lock holds %q, want our pid", b)
				}
				l.Release()
				if _, err := os.Lstat(lock); !os.IsNotExist(err) {
					t.Errorf("lock file left after release: %v", err)
				}
				return
			}
			if err == nil {
				l.Release()
			}
			if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q wrapping ErrUnsafe", err, c.want)
			}
			if b, _ := os.ReadFile(ds); string(b) != data {
				t.Errorf("dataset now holds %q", b)
			}
			after, err := os.Lstat(lock)
			if err != nil || after.Mode() != before.Mode() || !os.SameFile(before, after) {
				t.Errorf("lock path changed: %v", err)
			}
			if c.after != "" {
				if b, _ := os.ReadFile(lock); string(b) != c.after {
					t.Errorf("lock path holds %q, want %q", b, c.after)
				}
			}
		})
	}
}

// TestReleaseRemovesOnlyOwn replaces the lock file while the lock is
// held: Release leaves the file that is not its own.
func TestReleaseRemovesOnlyOwn(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.csv")
	l, err := Acquire(out)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	must(t, os.WriteFile(other, []byte("not the lock\n"), 0o644))
	must(t, os.Rename(other, LockPath(out)))
	l.Release()
	if b, err := os.ReadFile(LockPath(out)); err != nil || string(b) != "not the lock\n" {
		t.Errorf("the replaced file: %q, %v; want it left alone", b, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
