package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestOpenRegularFile opens a regular file and refuses a FIFO (without
// blocking: no writer ever comes), a directory and a missing file.
func TestOpenRegularFile(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "reg")
	if err := os.WriteFile(reg, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	f, st, err := OpenRegularFile(reg)
	if err != nil || st.Size() != 3 {
		t.Fatalf("regular file: %v, %v", st, err)
	}
	f.Close()
	for _, c := range []struct {
		path string
		want error
	}{{fifo, ErrNotRegular}, {dir, ErrNotRegular}, {filepath.Join(dir, "missing"), fs.ErrNotExist}} {
		done := make(chan error, 1)
		go func() {
			f, _, err := OpenRegularFile(c.path)
			if err == nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, c.want) {
				t.Errorf("%s: %v, want %v", c.path, err, c.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the open blocked", c.path)
		}
	}
}
