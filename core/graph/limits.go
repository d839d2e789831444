package graph

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"strata/core/metrics"
	"strata/core/safefile"
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

// Spend is what one load has allocated against its memory budget: every
// array a loader allocates is charged before it is allocated, so many
// arrays that each fit cannot together pass the budget (a zip bomb of
// several members, a conversion that doubles an array).
type Spend struct {
	Budget int64 // bytes; <= 0: DefaultMaxMemory
	used   int64
}

// Charge adds need bytes, the size of what (an array of file) about to be
// allocated, or returns CheckBudget's error when the load would then need
// more than the budget (need < 0: an overflowed size).
func (s *Spend) Charge(file, what string, need int64) error {
	total := s.used + need
	if need < 0 || total < 0 {
		total = -1
	}
	if s.used > 0 {
		what += fmt.Sprintf(" (with the %s loaded before it)", FormatBytes(s.used))
	}
	if err := CheckBudget(file, what, total, BudgetOr(s.Budget)); err != nil {
		return err
	}
	s.used = total
	return nil
}

// Left is what remains of the budget.
func (s *Spend) Left() int64 { return BudgetOr(s.Budget) - s.used }

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
	if st.IsDir() {
		return nil
	}
	return fileError(path, "", safefile.CheckInput(path, st))
}

// OpenFile opens the dataset file path for reading through the read gate
// (safefile.Open) and returns it with its size. A special file or a
// directory is refused before it is opened (opening a FIFO would block, a
// device would stream without end); a missing one is ErrMissing, "file
// does not exist" then "; " and hint when hint is set; any other failure
// names the file.
func OpenFile(path, hint string) (*os.File, int64, error) {
	f, st, err := safefile.Open(path)
	if err != nil {
		return nil, 0, fileError(path, hint, err)
	}
	return f, st.Size(), nil
}

// fileError is the FileError of a refusal or failure of the read gate
// (safefile) on path; nil for nil.
func fileError(path, hint string, err error) error {
	var nr *safefile.NotRegularError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &nr) && nr.Mode.IsDir():
		return FileErrorf(ErrFormat, path, 0, 0, "is a directory, not a file; give the dataset file itself (or the directory as the dataset)")
	case errors.As(err, &nr):
		return FileErrorf(ErrFormat, path, 0, 0, "is %s, not a regular file; give a dataset file or directory", nr.Kind())
	case errors.Is(err, fs.ErrNotExist):
		msg := "file does not exist"
		if hint != "" {
			msg += "; " + hint
		}
		return FileErrorf(ErrMissing, path, 0, 0, "%s", msg)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return FileErrorf(ErrMissing, path, 0, 0, "cannot open: %v", err)
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
		d, err := open(spec, LoadOptions{Ctx: ctx, Budget: MaxMemory(ctx), Rows: rows, Keep: keep, Regression: RegressionFrom(ctx)})
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
