package safefile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// RemoveOwned deletes the regular files of dir whose names owned accepts
// (the files a strata writer names, such as "<run id>.json"), and nothing
// else: the other entries, and owned names that are not regular files (a
// symbolic link, a directory), are left in place and returned, sorted, so
// that the caller can say what it kept. A dir that does not exist holds
// nothing.
func RemoveOwned(dir string, owned func(name string) bool) (kept []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	var errs []error
	for _, e := range entries {
		if !e.Type().IsRegular() || !owned(e.Name()) {
			kept = append(kept, e.Name())
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	slices.Sort(kept)
	return kept, errors.Join(errs...)
}

// ContextWriter returns a writer that fails with ctx's error once ctx is
// done, so that a long write (convert) stops at an interrupt; a File's
// Abort then removes what was written. A large write is passed on in
// pieces of ctxChunk bytes, ctx checked before each.
func ContextWriter(ctx context.Context, w io.Writer) io.Writer {
	return &ctxWriter{ctx: ctx, w: w}
}

// ctxChunk is the most ContextWriter writes between two checks of its
// context: 4 MiB take milliseconds on any disk.
const ctxChunk = 4 << 20

type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c *ctxWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		if err := c.ctx.Err(); err != nil {
			return n, err
		}
		k, err := c.w.Write(p[:min(len(p), ctxChunk)])
		n += k
		if err != nil {
			return n, err
		}
		p = p[k:]
	}
	return n, nil
}

// RemoveDirIfEmpty removes dir when it holds nothing (a directory a
// failed writer created); a directory with any entry is left alone.
func RemoveDirIfEmpty(dir string) {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) == 0 {
		_ = os.Remove(dir) // fails, harmlessly, if an entry appeared since
	}
}
