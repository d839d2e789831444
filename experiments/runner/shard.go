package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"strata/core/safefile"
)

// Shard is one share of an experiment's runs on a cluster: the runs whose
// index (0-based, in expansion order) is Index modulo Count. A shard runs
// into its own directory, ShardDir, so that shards running at the same
// time never write the same file; Merge assembles their results.
type Shard struct {
	Index, Count int
}

// ParseShard reads "i/N" (0 <= i < N): the form of --shard and of Slurm's
// SLURM_ARRAY_TASK_ID / SLURM_ARRAY_TASK_COUNT.
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	switch {
	case !ok || err1 != nil || err2 != nil:
		return Shard{}, fmt.Errorf("%q is not i/N (shard i of N, 0-based: 0/4 to 3/4)", s)
	case n < 1:
		return Shard{}, fmt.Errorf("%q: the shard count N must be at least 1", s)
	case i < 0 || i >= n:
		return Shard{}, fmt.Errorf("%q: the shard index must be in [0, %d) (0-based, as Slurm's --array=0-%d)", s, n, n-1)
	}
	return Shard{Index: i, Count: n}, nil
}

// String is "i/N".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Has reports whether the shard runs r.
func (s Shard) Has(r *Run) bool { return s.Count <= 1 || r.Index%s.Count == s.Index }

// ShardDir is the results directory of shard s of the results directory
// out: out/shards/<i>-of-<N>.
func ShardDir(out string, s Shard) string {
	return filepath.Join(out, "shards", fmt.Sprintf("%d-of-%d", s.Index, s.Count))
}

// MergeReport is what Merge found.
type MergeReport struct {
	Copied  int    // results copied from the shards into out/runs
	Missing []*Run // runs with a result neither in out nor in any shard
}

// Merge copies into out/runs the result of every run of the plan that out
// lacks and a shard directory of out (out/shards/*) holds, made by the
// code of opts (Binary, Numerics: a shard's result of other code counts
// as missing). It writes no report: Execute then finds every run done and
// writes them (and runs whatever is missing, unless the caller stops
// first).
func Merge(p *Plan, out string, opts Options) (*MergeReport, error) {
	dirs, err := filepath.Glob(filepath.Join(out, "shards", "*-of-*"))
	if err != nil {
		return nil, err
	}
	k, keys, err := codeKeys(p, opts)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(out, "runs"), 0o755); err != nil {
		return nil, err
	}
	rep := &MergeReport{}
	inputs := p.inputs()
	for _, r := range p.Runs {
		if rec, _ := loadRecord(out, r, p.Exp, k, keys[r.ID]); rec != nil {
			continue
		}
		found := false
		for _, d := range dirs {
			if rec, _ := loadRecord(d, r, p.Exp, k, keys[r.ID]); rec == nil {
				continue
			}
			b, err := safefile.ReadFile(filepath.Join(d, "runs", r.ID+".json"), MaxResultBytes)
			if err != nil {
				return nil, err
			}
			if err := writeFile(filepath.Join(out, "runs", r.ID+".json"), b, inputs...); err != nil {
				return nil, fmt.Errorf("merging %s: %w", d, err)
			}
			rep.Copied++
			found = true
			break
		}
		if !found {
			rep.Missing = append(rep.Missing, r)
		}
	}
	return rep, nil
}
