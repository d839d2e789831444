package safefile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestCreateScratch: a scratch file is created only where nothing is;
// whatever exists at the path (a file, the run's input, a symbolic link,
// a device, a FIFO) is refused and left as it was.
func TestCreateScratch(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "run.toml")
	must(t, os.WriteFile(input, []byte("config"), 0o644))
	keep := filepath.Join(dir, "keep.txt")
	must(t, os.WriteFile(keep, []byte("keep"), 0o644))
	link := filepath.Join(dir, "link")
	must(t, os.Symlink(filepath.Join(dir, "none"), link))
	fifo := filepath.Join(dir, "fifo")
	must(t, syscall.Mkfifo(fifo, 0o600))
	cases := []struct {
		name, path, want string // want "" = created
	}{
		{"new path", filepath.Join(dir, "host.bin"), ""},
		{"existing file", keep, "exists (a file)"},
		{"the run's input", input, "the input " + input + " of this run"},
		{"dangling symlink", link, "a symbolic link"},
		{"device", "/dev/null", "a character device"},
		{"fifo", fifo, "a FIFO"},
		{"directory", dir, "a directory"},
		{"missing directory", filepath.Join(dir, "no", "host.bin"), "does not exist"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before, _ := os.Lstat(c.path)
			s, err := CreateScratch(c.path, 4096, input)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if st, err := os.Stat(c.path); err != nil || st.Size() != 4096 {
					t.Fatalf("scratch file: %v, %v", st, err)
				}
				must(t, s.Remove())
				must(t, s.Remove()) // harmless
				if _, err := os.Lstat(c.path); !os.IsNotExist(err) {
					t.Errorf("left after Remove: %v", err)
				}
				if _, err := os.Lstat(LockPath(c.path)); !os.IsNotExist(err) {
					t.Errorf("lock left after Remove: %v", err)
				}
				return
			}
			if err == nil {
				s.Remove()
				t.Fatal("created")
			}
			if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q wrapping ErrUnsafe", err, c.want)
			}
			if after, err := os.Lstat(c.path); before != nil && (err != nil || !os.SameFile(before, after) || after.Size() != before.Size()) {
				t.Errorf("path changed: %v", err)
			}
		})
	}
}

// TestScratchInUse: a second scratch file at the path of one in use is
// refused with ErrLocked naming the holder; Remove leaves a file that has
// replaced the scratch file at its path.
func TestScratchInUse(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "host.bin")
	s, err := CreateScratch(path, 10)
	if err != nil {
		t.Fatal(err)
	}
	_, err = CreateScratch(path, 10)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("process %d", os.Getpid())) {
		t.Errorf("second: err = %v, want ErrLocked naming our pid", err)
	}
	other := filepath.Join(dir, "other")
	must(t, os.WriteFile(other, []byte("not scratch"), 0o644))
	must(t, os.Rename(other, path))
	if err := s.Remove(); err == nil {
		t.Error("Remove of a replaced scratch file: no error")
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "not scratch" {
		t.Errorf("the replacing file: %q, %v; want it left alone", b, err)
	}
}

// TestRemoveHelpers: RemoveFile and RemoveTree remove only a regular file
// and a real directory; CreateUnlinked and Probe leave nothing behind.
func TestRemoveHelpers(t *testing.T) {
	dir := t.TempDir()
	keep := filepath.Join(dir, "keep")
	must(t, os.Mkdir(keep, 0o755))
	must(t, os.WriteFile(filepath.Join(keep, "f"), []byte("x"), 0o644))
	link := filepath.Join(dir, "link")
	must(t, os.Symlink(keep, link))
	fifo := filepath.Join(dir, "fifo")
	must(t, syscall.Mkfifo(fifo, 0o600))
	for _, c := range []struct {
		name string
		err  error
	}{
		{"RemoveFile link", RemoveFile(link)},
		{"RemoveFile fifo", RemoveFile(fifo)},
		{"RemoveFile dir", RemoveFile(keep)},
		{"RemoveTree link", RemoveTree(link)},
		{"RemoveTree fifo", RemoveTree(fifo)},
	} {
		if !errors.Is(c.err, ErrUnsafe) {
			t.Errorf("%s: err = %v, want ErrUnsafe", c.name, c.err)
		}
	}
	for _, p := range []string{link, fifo, filepath.Join(keep, "f")} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
	must(t, RemoveFile(filepath.Join(keep, "f")))
	must(t, RemoveFile(filepath.Join(keep, "f"))) // gone: not an error
	must(t, RemoveTree(keep))
	if _, err := os.Lstat(keep); !os.IsNotExist(err) {
		t.Errorf("RemoveTree left %s: %v", keep, err)
	}
	f, err := CreateUnlinked(dir, "adds")
	must(t, err)
	defer f.Close()
	must(t, Probe(dir, 1<<16))
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 { // link and fifo
		t.Errorf("directory holds %d entries, want 2", len(ents))
	}
	// RemoveEntry unlinks a FIFO and a link (not their targets), never a
	// directory.
	target := filepath.Join(dir, "target")
	must(t, os.WriteFile(target, []byte("x"), 0o644))
	must(t, os.Remove(link))
	must(t, os.Symlink(target, link))
	must(t, RemoveEntry(fifo))
	must(t, RemoveEntry(link))
	must(t, RemoveEntry(fifo)) // gone: not an error
	if err := RemoveEntry(dir); !errors.Is(err, ErrUnsafe) {
		t.Errorf("RemoveEntry of a directory: %v, want ErrUnsafe", err)
	}
	for p, want := range map[string]bool{fifo: false, link: false, target: true} {
		if _, err := os.Lstat(p); (err == nil) != want {
			t.Errorf("%s exists = %v, want %v", p, err == nil, want)
		}
	}
}
