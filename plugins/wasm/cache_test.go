package wasm

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestCorruptCacheRecovers corrupts the cached entry of a module in
// several ways: each time a fresh runtime must still load the module
// (deleting the bad entry and recompiling), and the next one must hit a
// good entry again.
func TestCorruptCacheRecovers(t *testing.T) {
	wasmBytes, dir := rooflineBytes(t), t.TempDir()
	load := func() {
		t.Helper()
		rt := newRuntime(t, Options{CacheDir: dir})
		if rt.CacheDir() != dir {
			t.Fatalf("cache disabled: %q", rt.CacheDir())
		}
		m, err := rt.Load(context.Background(), "roofline", wasmBytes)
		if err != nil {
			t.Fatalf("load: %v", err)
		}
		m.Close(context.Background())
	}
	load() // fills the cache
	corruptions := []struct {
		name string
		edit func(b []byte) []byte
	}{
		{"header", func(b []byte) []byte { b[0] ^= 0xff; b[7] = 200; return b }},
		{"body", func(b []byte) []byte { b[len(b)/2] ^= 0xff; return b }},
		{"truncated", func(b []byte) []byte { return b[:len(b)/3] }},
		{"huge function count", func(b []byte) []byte {
			at := 7 + int(b[6]) // after the magic and the version string
			for i := at; i < at+4; i++ {
				b[i] = 0xff
			}
			return b
		}},
		{"huge code length", func(b []byte) []byte {
			at := 7 + int(b[6])
			n := int(b[at]) | int(b[at+1])<<8 | int(b[at+2])<<16 | int(b[at+3])<<24
			at += 4 + 8*n
			for i := at; i < at+8; i++ {
				b[i] = 0x7f
			}
			return b
		}},
	}
	for _, c := range corruptions {
		t.Run(c.name, func(t *testing.T) {
			entries, _ := filepath.Glob(filepath.Join(dir, "wazero-*", "*"))
			if len(entries) == 0 {
				t.Fatal("no cache entries")
			}
			for _, e := range entries {
				b, err := os.ReadFile(e)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(e, c.edit(b), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			load()
			load()
		})
	}
}

// TestBadModuleKeepsCache loads a good module into a cache and then
// modules that do not compile through the same cache: their errors must
// leave the good module's entries in place (they are not the cache's
// fault), so the good module is not compiled again.
func TestBadModuleKeepsCache(t *testing.T) {
	good, dir := rooflineBytes(t), t.TempDir()
	rt := newRuntime(t, Options{CacheDir: dir})
	ctx := context.Background()
	m, err := rt.Load(ctx, "roofline", good)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	m.Close(ctx)
	before, _ := filepath.Glob(filepath.Join(dir, "wazero-*", "*"))
	if len(before) == 0 {
		t.Fatal("no cache entries")
	}
	bad := map[string][]byte{
		"truncated body":  good[:len(good)/2],
		"version 2":       append([]byte{0, 'a', 's', 'm', 2, 0, 0, 0}, good[8:]...),
		"unknown section": append(append([]byte{}, good[:8]...), 0x7f, 0x01, 0x00),
	}
	for name, code := range bad {
		t.Run(name, func(t *testing.T) {
			if _, err := rt.Load(ctx, "bad", code); err == nil {
				t.Fatal("a malformed module loaded")
			}
			after, _ := filepath.Glob(filepath.Join(dir, "wazero-*", "*"))
			if len(after) != len(before) {
				t.Fatalf("cache entries %d -> %d after a malformed module", len(before), len(after))
			}
			for _, e := range before {
				if _, err := os.Stat(e); err != nil {
					t.Fatalf("entry %s gone: %v", e, err)
				}
			}
		})
	}
}

// TestSpecialFileInCache plants a FIFO, and then a link to /dev/zero, in
// the place of each cached entry: a fresh runtime must delete them without
// opening them (opening the FIFO blocked for ever) and load the module
// within seconds, and the next runtime must find a good entry again.
func TestSpecialFileInCache(t *testing.T) {
	wasmBytes, dir := rooflineBytes(t), t.TempDir()
	load := func() {
		t.Helper()
		done := make(chan error, 1)
		go func() {
			ctx := context.Background()
			rt, err := NewRuntime(ctx, Options{CacheDir: dir})
			if err != nil {
				done <- err
				return
			}
			defer rt.Close(ctx)
			m, err := rt.Load(ctx, "roofline", wasmBytes)
			if err == nil {
				m.Close(ctx)
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("load: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("load blocks on the planted cache entry")
		}
	}
	load() // fills the cache
	plants := map[string]func(path string) error{
		"fifo":             func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"link to a device": func(p string) error { return os.Symlink("/dev/zero", p) },
	}
	for name, plant := range plants {
		t.Run(name, func(t *testing.T) {
			entries, _ := filepath.Glob(filepath.Join(dir, "wazero-*", "*"))
			if len(entries) == 0 {
				t.Fatal("no cache entries")
			}
			for _, e := range entries {
				if err := os.Remove(e); err != nil {
					t.Fatal(err)
				}
				if err := plant(e); err != nil {
					t.Fatal(err)
				}
			}
			load()
			for _, e := range entries {
				if st, err := os.Stat(e); err == nil && !st.Mode().IsRegular() {
					t.Errorf("%s is still %v", e, st.Mode())
				}
			}
			load()
		})
	}
}

// rooflineBytes is the built roofline cost model (skips without models).
func rooflineBytes(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "models", "wasm", "costmodel-roofline.wasm"))
	if err != nil {
		t.Skip("models not built:", err)
	}
	return b
}

// TestUnwritableCache checks that a cache directory that cannot be used
// makes the runtime run without a cache instead of failing.
func TestUnwritableCache(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{file, filepath.Join(file, "sub")} {
		rt, err := NewRuntime(context.Background(), Options{CacheDir: dir})
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if rt.CacheDir() != "" {
			t.Errorf("%s: cache still on", dir)
		}
		rt.Close(context.Background())
	}
}
