package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"
)

// TestOpenInput checks the read gate on every kind of path: regular files
// (also through a link) open; a FIFO, a device (also through a link) and
// a directory are refused naming what they are, without blocking; a
// missing file is fs.ErrNotExist.
func TestOpenInput(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "in.bin")
	if err := os.WriteFile(reg, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := func(name, to string) string {
		p := filepath.Join(dir, name)
		if err := os.Symlink(to, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name, path string
		want       string // "" = opened
	}{
		{"regular file", reg, ""},
		{"link to a regular file", link("reg-link", reg), ""},
		{"fifo", fifo, "is a FIFO"},
		{"link to a fifo", link("fifo-link", fifo), "is a FIFO"},
		{"device", "/dev/zero", "is a character device"},
		{"link to a device", link("zero-link", "/dev/zero"), "is a character device"},
		{"directory", dir, "is a directory"},
		{"missing", filepath.Join(dir, "nope"), "no such file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			type result struct {
				size int64
				err  error
			}
			done := make(chan result, 1)
			go func() {
				f, st, err := Open(c.path)
				if err != nil {
					done <- result{0, err}
					return
				}
				f.Close()
				done <- result{st.Size(), nil}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("Open(%s) blocks", c.path)
			}
			if c.want == "" {
				if r.err != nil || r.size != 4 {
					t.Fatalf("Open(%s) = size %d, %v; want 4 bytes", c.path, r.size, r.err)
				}
				return
			}
			if r.err == nil || !strings.Contains(r.err.Error(), c.want) {
				t.Fatalf("Open(%s): err = %v, want %q", c.path, r.err, c.want)
			}
			if c.name == "missing" {
				if !errors.Is(r.err, fs.ErrNotExist) {
					t.Errorf("err = %v, want fs.ErrNotExist", r.err)
				}
			} else if !errors.Is(r.err, ErrNotRegular) {
				t.Errorf("err = %v, want ErrNotRegular", r.err)
			}
		})
	}
}

// TestReadFileLimit checks that ReadFile reads a file of at most limit
// bytes exactly and refuses a larger one, and a device, before reading.
func TestReadFileLimit(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.wasm")
	data := []byte(strings.Repeat("x", 100))
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path  string
		limit int64
		want  string // "" = read
	}{
		{p, 100, ""},
		{p, 1000, ""},
		{p, 99, "100 bytes, more than the limit of 99"},
		{"/dev/zero", 1 << 20, "is a character device"},
	}
	for _, c := range cases {
		b, err := ReadFile(c.path, c.limit)
		if c.want == "" {
			if err != nil || string(b) != string(data) {
				t.Errorf("ReadFile(%s, %d) = %d bytes, %v; want the file's 100", c.path, c.limit, len(b), err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadFile(%s, %d): err = %v, want %q", c.path, c.limit, err, c.want)
		}
		if strings.Contains(c.want, "limit") && !errors.Is(err, ErrTooLarge) {
			t.Errorf("err = %v, want ErrTooLarge", err)
		}
	}
}

// TestDirFS: the gated directory file system passes the standard fs.FS
// conformance checks on regular files and directories, and refuses a
// FIFO or device under the directory without blocking.
func TestDirFS(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "raw"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"a.txt": "a", "raw/b.csv": "0,1\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fsys := DirFS(dir)
	if err := fstest.TestFS(fsys, "a.txt", "raw/b.csv"); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "raw/fifo.csv"), 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, want string }{
		{"raw/fifo.csv", "is a FIFO"},
		{"zero", "is a character device"},
		{"../a.txt", "invalid argument"},
		{"missing", "no such file"},
	} {
		done := make(chan error, 1)
		go func() {
			f, err := fsys.Open(c.name)
			if err == nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Open(%s) = %v, want %q", c.name, err, c.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Open(%s) blocks", c.name)
		}
	}
}
