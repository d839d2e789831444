package train

import (
	"fmt"
	"os"
	"path/filepath"

	"strata/core/config"
	"strata/core/safefile"
)

// StatusFailed is Result.Status of a run whose output.checkpoint or
// output.model could not be written: the result of its finished epochs
// is printed, output.csv and output.log are committed, and it fails.
const StatusFailed = "failed"

// OutputError is a failed write of output.checkpoint or output.model (a
// full disk, a path replaced while the run trained). The run ends with
// its finished epochs kept: Run returns it with the Result (Status
// "failed"), which the CLI prints before exiting with code 1.
type OutputError struct {
	Key string // "output.checkpoint" or "output.model"
	Err error
}

func (e *OutputError) Error() string { return e.Key + ": " + e.Err.Error() }
func (e *OutputError) Unwrap() error { return e.Err }

// runOutput is one file a run writes, by its key in [output].
type runOutput struct{ key, path string }

// runOutputs are the files a run of cfg writes: output.csv, output.log,
// output.checkpoint (when train.checkpoint_every writes it) and
// output.model, those that are set.
func runOutputs(cfg *config.Config) []runOutput {
	var outs []runOutput
	add := func(key, path string) {
		if path != "" {
			outs = append(outs, runOutput{"output." + key, path})
		}
	}
	add("csv", cfg.CSVPath())
	add("log", cfg.LogPath())
	if cfg.Train.CheckpointEvery > 0 {
		add("checkpoint", cfg.CheckpointPath())
	}
	add("model", cfg.ModelPath())
	return outs
}

// CheckOutputs validates every output of a run before it loads anything,
// so that a bad path fails at once and not after the last epoch: each is
// a regular file or can be created in an existing directory, none is an
// input of the run, no two are the same file, and each one's lock is
// free (taken and released: the run takes it again when it opens the
// output). The error names the key.
func CheckOutputs(cfg *config.Config) error {
	outs := runOutputs(cfg)
	inputs := outputInputs(cfg)
	for i, o := range outs {
		if err := safefile.CheckOutput(o.path, inputs...); err != nil {
			return fmt.Errorf("%s: %w", o.key, err)
		}
		for _, p := range outs[:i] {
			if samePath(p.path, o.path) {
				return fmt.Errorf("%s and %s are the same file %s: one would overwrite the other; give each output a path of its own: %w", p.key, o.key, o.path, safefile.ErrUnsafe)
			}
		}
		lock, err := safefile.Acquire(o.path)
		if err != nil {
			return fmt.Errorf("%s: %w", o.key, err)
		}
		lock.Release()
	}
	return nil
}

// OutputKeyAt returns the key of the output of a run of cfg that path
// names (output.csv, output.log, output.checkpoint, output.model), or ""
// when it names none: a strategy's own files (chunked.host_file) must not
// be one of them.
func OutputKeyAt(cfg *config.Config, path string) string {
	for _, o := range runOutputs(cfg) {
		if samePath(o.path, path) {
			return o.key
		}
	}
	return ""
}

// samePath reports whether a and b name the same file: the same absolute
// path, the same existing file (through links), or the same name in the
// same directory.
func samePath(a, b string) bool {
	aa, erra := filepath.Abs(a)
	ab, errb := filepath.Abs(b)
	if erra == nil && errb == nil && aa == ab {
		return true
	}
	sa, erra := os.Stat(a)
	sb, errb := os.Stat(b)
	if erra == nil && errb == nil {
		return os.SameFile(sa, sb)
	}
	if filepath.Base(a) != filepath.Base(b) {
		return false
	}
	da, erra := os.Stat(filepath.Dir(a))
	db, errb := os.Stat(filepath.Dir(b))
	return erra == nil && errb == nil && os.SameFile(da, db)
}
