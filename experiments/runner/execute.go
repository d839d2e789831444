package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"strata/core/config"
	"strata/core/safefile"
	"strata/core/train"
	"strata/experiments/runner/numerics"
)

// TrainFunc trains one config (train.Run in the CLI; tests count calls).
type TrainFunc func(ctx context.Context, cfg *config.Config) (*train.Result, error)

// RunFunc runs one config and returns its result, a JSON object whose
// numeric fields are the metrics.
type RunFunc func(ctx context.Context, cfg *config.Config) (any, error)

// Options are the run-time settings of an experiment.
type Options struct {
	OutDir   string    // results directory; "" = DefaultOutDir
	Jobs     int       // runs at a time (<= 1: in sequence)
	Train    TrainFunc // runs of kind train (required for them)
	Progress io.Writer // one line per run; nil = none
	// Run, when set, runs every run instead of the kind's own function
	// (tests, other drivers).
	Run RunFunc
	// Fresh ignores and replaces the stored results: every run runs again.
	Fresh bool
	// Shard, when Count > 1, runs only the shard's runs (OutDir should be
	// its ShardDir); the reports show the others as not run.
	Shard Shard
	// Select, when set, runs only the runs it accepts (the others are
	// left as not run), like a shard.
	Select func(*Run) bool
	// SkipReports writes only the runs' results, no report (a rerun of
	// --check, which compares them itself).
	SkipReports bool
	// ReportsOnly runs nothing: it rewrites the reports (tables, plots,
	// report.html) from the stored results, whatever code made them (a
	// change of the report code alone; the provenance keeps each run's
	// revision). Every run must have a stored result.
	ReportsOnly bool
	// Binary is the digest of the code that runs (BinaryDigest; "" =
	// computed) and Numerics its kernel choices (nil =
	// numerics.Current(false)): with the modules a run loads, they make
	// the code key under which a stored result is reused.
	Binary   string
	Numerics *numerics.Numerics
	// Force writes results into a git work tree that has uncommitted
	// changes, or with a binary not built at its HEAD (PublishError).
	Force bool
	// Stamp is the revision the strata binary was built at, for the
	// publishing gate; nil = its Go VCS stamp (vcs.revision). The CLI
	// passes the revision make build links in where Go stamped none.
	Stamp *Revision
}

// DefaultOutDir is results/<name> next to the experiment file
// (experiments/results/<name> for experiments/<name>.toml).
func DefaultOutDir(e *Experiment) string {
	return filepath.Join(filepath.Dir(e.File), "results", e.Name)
}

// Record is the stored outcome of one run, runs/<run_id>.json in the
// results directory.
type Record struct {
	RunID      string         `json:"run_id"`
	Experiment string         `json:"experiment"`
	Axes       map[string]any `json:"axes"`
	Seed       int64          `json:"seed"`
	Status     string         `json:"status"` // ok, failed
	Error      string         `json:"error,omitempty"`
	// Expected is why the experiment expects this run to fail
	// ([[expected_failure]]); such a failure is stored like a result.
	Expected  string    `json:"expected_failure,omitempty"`
	Started   time.Time `json:"started"`
	DurationS float64   `json:"duration_s"`
	Threads   int       `json:"threads"`
	Version   string    `json:"version"`
	// Revision and Dirty are the source revision the run ran at and
	// whether its work tree had uncommitted changes (see Revision).
	Revision string `json:"revision,omitempty"`
	Dirty    *bool  `json:"dirty,omitempty"`
	// Code is the run's code key: the binary and its libraries
	// (Binary), the numerics and the module files it loaded. A stored
	// result is reused only under the same key.
	Code     string             `json:"code,omitempty"`
	Binary   string             `json:"binary_sha256,omitempty"`
	Numerics *numerics.Numerics `json:"numerics,omitempty"`
	Config   string             `json:"config"` // canonical TOML, before the thread split
	// Result is the run's result: *train.Result for kind train (the JSON
	// line of strata train), the kind's result type for the others, and
	// decoded JSON for a stored record.
	Result any `json:"result,omitempty"`

	// Skipped is true when the record was found in the results directory
	// (a finished run of an earlier invocation) instead of being run now.
	Skipped bool `json:"-"`

	values map[string]float64 // flattened Result, by metric name
}

// Metric returns a metric of the run's result: a numeric field
// ("test_acc") or an entry of a map or list ("peak_tier_bytes.device0").
func (r *Record) Metric(name string) (float64, bool) {
	if r == nil || r.Result == nil {
		return 0, false
	}
	if r.values == nil {
		v, err := flatten(r.Result)
		if err != nil {
			return 0, false
		}
		r.values = v
	}
	v, ok := r.values[name]
	return v, ok
}

