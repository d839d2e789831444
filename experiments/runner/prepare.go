package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"strata/core/config"
	"strata/core/graph"
	"strata/core/graph/formats"
	"strata/core/safefile"
)

// Prepared is one [[prepare]]: a dataset converted to a .strata binary
// file before the runs, for runs that need one (a disk feature tier reads
// its rows from such a file). The file is derived from the spec, so it is
// not committed: every machine makes its own, once.
type Prepared struct {
	Dataset string // the dataset spec converted, as written
	spec    string // Dataset resolved as data.dataset is (a relative path against the experiment file)
	File    string // the .strata file, resolved against the experiment file's directory
	Line    int
}

// prepareTable is one [[prepare]] as decoded.
type prepareTable struct {
	config.Pos
	Dataset string `toml:"dataset" required:"true" example:"rmat-18-16-128-16-0" doc:"a dataset spec (as data.dataset) to convert"`
	File    string `toml:"file" required:"true" example:"data/rmat-18.strata" doc:"the .strata file it becomes, relative to the experiment file (experiments/data/ is not committed); the runs name it in data.dataset"`
}

// preparedSource is the sidecar <file>.source: what the file was made
// from, so a later run reuses it only when the spec is the same.
type preparedSource struct {
	Dataset string `json:"dataset"`
	Format  string `json:"format"`
}

// preparedFormat names the file format the sidecar vouches for.
const preparedFormat = "STRATAG1"

// parsePrepare checks the [[prepare]] tables.
func (e *Experiment) parsePrepare(el *errorList, list []prepareTable) {
	seen := map[string]int{}
	for _, t := range list {
		if !t.Has("dataset") || !t.Has("file") || el.bad(t.Pos, "dataset") || el.bad(t.Pos, "file") {
			continue
		}
		line := t.KeyLine("file")
		switch {
		case strings.TrimSpace(t.Dataset) == "":
			el.at(t.Pos, "dataset", "prepare.dataset must name a dataset spec, e.g. \"rmat-18-16-128-16-0\"")
			continue
		case filepath.Ext(t.File) != ".strata" || filepath.IsAbs(t.File):
			el.at(t.Pos, "file", "prepare.file %q: want a relative path ending in .strata (e.g. \"data/rmat-18.strata\")", t.File)
			continue
		}
		file := filepath.Join(filepath.Dir(e.File), t.File)
		if prev, dup := seen[file]; dup {
			el.at(t.Pos, "file", "prepare.file %q is also prepared on line %d; give each dataset a file of its own", t.File, prev)
			continue
		}
		seen[file] = line
		spec, _ := e.resolveValue(Axis{Key: "data.dataset"}, t.Dataset).(string)
		e.Prepare = append(e.Prepare, Prepared{Dataset: t.Dataset, spec: spec, File: file, Line: line})
	}
}

// prepare makes every [[prepare]] file that is missing, and refuses one
// that exists but was not made from its spec (nothing is overwritten).
func (p *Plan) prepare(ctx context.Context, progress io.Writer) error {
	for _, pr := range p.Exp.Prepare {
		if err := pr.make(ctx, progress); err != nil {
			return &config.Error{File: p.Exp.File, Line: pr.Line, Key: "prepare.file", Msg: err.Error()}
		}
	}
	return nil
}

// make converts pr.Dataset into pr.File unless the file is already there
// and its sidecar names the same spec.
func (pr Prepared) make(ctx context.Context, progress io.Writer) error {
	side := pr.File + ".source"
	if ok, err := pr.upToDate(side); err != nil || ok {
		return err // the common case: made before, no lock needed
	}
	if err := os.MkdirAll(filepath.Dir(pr.File), 0o755); err != nil {
		return err
	}
	lock, err := safefile.Acquire(pr.File)
	if err != nil {
		return err
	}
	defer lock.Release()
	// Again under the lock: another invocation may have made it meanwhile.
	if ok, err := pr.upToDate(side); err != nil || ok {
		return err
	}
	if _, err := os.Lstat(pr.File); err == nil {
		return fmt.Errorf("%s exists but %s does not say it was prepared from %q; remove both (or choose another file) and run again", pr.File, side, pr.Dataset)
	}
	if progress == nil {
		progress = io.Discard
	}
	fmt.Fprintf(progress, "prepare: converting %s into %s\n", pr.Dataset, pr.File)
	ds, err := graph.OpenContext(graph.WithLoadProgress(ctx, graph.LoadProgress{W: progress, Label: "prepare: loading"}), pr.spec)
	if err != nil {
		return fmt.Errorf("prepare.dataset %q: %w", pr.Dataset, err)
	}
	if err := formats.WriteBinaryContext(ctx, pr.File, ds); err != nil {
		return err
	}
	data, err := json.Marshal(preparedSource{Dataset: pr.Dataset, Format: preparedFormat})
	if err != nil {
		return err
	}
	return safefile.WriteFile(side, append(data, '\n'), pr.File)
}

// upToDate reports whether pr.File exists with a sidecar naming pr's
// spec; a sidecar naming another spec is an error (the file is not
// replaced behind the user's back).
func (pr Prepared) upToDate(side string) (bool, error) {
	data, err := safefile.ReadFile(side, 1<<16)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var src preparedSource
	if err := json.Unmarshal(data, &src); err != nil {
		return false, fmt.Errorf("%s: %w; remove it and %s and run again", side, err, pr.File)
	}
	if src.Dataset != pr.Dataset || src.Format != preparedFormat {
		return false, fmt.Errorf("%s was prepared from %q (%s), not %q; remove it and %s (or choose another file) and run again", pr.File, src.Dataset, src.Format, pr.Dataset, side)
	}
	if _, err := os.Stat(pr.File); err != nil {
		return false, fmt.Errorf("%s names %s, which is missing (%w); remove %s and run again", side, pr.File, err, side)
	}
	return true, nil
}
