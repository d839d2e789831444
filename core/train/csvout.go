package train

import (
	"encoding/csv"
	"fmt"

	"strata/core/config"
	"strata/core/graph/formats"
	"strata/core/jsonfloat"
	"strata/core/safefile"
)

// csvOut is output.csv being written: locked against a second writer,
// refused when it names an input, written to a temporary file that
// replaces the target only when the run ends (commit), and flushed after
// every epoch so a failed write (a full disk) stops the run at once.
type csvOut struct {
	w    *csv.Writer
	f    *safefile.File
	lock *safefile.Lock
}

// openCSV starts output.csv at path (resolved against the config's
// directory).
func openCSV(cfg *config.Config, path string) (*csvOut, error) {
	inputs := outputInputs(cfg)
	if err := safefile.CheckOutput(path, inputs...); err != nil {
		return nil, err
	}
	lock, err := safefile.Acquire(path)
	if err != nil {
		return nil, err
	}
	f, err := safefile.Create(path, inputs...)
	if err != nil {
		lock.Release()
		return nil, err
	}
	return &csvOut{w: csv.NewWriter(f), f: f, lock: lock}, nil
}

// write writes one row and flushes it to the file.
func (c *csvOut) write(row []string) error {
	if err := c.w.Write(row); err != nil {
		return fmt.Errorf("output.csv %s: %w", c.f.Name(), err)
	}
	c.w.Flush()
	if err := c.w.Error(); err != nil {
		return fmt.Errorf("output.csv %s: %w", c.f.Name(), err)
	}
	return nil
}

// commit makes the file complete at its path.
func (c *csvOut) commit() error {
	if c == nil {
		return nil
	}
	c.w.Flush()
	err := c.w.Error()
	if err == nil {
		err = c.f.Commit()
	}
	if err != nil {
		return fmt.Errorf("output.csv: %w", err)
	}
	return nil
}

// close drops an uncommitted file and releases the lock; nil-safe.
func (c *csvOut) close() {
	if c == nil {
		return
	}
	c.f.Abort()
	c.lock.Release()
}

// outputInputs are the files a run reads, which no output may overwrite.
func outputInputs(cfg *config.Config) []string {
	inputs := []string{cfg.Path, cfg.DatasetSpec(), cfg.ModulePath()}
	if files, _, err := formats.Sources(cfg.DatasetSpec()); err == nil {
		for _, f := range files {
			inputs = append(inputs, f.Name)
		}
	}
	return inputs
}

// logOut is output.log being written: one JSON line per epoch (the epoch
// record, non-finite numbers as "NaN", "+Inf", "-Inf"), with output.csv's
// safety: locked, never an input, committed atomically when the run ends,
// flushed after every epoch.
type logOut struct {
	f    *safefile.File
	lock *safefile.Lock
}

// openLog starts output.log at path (resolved against the config's
// directory).
func openLog(cfg *config.Config, path string) (*logOut, error) {
	inputs := outputInputs(cfg)
	if err := safefile.CheckOutput(path, inputs...); err != nil {
		return nil, fmt.Errorf("output.log: %w", err)
	}
	lock, err := safefile.Acquire(path)
	if err != nil {
		return nil, fmt.Errorf("output.log: %w", err)
	}
	f, err := safefile.Create(path, inputs...)
	if err != nil {
		lock.Release()
		return nil, fmt.Errorf("output.log: %w", err)
	}
	return &logOut{f: f, lock: lock}, nil
}

// write appends one record as a JSON line; nil-safe.
func (l *logOut) write(rec EpochRecord) error {
	if l == nil {
		return nil
	}
	b, err := jsonfloat.Marshal(rec)
	if err == nil {
		_, err = l.f.Write(append(b, '\n'))
	}
	if err != nil {
		return fmt.Errorf("output.log %s: %w", l.f.Name(), err)
	}
	return nil
}

// commit makes the file complete at its path; nil-safe.
func (l *logOut) commit() error {
	if l == nil {
		return nil
	}
	if err := l.f.Commit(); err != nil {
		return fmt.Errorf("output.log: %w", err)
	}
	return nil
}

// close drops an uncommitted file and releases the lock; nil-safe.
func (l *logOut) close() {
	if l == nil {
		return
	}
	l.f.Abort()
	l.lock.Release()
}
