package wasm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tetratelabs/wazero"

	"strata/core/safefile"
)

// The on-disk compilation cache is an optimisation: it must never make a
// module fail. A directory that cannot be written is not used; an entry
// that does not load (a corrupt header panics inside wazero, a corrupt
// body fails the compile) is deleted and the module compiled afresh. Both
// print one warning on stderr.

// usableCacheDir reports whether dir can hold the cache: it can be
// created and a file written in it (a full disk fails here, not later).
func usableCacheDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return safefile.Probe(dir, 64<<10)
}

// sanitizeCache deletes the cache entries whose sizes do not fit their
// file, before wazero reads them: wazero trusts the function count and
// code length of an entry and allocates them (a corrupt count is a fatal
// out-of-memory, which no recover catches). An entry is: "WAZEVO", a
// version string (length byte), a uint32 function count, 8 bytes per
// function, a uint64 code length, the code, a CRC-32; then optional
// source-map data. It returns the number of entries deleted.
func sanitizeCache(dir string) int {
	files, _ := filepath.Glob(filepath.Join(dir, "wazero-*", "*"))
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".tmp") || strings.Contains(filepath.Base(f), ".tmp") {
			continue
		}
		if !cacheEntryPlausible(f) {
			if safefile.RemoveEntry(f) == nil {
				n++
			}
		}
	}
	return n
}

// cacheEntryPlausible checks an entry's declared sizes against its size.
// It opens the entry through the read gate (safefile.Open): anything but
// a regular file (a FIFO would block the open, a link to a device would
// stream without end) is implausible, so deleted unopened.
func cacheEntryPlausible(path string) bool {
	f, st, err := safefile.Open(path)
	if err != nil {
		return !errors.Is(err, safefile.ErrNotRegular) // otherwise not ours to judge; wazero reports it
	}
	defer f.Close()
	size := st.Size()
	var head [7 + 255 + 4]byte
	k, _ := io.ReadFull(f, head[:])
	if k < 7 || string(head[:6]) != "WAZEVO" {
		return false
	}
	at := 7 + int64(head[6])
	if int64(k) < at+4 {
		return false
	}
	count := int64(binary.LittleEndian.Uint32(head[at:]))
	at += 4 + 8*count
	if at+8 > size {
		return false
	}
	var lb [8]byte
	if _, err := f.ReadAt(lb[:], at); err != nil {
		return false
	}
	code := binary.LittleEndian.Uint64(lb[:])
	return code <= uint64(size-at-8) && uint64(size-at-8)-code >= 4
}

// warnf prints a warning about the cache on stderr.
func warnf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "strata: warning: "+format+"\n", args...)
}

// compileSafely compiles wasm in rt, turning a panic into an error.
func compileSafely(ctx context.Context, rt wazero.Runtime, wasm []byte) (c wazero.CompiledModule, err error) {
	defer func() {
		if p := recover(); p != nil {
			c, err = nil, fmt.Errorf("panic in the compiler: %v", p)
		}
	}()
	return rt.CompileModule(ctx, wasm)
}

// compile compiles wasm in rt through the cache. When that fails and the
// cache is on, the module is compiled once without the cache: if that
// fails too, the module itself is at fault and the cache is left alone
// (a malformed module must not cost every other module its entry);
// otherwise the cache's entries are deleted (they may be corrupt) and the
// module compiled once more through it.
func (r *Runtime) compile(ctx context.Context, rt wazero.Runtime, name string, wasm []byte) (wazero.CompiledModule, error) {
	c, err := compileSafely(ctx, rt, wasm)
	if err == nil || r.cache == nil || !r.compilesUncached(ctx, wasm) {
		return c, err
	}
	removed := r.clearCache()
	c2, err2 := compileSafely(ctx, rt, wasm)
	if err2 != nil {
		return nil, err // the module's own problem: report the first error
	}
	warnf("compiled-module cache %s: the entry for module %q did not load (%v); deleted %d cache entries and recompiled", r.cacheDir, name, firstLine(err.Error()), removed)
	return c2, nil
}

// compilesUncached reports whether wasm compiles in a runtime of r's
// settings that has no cache.
func (r *Runtime) compilesUncached(ctx context.Context, wasm []byte) bool {
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithMemoryLimitPages(r.opts.MemoryLimitPages))
	defer rt.Close(context.WithoutCancel(ctx))
	c, err := compileSafely(ctx, rt, wasm)
	if err != nil {
		return false
	}
	c.Close(ctx)
	return true
}

// clearCache deletes wazero's entries (the wazero-* directories) from the
// cache directory, leaving anything else there alone.
func (r *Runtime) clearCache() int {
	dirs, _ := filepath.Glob(filepath.Join(r.cacheDir, "wazero-*"))
	n := 0
	for _, d := range dirs {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if safefile.RemoveEntry(filepath.Join(d, e.Name())) == nil {
				n++
			}
		}
	}
	return n
}