// Summary is what Execute did, printed by the CLI as its last line.
type Summary struct {
	Experiment string `json:"experiment"`
	Runs       int    `json:"runs"`
	Executed   int    `json:"executed"`
	Skipped    int    `json:"skipped"`
	// Failed counts the failures the experiment does not expect (they
	// make the sweep fail); ExpectedFailed those it declares.
	Failed         int `json:"failed"`
	ExpectedFailed int `json:"expected_failed,omitempty"`
	// Stale counts the stored results of other code (binary, modules or
	// numerics) that ran again.
	Stale int `json:"stale,omitempty"`
	// Succeeded lists the runs declared to fail that succeeded.
	Succeeded []string `json:"expected_failures_succeeded,omitempty"`
	Out       string   `json:"out"`
	DryRun    bool     `json:"dry_run,omitempty"`
	Shard     string   `json:"shard,omitempty"`  // "i/N" for a shard's run
	Merged    int      `json:"merged,omitempty"` // results --merge copied from the shards
	// Kept lists the files of runs/ that --fresh left because strata
	// did not write them (not named <run id>.json).
	Kept []string `json:"kept,omitempty"`
}

// Execute runs the plan's runs that have no stored result of the current
// code yet, then writes the reports. Failed runs are recorded and do not
// stop the others (they run again on the next invocation, unless the
// experiment expects them to fail). On cancellation the runs in flight
// are abandoned, the reports are written for the finished ones and the
// context's error is returned.
func Execute(ctx context.Context, p *Plan, opts Options) (*Summary, []*Record, error) {
	if opts.Train == nil && opts.Run == nil && p.Exp.Kind.Name == "train" {
		return nil, nil, errors.New("runner: Options.Train is not set")
	}
	started := time.Now()
	out := opts.OutDir
	if out == "" {
		out = DefaultOutDir(p.Exp)
	}
	env, err := newRunEnv(p, opts, out)
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, nil, err
	}
	// One invocation at a time per results directory.
	lock, err := safefile.Acquire(out)
	if err != nil {
		return nil, nil, err
	}
	defer lock.Release()
	if err := p.prepare(ctx, opts.Progress); err != nil {
		return nil, nil, err
	}
	env.inputs = p.inputs()
	if err := checkOutputs(p, out, env.inputs); err != nil {
		return nil, nil, err
	}
	var kept []string
	if opts.Fresh {
		if kept, err = removeRuns(out); err != nil {
			return nil, nil, err
		}
		if len(kept) > 0 && opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "experiment %s: --fresh removed the stored results; kept %d files in %s that strata did not write: %s\n",
				p.Exp.Name, len(kept), filepath.Join(out, "runs"), strings.Join(kept, ", "))
		}
	}
	if err := os.MkdirAll(filepath.Join(out, "runs"), 0o755); err != nil {
		return nil, nil, err
	}
	removeStaleTemps(out)
	st := env.scan(p, out)
	if opts.ReportsOnly && len(st.pending) > 0 {
		r := st.pending[0]
		return nil, nil, fmt.Errorf("experiment %s: --reports-only: %d of %d runs have no stored result in %s (the first: [%d] %s); run the experiment to make them", p.Exp.Name, len(st.pending), st.mine, out, r.Index+1, r.Label())
	}
	sum := &Summary{Experiment: p.Exp.Name, Runs: st.mine, Skipped: st.mine - len(st.pending), Stale: st.stale, Out: out, Kept: kept}
	if opts.Shard.Count > 1 {
		sum.Shard = opts.Shard.String()
	}
	prog := &progress{w: opts.Progress, total: st.mine, done: sum.Skipped, start: time.Now()}
	if sum.Skipped > 0 {
		prog.printf("experiment %s: %d of %d runs already done in %s, skipped", p.Exp.Name, sum.Skipped, st.mine, out)
	}
	for _, why := range st.staleWhy {
		prog.printf("experiment %s: %s", p.Exp.Name, why)
	}
	records, writeErr := env.runAll(ctx, p, st, out, prog)
	tally(p, records, sum)
	if opts.SkipReports {
		return sum, records, errors.Join(writeErr, ctx.Err())
	}
	// The reports cover what finished, even when some results could not
	// be stored.
	end := time.Now()
	if opts.ReportsOnly || sum.Executed == 0 && sum.Failed == 0 && sum.ExpectedFailed == 0 {
		end = time.Time{} // nothing ran: keep the reports' invocation as it was
	}
	repErr := writeReports(p, records, out, started, end, env.memo)
	if writeErr != nil {
		return sum, records, errors.Join(fmt.Errorf("storing a run result: %w", writeErr), repErr)
	}
	if repErr != nil {
		return sum, records, repErr
	}
	return sum, records, ctx.Err()
}

