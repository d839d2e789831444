package safefile

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRemoveOwned: only the regular files whose names the caller owns are
// removed; other files, directories and links (even with an owned name)
// are kept and listed, and a link's target is untouched.
func TestRemoveOwned(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "target.json")
	if err := os.WriteFile(target, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	mk := map[string]func(string) error{
		"a.run":    func(p string) error { return os.WriteFile(p, nil, 0o644) },
		"b.run":    func(p string) error { return os.WriteFile(p, nil, 0o644) },
		"notes":    func(p string) error { return os.WriteFile(p, nil, 0o644) },
		"dir.run":  func(p string) error { return os.Mkdir(p, 0o755) },
		"link.run": func(p string) error { return os.Symlink(target, p) },
	}
	for name, f := range mk {
		if err := f(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	kept, err := RemoveOwned(dir, func(n string) bool { return strings.HasSuffix(n, ".run") })
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"dir.run", "link.run", "notes"}; !slices.Equal(kept, want) {
		t.Errorf("kept %v, want %v", kept, want)
	}
	for _, name := range []string{"a.run", "b.run"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s not removed: %v", name, err)
		}
	}
	if _, err := os.Stat(target); err != nil {
		t.Errorf("the link's target is gone: %v", err)
	}
	if kept, err := RemoveOwned(filepath.Join(dir, "missing"), func(string) bool { return true }); kept != nil || err != nil {
		t.Errorf("missing directory: %v, %v", kept, err)
	}
}

// TestContextWriter stops a write once its context is done, also in the
// middle of one large write.
func TestContextWriter(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var buf bytes.Buffer
	w := ContextWriter(ctx, &buf)
	if n, err := w.Write(make([]byte, 3*ctxChunk+1)); n != 3*ctxChunk+1 || err != nil {
		t.Fatalf("live context: %d, %v", n, err)
	}
	cancel()
	if n, err := w.Write([]byte("x")); n != 0 || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %d, %v", n, err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	stop := &cancelAfter{n: 2, cancel: cancel2}
	n, err := ContextWriter(ctx2, stop).Write(make([]byte, 5*ctxChunk))
	if n != 2*ctxChunk || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled mid-write: wrote %d (want %d), %v", n, 2*ctxChunk, err)
	}
}

// cancelAfter cancels its context after n writes.
type cancelAfter struct {
	n      int
	cancel func()
}

func (c *cancelAfter) Write(p []byte) (int, error) {
	if c.n--; c.n == 0 {
		c.cancel()
	}
	return len(p), nil
}
