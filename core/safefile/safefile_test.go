package safefile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestCheckOutput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.strata")
	if err := os.WriteFile(in, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.strata")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.strata")
	if err := os.Link(in, hard); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, out string
		want      string // "" = accepted
	}{
		{"new file", filepath.Join(dir, "new.csv"), ""},
		{"existing regular file", filepath.Join(dir, "in2"), ""},
		{"device", "/dev/null", "output is a character device"},
		{"fifo", fifo, "output is a FIFO"},
		{"directory", dir, "output is a directory"},
		{"same file", in, "same file as the input"},
		{"symlink to the input", link, "same file as the input"},
		{"hard link to the input", hard, "same file as the input"},
		{"missing directory", filepath.Join(dir, "nope", "x.csv"), "does not exist"},
	}
	os.WriteFile(filepath.Join(dir, "in2"), nil, 0o644)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckOutput(c.out, in)
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrUnsafe) {
				t.Fatalf("err = %v, want %q wrapping ErrUnsafe", err, c.want)
			}
		})
	}
}

// TestWriteFailureLeavesTarget injects a failing writer (a full disk):
// the target keeps its old content and no temporary file is left.
func TestWriteFailureLeavesTarget(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.csv")
	if err := WriteFile(out, []byte("old\n")); err != nil {
		t.Fatal(err)
	}
	enospc := fmt.Errorf("write: %w", syscall.ENOSPC)
	err := Write(out, func(w io.Writer) error {
		w.Write([]byte("partial"))
		return enospc
	})
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("err = %v, want ENOSPC", err)
	}
	if b, _ := os.ReadFile(out); string(b) != "old\n" {
		t.Errorf("target = %q, want the old content", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("directory holds %d entries, want only the target", len(ents))
	}
	if err := WriteFile(out, []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out); string(b) != "new\n" {
		t.Errorf("target = %q after a good write", b)
	}
}

func TestLock(t *testing.T) {
	dir := t.TempDir()
	for _, out := range []string{dir, filepath.Join(dir, "metrics.csv")} {
		l, err := Acquire(out)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Acquire(out) // flock is per open file: a second open conflicts
		if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("process %d", os.Getpid())) {
			t.Errorf("second lock: err = %v, want ErrLocked naming our pid", err)
		}
		l.Release()
		l2, err := Acquire(out)
		if err != nil {
			t.Fatalf("after release: %v", err)
		}
		l2.Release()
		l2.Release() // harmless
	}
}
