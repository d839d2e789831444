package runner

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"strata/core/config"
	"strata/core/safefile"
	"strata/experiments/runner/numerics"
)

// BinaryDigest is the SHA-256 of the code this process runs: its
// executable (Go, cgo kernels and the embedded WASM modules) and every
// shared library it has mapped (OpenBLAS, METIS, libm, ...), each file
// by content. A stored run is reused only under the same digest (see
// runKeyer), so a rebuilt binary, an uncommitted change that reaches the
// binary, or another OpenBLAS reruns it; a commit that changes nothing
// the binary holds (documentation) does not.
func BinaryDigest() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the strata executable to hash it: %w", err)
	}
	h := sha256.New()
	// The executable by content only (checkouts differ in path); the
	// libraries by name and content.
	for i, f := range append([]string{exe}, mappedLibraries(exe)...) {
		sum, err := fileSHA256(f)
		if err != nil {
			return "", fmt.Errorf("hashing the code a run depends on: %w", err)
		}
		name := "executable"
		if i > 0 {
			name = filepath.Base(f)
		}
		fmt.Fprintf(h, "%s %s\n", name, sum)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// mappedLibraries lists the shared libraries this process has mapped
// (Linux /proc/self/maps; none elsewhere), sorted, the executable left
// out.
func mappedLibraries(exe string) []string {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			continue
		}
		p := strings.Join(fields[5:], " ")
		if !strings.HasPrefix(p, "/") || p == exe || !strings.Contains(p, ".so") || strings.HasSuffix(p, "(deleted)") {
			continue
		}
		seen[p] = true
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// fileSHA256 hashes the file path (a module a config names, the binary,
// its libraries), opened through the read gate: a FIFO or a device is
// refused, not a hang or an endless read.
func fileSHA256(path string) (string, error) {
	f, _, err := safefile.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// runKeyer computes the code key of each run: the binary digest, the
// numerics, and the SHA-256 of every module file the run's config loads
// from a path (model.module, a model.options value naming a .wasm file),
// each file hashed once.
type runKeyer struct {
	binary   string
	numerics numerics.Numerics
	mu       sync.Mutex
	files    map[string]string
}

// key is the code key of a run of cfg.
func (k *runKeyer) key(cfg *config.Config) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "binary %s\nnumerics %s\n", k.binary, k.numerics.Key())
	var paths []string
	if p := cfg.ModulePath(); p != "" {
		paths = append(paths, p)
	}
	for _, name := range sortedKeys(cfg.Model.Options, nil, "") {
		if s, ok := cfg.Model.Options[name].(string); ok && strings.HasSuffix(s, ".wasm") {
			paths = append(paths, cfg.OptionPath(name, s))
		}
	}
	for _, p := range paths {
		sum, err := k.file(p)
		if err != nil {
			return "", fmt.Errorf("hashing module %s: %w", p, err)
		}
		fmt.Fprintf(h, "module %s %s\n", p, sum)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

func (k *runKeyer) file(p string) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if s, ok := k.files[p]; ok {
		return s, nil
	}
	s, err := fileSHA256(p)
	if err != nil {
		return "", err
	}
	if k.files == nil {
		k.files = map[string]string{}
	}
	k.files[p] = s
	return s, nil
}
