// Package testcache names the compiled-module cache that every test
// binary of the repository shares: build/test-wasm-cache (ignored by git).
//
// Compiling the Go-built layer modules is a large share of the tests' CPU;
// a cache per test binary compiles each module once per package and run,
// a shared one once per machine (entries are keyed by the module's bytes,
// the runtime's settings and the CPU, and written atomically, so test
// binaries running side by side may share it). It never uses the user's
// own cache.
package testcache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"strata/core/safefile"
)

// maxGoMod bounds the go.mod files read on the way up (the repository's
// is under 1 KiB).
const maxGoMod = 1 << 20

// WasmDir returns the repository's build/test-wasm-cache, creating it. It
// finds the repository from the working directory (a test runs in its
// package's directory) by walking up to the go.mod of module strata.
func WasmDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("testcache: %w", err)
	}
	root, err := moduleRoot(wd)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "build", "test-wasm-cache")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("testcache: %w", err)
	}
	return dir, nil
}

// MustWasmDir is WasmDir for a TestMain: it panics when there is no
// repository above the working directory.
func MustWasmDir() string {
	dir, err := WasmDir()
	if err != nil {
		panic(err)
	}
	return dir
}

// moduleRoot returns the nearest directory at or above dir whose go.mod
// declares module strata.
func moduleRoot(dir string) (string, error) {
	for d := dir; ; {
		if b, err := safefile.ReadFile(filepath.Join(d, "go.mod"), maxGoMod); err == nil && declaresStrata(string(b)) {
			return d, nil
		}
		up := filepath.Dir(d)
		if up == d {
			return "", errors.New("testcache: no go.mod of module strata at or above " + dir)
		}
		d = up
	}
}

// declaresStrata reports whether a go.mod's text declares module strata.
func declaresStrata(gomod string) bool {
	for line := range strings.Lines(gomod) {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" && f[1] == "strata" {
			return true
		}
	}
	return false
}