// newRunEnv prepares what the runs share: the revision and the code keys
// of the runs; it refuses to write into a git work tree whose state would
// not name one clean revision (PublishError), unless opts.Force.
func newRunEnv(p *Plan, opts Options, out string) (*runEnv, error) {
	env := &runEnv{exp: p.Exp, opts: opts, memo: &memo{}, version: p.build()}
	env.rev = sourceRevision(filepath.Dir(p.Exp.File), resultsDirs(p.Exp, out)...)
	stamp := buildRevision()
	if opts.Stamp != nil {
		stamp = *opts.Stamp
	}
	if probs := publishProblems(p.Exp, out, stamp); len(probs) > 0 {
		if !opts.Force {
			return nil, &PublishError{Out: out, Problems: probs}
		}
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "experiment %s: --force: writing into %s although:\n  %s\n", p.Exp.Name, out, strings.Join(probs, "\n  "))
		}
	}
	var err error
	env.keyer, env.keys, err = codeKeys(p, opts)
	return env, err
}

// runAll runs the pending runs, opts.Jobs at a time, storing each result
// (and each expected failure) as it finishes.
func (env *runEnv) runAll(ctx context.Context, p *Plan, st *scanned, out string, prog *progress) ([]*Record, error) {
	opts := env.opts
	records := st.records
	jobs := max(opts.Jobs, 1)
	threads := 0
	if jobs > 1 {
		threads = max(1, runtime.NumCPU()/jobs)
	}
	work := make(chan *Run)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var writeErr error
	for range min(jobs, max(len(st.pending), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range work {
				rec := execute(ctx, p, r, env, threads)
				if rec == nil { // cancelled
					continue
				}
				if rec.Status == "ok" || rec.Expected != "" {
					if err := writeJSON(filepath.Join(out, "runs", r.ID+".json"), rec, env.inputs...); err != nil {
						// Not stored, so not done: it counts as failed
						// and runs again on the next invocation.
						rec.Status, rec.Error, rec.Expected = "failed", "storing the result: "+err.Error(), ""
						mu.Lock()
						writeErr = errors.Join(writeErr, err)
						mu.Unlock()
					}
				}
				mu.Lock()
				records[r.Index] = rec
				prog.run(r, rec, p.Exp.Metrics)
				mu.Unlock()
			}
		}()
	}
feed:
	for _, r := range st.pending {
		select {
		case work <- r:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	return records, writeErr
}

// tally counts the records into the summary.
func tally(p *Plan, records []*Record, sum *Summary) {
	for _, rec := range records {
		switch {
		case rec == nil:
		case rec.Status != "ok" && rec.Expected != "":
			sum.ExpectedFailed++
		case rec.Status != "ok":
			sum.Failed++
		case !rec.Skipped:
			sum.Executed++
		}
	}
	for _, r := range p.Runs {
		if rec := records[r.Index]; rec != nil && rec.Status == "ok" && !rec.Skipped && p.Exp.ExpectedFailure(r) != nil {
			sum.Succeeded = append(sum.Succeeded, r.Label())
		}
	}
}

// execute runs one run; nil when the context was cancelled.
func execute(ctx context.Context, p *Plan, r *Run, env *runEnv, threads int) *Record {
	opts := env.opts
	if ctx.Err() != nil {
		return nil
	}
	canon, _ := r.Config.Canonical()
	rec := &Record{RunID: r.ID, Experiment: p.Exp.Name, Axes: axisMap(r.Cell), Seed: r.Seed,
		Version: p.build(), Config: string(canon), Started: time.Now().UTC(),
		Revision: env.rev.Revision, Dirty: env.rev.Dirty,
		Code: env.keys[r.ID], Binary: env.keyer.binary, Numerics: &env.keyer.numerics}
	cfg := *r.Config // the plan keeps its config as validated
	if threads > 0 && cfg.Train.Threads == 0 {
		cfg.Train.Threads = threads
	}
	rec.Threads = cfg.Train.Threads
	if max(opts.Jobs, 1) == 1 {
		resetPeakRSS()
	}
	run := opts.Run
	if run == nil {
		run = func(ctx context.Context, cfg *config.Config) (any, error) { return p.Exp.Kind.run(ctx, env, cfg) }
	}
	res, err := runSafely(ctx, run, &cfg)
	rec.DurationS = time.Since(rec.Started).Seconds()
	if err != nil && (ctx.Err() != nil || errors.Is(err, context.Canceled)) {
		return nil
	}
	if err == nil && (res == nil || reflect.ValueOf(res).Kind() == reflect.Pointer && reflect.ValueOf(res).IsNil()) {
		err = errors.New("the run returned no result")
	}
	if err != nil {
		rec.Status, rec.Error = "failed", err.Error()
		if f := p.Exp.ExpectedFailure(r); f != nil {
			rec.Expected = f.Why
		}
		return rec
	}
	rec.Status, rec.Result = "ok", res
	if tr, ok := res.(*train.Result); ok && tr.Threads > 0 {
		rec.Threads = tr.Threads
	}
	return rec
}

// runSafely turns a panic of a run into its error, so one run cannot take
// the others down.
func runSafely(ctx context.Context, f RunFunc, cfg *config.Config) (res any, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("panic: %v", r)
		}
	}()
	return f(ctx, cfg)
}

