package graph

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"strata/core/metrics"
)

// Bounds on what a dataset file may declare, checked before allocating.
const (
	// MaxClasses bounds a dataset's class count (the model's output width).
	MaxClasses = 1 << 16
	// MaxLineBytes bounds one line of a text dataset file.
	MaxLineBytes = 16 << 20
	// MaxGzipRatio bounds how much text one compressed byte may expand
	// to (deflate's limit is about 1032:1).
	MaxGzipRatio = 1032
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

// CheckBudget returns an ErrRange error naming file when a declared size
// needs more than budget bytes.
func CheckBudget(file, what string, need, budget int64) error {
	if need < 0 || need > budget {
		return FileErrorf(ErrRange, file, 0, 0, "%s would need %s, more than the memory budget of %s: raise it with --max-memory if that size is right, otherwise the input is wrong or corrupt",
			what, FormatBytes(need), FormatBytes(budget))
	}
	return nil
}

// BudgetOr returns budget, or DefaultMaxMemory when budget <= 0.
func BudgetOr(budget int64) int64 {
	if budget <= 0 {
		return DefaultMaxMemory()
	}
	return budget
}

// FormatBytes formats a byte count with a binary unit ("1.5 GiB").
func FormatBytes(n int64) string { return metrics.FormatBytes(n) }

// CheckRegular refuses a path that is not a regular file or directory
// (a FIFO would block the open, a device would stream without end).
func CheckRegular(path string, st fs.FileInfo) error {
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
	return FileErrorf(ErrFormat, path, 0, 0, "is %s, not a regular file; give a dataset file or directory", kind)
}

// OpenFile opens the dataset file path for reading and returns it with its
// size. A special file is refused before it is opened (opening a FIFO
// would block); a missing one is ErrMissing, "file does not exist" then
// "; " and hint when hint is set; any other failure names the file.
func OpenFile(path, hint string) (*os.File, int64, error) {
	if _, err := StatRegular(path); err != nil {
		var fe *FileError
		if errors.As(err, &fe) {
			return nil, 0, err
		}
	}
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			msg := "file does not exist"
			if hint != "" {
				msg += "; " + hint
			}
			return nil, 0, FileErrorf(ErrMissing, path, 0, 0, "%s", msg)
		}
		return nil, 0, FileErrorf(ErrMissing, path, 0, 0, "cannot open: %v", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, FileErrorf(ErrFormat, path, 0, 0, "cannot stat: %v", err)
	}
	return f, st.Size(), nil
}

// StatRegular stats path (following links) and refuses special files.
func StatRegular(path string) (os.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	return st, CheckRegular(path, st)
}

// OpenContext is Open with a context: it returns ctx.Err() as soon as ctx
// is cancelled (the loader goroutine is abandoned and its result
// dropped), and it applies the memory budget of WithMaxMemory.
func OpenContext(ctx context.Context, spec string) (*Dataset, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if lp, ok := LoadProgressFrom(ctx); ok {
		var d *Dataset
		ctx = context.WithValue(ctx, loadProgressKey{}, nil) // shown once, not by nested opens
		err := metrics.TrackIO(lp.W, metrics.IOTrack{Label: lp.Label, Verb: "read", Total: SpecBytes(spec), Counter: "rchar", Quiet: lp.Quiet, Every: lp.Every},
			func() error {
				var err error
				d, err = OpenContext(ctx, spec)
				return err
			})
		return d, err
	}
	type result struct {
		d   *Dataset
		err error
	}
	done := make(chan result, 1)
	go func() {
		rows, keep := featureRowsFrom(ctx)
		d, err := open(spec, LoadOptions{Ctx: ctx, Budget: MaxMemory(ctx), Rows: rows, Keep: keep})
		if err == nil && keep {
			err = d.keepFeatureRows(rows)
		}
		done <- result{d, err}
	}()
	select {
	case r := <-done:
		return r.d, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// LoadProgress asks OpenContext to show a load's progress on W: nothing
// for a load that ends within Quiet, then a bar (on a terminal) or a plain
// line every Every with the bytes read so far and an ETA. Progress is the
// process's bytes read (Linux /proc/self/io) against the size of the
// dataset's files, so the loaders need no hooks; where either is unknown
// (other systems, embedded and R-MAT datasets) nothing is shown.
type LoadProgress struct {
	W            io.Writer
	Label        string
	Quiet, Every time.Duration
}

type loadProgressKey struct{}

// WithLoadProgress returns ctx asking OpenContext to show progress as lp
// says (lp.W nil: none).
func WithLoadProgress(ctx context.Context, lp LoadProgress) context.Context {
	if lp.W == nil {
		return ctx
	}
	return context.WithValue(ctx, loadProgressKey{}, lp)
}

// LoadProgressFrom returns the LoadProgress ctx carries, if any.
func LoadProgressFrom(ctx context.Context) (LoadProgress, bool) {
	lp, ok := ctx.Value(loadProgressKey{}).(LoadProgress)
	return lp, ok
}

// SpecBytes is the size of the files a dataset spec names (0 if unknown).
func SpecBytes(spec string) int64 {
	if i := strings.LastIndexByte(spec, '@'); i > 0 {
		if _, err := os.Stat(spec); err != nil {
			spec = spec[:i]
		}
	}
	st, err := os.Stat(spec)
	if err != nil {
		return 0
	}
	if !st.IsDir() {
		return st.Size()
	}
	var total int64
	filepath.WalkDir(spec, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			if info, err := e.Info(); err == nil {
				total += info.Size()
			}
		}
		return nil
	})
	return total
}

// MaxFeatureValues bounds N x FeatDim (64 GiB of float32) to catch absurd inputs.
const MaxFeatureValues = 1 << 34

// MaxNodes bounds the node count a text file may declare.
const MaxNodes = 1 << 36

// BytesPerNode is what loading costs per declared node (labels, CSR
// offsets, split bookkeeping), for the memory budget.
const BytesPerNode = 32
