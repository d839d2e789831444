package graph

import (
	"context"
	"fmt"
	"io/fs"
	"os"
)

// Bounds on what a dataset file may declare, checked before allocating.
const (
	// MaxClasses bounds a dataset's class count (the model's output width).
	MaxClasses = 1 << 16
	// MaxLineBytes bounds one line of a text dataset file.
	MaxLineBytes = 16 << 20
	// maxGzipRatio bounds how much text one compressed byte may expand
	// to (deflate's limit is about 1032:1).
	maxGzipRatio = 1032
)

// limitsKey is the context key of the memory budget.
type limitsKey struct{}

// WithMaxMemory returns a context carrying a memory budget in bytes for
// the loaders (OpenContext): a declared size needing more is an error
// before anything is allocated. bytes <= 0 means DefaultMaxMemory.
func WithMaxMemory(ctx context.Context, bytes int64) context.Context {
	return context.WithValue(ctx, limitsKey{}, bytes)
}

// MaxMemory returns the memory budget of ctx (DefaultMaxMemory when unset).
func MaxMemory(ctx context.Context) int64 {
	if ctx != nil {
		if b, ok := ctx.Value(limitsKey{}).(int64); ok && b > 0 {
			return b
		}
	}
	return DefaultMaxMemory()
}

// DefaultMaxMemory is the default memory budget: 3/4 of the physical
// memory (8 GiB when it cannot be read).
func DefaultMaxMemory() int64 {
	if m := physicalMemory(); m > 0 {
		return m / 4 * 3
	}
	return 8 << 30
}

// checkBudget returns an ErrRange error naming file when a declared size
// needs more than budget bytes.
func checkBudget(file, what string, need, budget int64) error {
	if need < 0 || need > budget {
		return ferr(ErrRange, file, 0, 0, "%s would need %s, more than the memory budget of %s: raise it with --max-memory if that size is right, otherwise the input is wrong or corrupt",
			what, FormatBytes(need), FormatBytes(budget))
	}
	return nil
}

// FormatBytes formats a byte count with a binary unit ("1.5 GiB").
func FormatBytes(n int64) string {
	if n < 0 {
		return "more than 8 EiB"
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// checkRegular refuses a path that is not a regular file or directory
// (a FIFO would block the open, a device would stream without end).
func checkRegular(path string, st fs.FileInfo) error {
	m := st.Mode()
	if m.IsRegular() || m.IsDir() {
		return nil
	}
	kind := "a special file"
	switch {
	case m&fs.ModeNamedPipe != 0:
		kind = "a FIFO"
	case m&fs.ModeCharDevice != 0:
		kind = "a character device"
	case m&fs.ModeDevice != 0:
		kind = "a block device"
	case m&fs.ModeSocket != 0:
		kind = "a socket"
	}
	return ferr(ErrFormat, path, 0, 0, "is %s, not a regular file; give a dataset file or directory", kind)
}

// statRegular stats path (following links) and refuses special files.
func statRegular(path string) (os.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	return st, checkRegular(path, st)
}

// OpenContext is Open with a context: it returns ctx.Err() as soon as ctx
// is cancelled (the loader goroutine is abandoned and its result
// dropped), and it applies the memory budget of WithMaxMemory.
func OpenContext(ctx context.Context, spec string) (*Dataset, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	type result struct {
		d   *Dataset
		err error
	}
	done := make(chan result, 1)
	go func() {
		d, err := open(spec, MaxMemory(ctx))
		done <- result{d, err}
	}()
	select {
	case r := <-done:
		return r.d, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