func axisMap(c *Cell) map[string]any {
	m := make(map[string]any, len(c.Values))
	for i, v := range c.Values {
		m[c.axes[i].Key] = v
	}
	return m
}

// removeStaleTemps deletes the temporary files that an invocation killed
// in the middle of a write left in out, so that a results directory holds
// only finished files: those of the write gate whose writer is dead, and
// nothing else (safefile.RemoveStaleTemps).
func removeStaleTemps(out string) {
	safefile.RemoveStaleTemps(out, "")
	safefile.RemoveStaleTemps(filepath.Join(out, "runs"), "")
}

// runFileName matches the name of a stored result: <run id>.json, the
// run ID a SHA-256 in hex.
var runFileName = regexp.MustCompile(`^[0-9a-f]{64}\.json$`)

// removeRuns deletes the stored results of out/runs (--fresh): the
// regular files named <run id>.json, and nothing else, which it returns.
// A runs that is not a directory (a symbolic link) is refused.
func removeRuns(out string) ([]string, error) {
	dir := filepath.Join(out, "runs")
	if st, err := os.Lstat(dir); err == nil && !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory (a symbolic link?); strata keeps its results in a directory there: move it away: %w", dir, safefile.ErrUnsafe)
	}
	return safefile.RemoveOwned(dir, runFileName.MatchString)
}

// writeJSON writes v as indented JSON, atomically, refusing any of
// inputs.
func writeJSON(path string, v any, inputs ...string) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(path, append(b, '\n'), inputs...)
}

// writeFile writes data to path atomically (a temporary file in the same
// directory, synced, then renamed over path), refusing a path that is
// one of inputs (the files the experiment reads).
func writeFile(path string, data []byte, inputs ...string) error {
	return safefile.WriteFile(path, data, inputs...)
}

// progress prints one line per finished run with an ETA.
type progress struct {
	w           io.Writer
	total, done int
	ran         int
	start       time.Time
}

func (p *progress) printf(format string, args ...any) {
	if p.w != nil {
		fmt.Fprintf(p.w, format+"\n", args...)
	}
}

func (p *progress) run(r *Run, rec *Record, metrics []string) {
	p.done++
	p.ran++
	elapsed := time.Since(p.start)
	left := p.total - p.done
	eta := time.Duration(float64(elapsed) / float64(p.ran) * float64(left))
	var b strings.Builder
	if rec.Status == "ok" {
		b.WriteString("ok")
		for _, m := range metrics {
			if v, ok := rec.Metric(m); ok {
				fmt.Fprintf(&b, " %s=%.4g", m, v)
			}
		}
	} else {
		b.WriteString("FAILED: " + rec.Error)
	}
	p.printf("[%d/%d] %s: %s (%.1fs; ETA %s)", p.done, p.total, r.Label(), b.String(), rec.DurationS, eta.Round(time.Second))
}

// resetPeakRSS returns the memory of earlier runs to the OS and resets the
// process's peak RSS to its current RSS (Linux 4.0+; best effort), so that
// the peak_rss_bytes of a run in sequence is its own and not the largest
// of the runs before it. Runs in parallel share one peak.
func resetPeakRSS() {
	debug.FreeOSMemory()
	_ = safefile.WriteProc("clear_refs", []byte("5"))
}
