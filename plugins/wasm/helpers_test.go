package wasm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"strata/internal/testcache"
)

// The tests build the Go guests from source (go build skips up-to-date
// outputs and caches compiled packages), so they never test stale modules
// and need no `make models` first.
var (
	guestDir  string
	guestMu   sync.Mutex
	guestWasm = map[string][]byte{}
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "strata-wasm-test-")
	if err != nil {
		panic(err)
	}
	guestDir = dir
	code := m.Run()
	if sharedRT != nil {
		sharedRT.Close(context.Background())
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

func repoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func goTool() string {
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p
	}
	return "go"
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// guest builds the Go guest in pkg (relative to the repository root) and
// returns its bytes.
func guest(t testing.TB, pkg string) []byte {
	t.Helper()
	guestMu.Lock()
	defer guestMu.Unlock()
	if b, ok := guestWasm[pkg]; ok {
		return b
	}
	out := filepath.Join(guestDir, strings.ReplaceAll(pkg, "/", "_")+".wasm")
	cmd := exec.Command(goTool(), "build", "-buildmode=c-shared", "-trimpath", "-o", out, "./"+pkg)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building guest %s: %v\n%s", pkg, err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	guestWasm[pkg] = b
	return b
}

var (
	sharedRT   *Runtime
	sharedOnce sync.Once
	sharedMods sync.Map // pkg -> *Module
)

// testRuntime is one runtime shared by the tests that use default options,
// over the compiled-module cache every test binary shares.
func testRuntime(t testing.TB) *Runtime {
	t.Helper()
	sharedOnce.Do(func() {
		rt, err := NewRuntime(context.Background(), Options{CacheDir: testcache.MustWasmDir()})
		if err != nil {
			t.Fatal(err)
		}
		sharedRT = rt
	})
	if sharedRT == nil {
		t.Fatal("no runtime")
	}
	return sharedRT
}

// loadGuest builds and loads a Go guest once per test process.
func loadGuest(t testing.TB, pkg string) *Module {
	t.Helper()
	if m, ok := sharedMods.Load(pkg); ok {
		return m.(*Module)
	}
	rt := testRuntime(t)
	m, err := rt.Load(context.Background(), filepath.Base(pkg), guest(t, pkg))
	if err != nil {
		t.Fatalf("loading %s: %v", pkg, err)
	}
	sharedMods.Store(pkg, m)
	return m
}

// newRuntime returns a private runtime without a disk cache (hand-encoded
// modules compile in well under a millisecond).
func newRuntime(t testing.TB, opts Options) *Runtime {
	t.Helper()
	if opts.CacheDir == "" {
		opts.CacheDir = "off"
	}
	rt, err := NewRuntime(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	return rt
}

func mustContain(t testing.TB, err error, wants ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one containing %q", wants)
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("error %q\ndoes not contain %q", err, w)
		}
	}
}

const timeMs = time.Millisecond
