package runner

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"strata/core/safefile"
)

// TestFileSHA256Special hashes a module path that is a FIFO and one that
// is a link to /dev/zero: both are refused at once through the read gate
// (the FIFO hung the run's code key, the device streamed for ever).
func TestFileSHA256Special(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "m.wasm")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "z.wasm")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, zero} {
		done := make(chan error, 1)
		go func() { _, err := fileSHA256(p); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, safefile.ErrNotRegular) {
				t.Errorf("fileSHA256(%s): err = %v, want ErrNotRegular", p, err)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("fileSHA256(%s) blocks", p)
		}
	}
}
