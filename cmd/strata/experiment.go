package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"strata/core/config"
	"strata/core/safefile"
	"strata/core/train"
	"strata/experiments/runner"
	"strata/experiments/runner/check"
	"strata/experiments/runner/numerics"
	"strata/plugins/wasm"
)

const experimentArgs = "-c FILE [--jobs N] [--out DIR] [--fresh] [--dry-run] [--reports-only] [--shard i/N|slurm | --merge] [--check [--subset]] [--native-numerics] [--force] | --index README"

// experimentFlags are the flags of strata experiment.
type experimentFlags struct {
	path, out, shard, index string
	jobs                    int
	dry, fresh, merge       bool
	reportsOnly             bool
	check, subset           bool
	native, force           bool
	wasm                    wasmFlags
}

func (f *experimentFlags) register(fs *flag.FlagSet) {
	registerConfigFile(fs, &f.path, "experiment file (TOML), e.g. experiments/cora-hidden.toml")
	fs.IntVar(&f.jobs, "jobs", 1, "runs to train at a time (each gets cores/N threads unless train.threads is set)")
	fs.StringVar(&f.out, "out", "", "results directory (default: results/<name> next to the experiment file); with --check, the committed results to compare with")
	fs.BoolVar(&f.dry, "dry-run", false, "validate every run and list them, with what is already done (or stale), without training")
	fs.BoolVar(&f.fresh, "fresh", false, "rerun every run: delete the stored results (runs/) of the results directory first")
	fs.StringVar(&f.shard, "shard", "", "run only shard i of N (0-based: runs whose index is i mod N) into DIR/shards/i-of-N; \"slurm\" reads SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT (docs/experiments.md)")
	fs.BoolVar(&f.reportsOnly, "reports-only", false, "run nothing: rewrite the tables, plots and report.html from the stored results, whatever code made them (after a change of the report code; run --check first to confirm the results still hold)")
	fs.BoolVar(&f.merge, "merge", false, "assemble the shards' results (DIR/shards/*) into DIR and write the reports; runs nothing")
	fs.BoolVar(&f.check, "check", false, "rerun the experiment into a temporary directory and compare every checked column with the committed results (exit 1 on a difference); never writes the results")
	fs.BoolVar(&f.subset, "subset", false, "with --check: rerun only the runs the experiment's [check] table selects")
	fs.BoolVar(&f.native, "native-numerics", false, "run with this machine's own kernels instead of the pinned ones ("+numerics.Pinned().EnvString()+"); with --check, compare even when they differ from the committed results' (a warning)")
	fs.BoolVar(&f.force, "force", false, "write results into a git work tree with uncommitted changes, or with a binary not built at its HEAD (provenance.json records the revision as dirty)")
	fs.StringVar(&f.index, "index", "", "regenerate the index table of `README` (experiments/README.md) from the experiment files beside it and their results; runs nothing")
	f.wasm.register(fs)
}

// validate rejects flag combinations that mean nothing.
func (f *experimentFlags) validate() error {
	switch {
	case f.index != "" && f.path != "":
		return usagef("experiment: --index regenerates the index of every experiment beside README; it takes no -c")
	case f.index != "":
		return nil
	case f.path == "":
		return usagef("experiment: -c FILE is required (try experiments/cora-hidden.toml)")
	case f.jobs < 1:
		return usagef("experiment: --jobs must be at least 1, got %d", f.jobs)
	case f.subset && !f.check:
		return usagef("experiment: --subset selects the runs of --check; give --check too")
	case f.check && (f.merge || f.shard != "" || f.fresh || f.dry || f.force):
		return usagef("experiment: --check reruns into a temporary directory and compares; it takes none of --merge, --shard, --fresh, --dry-run, --force")
	case f.reportsOnly && (f.check || f.merge || f.shard != "" || f.fresh || f.dry):
		return usagef("experiment: --reports-only rewrites the reports from the stored results; it takes none of --check, --merge, --shard, --fresh, --dry-run")
	case f.merge && (f.shard != "" || f.fresh):
		return usagef("experiment: --merge assembles the shards' results; it takes neither --shard nor --fresh")
	}
	if f.out != "" {
		if st, err := os.Stat(f.out); err == nil && !st.IsDir() {
			return usagef("experiment: --out %s is a file, not a directory; give a results directory (it is created if missing)", f.out)
		}
	}
	return nil
}

// cmdExperiment runs an experiment file (docs/experiments.md): it expands
// and validates every run first (exit 2 on any problem, before anything
// runs), runs those without a stored result of the current code (each
// trains, partitions or measures its config, by the experiment's kind),
// writes the reports and prints a JSON summary as the last stdout line.
// A failed run the experiment does not expect makes the exit code 1.
// --check compares a rerun with the committed results instead.
func cmdExperiment(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f experimentFlags
	fs := newFlags("experiment", experimentArgs, stderr)
	f.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := f.validate(); err != nil {
		return err
	}
	if f.index != "" {
		return experimentIndex(ctx, f.index, stdout)
	}
	shard, err := shardOf(f.shard, os.Getenv)
	if err != nil {
		return err
	}
	wopts, err := f.wasm.options()
	if err != nil {
		return err
	}
	exp, err := runner.Load(f.path)
	if err != nil {
		return err
	}
	// The runs share their modules: each is loaded once for all the checks.
	pool := wasm.NewPool()
	validate := func(ctx context.Context, cfg *config.Config) error {
		return train.Check(ctx, cfg, wasm.Host{Options: wopts, Pool: pool}, true)
	}
	plan, err := runner.NewPlan(ctx, exp, version, validate)
	pool.Close(context.WithoutCancel(ctx))
	if err != nil {
		return err
	}
	plan.Build = fullVersion()
	dir := f.out
	if dir == "" {
		dir = runner.DefaultOutDir(exp)
	}
	trainFn := func(ctx context.Context, cfg *config.Config) (*train.Result, error) {
		return train.Run(ctx, cfg, train.Options{Version: fullVersion(), Host: wasm.Host{Options: wopts}})
	}
	if f.check {
		return experimentCheck(ctx, plan, dir, &f, trainFn, stdout, stderr)
	}
	want := numerics.Pinned()
	if f.native {
		want = numerics.Current(false)
	}
	num, err := ensureNumerics(ctx, want, f.native, stderr)
	if err != nil {
		return err
	}
	opts := runner.Options{OutDir: dir, Jobs: f.jobs, Fresh: f.fresh, Shard: shard, Progress: stderr, Force: f.force, Numerics: &num, Train: trainFn, ReportsOnly: f.reportsOnly,
		Stamp: &runner.Revision{Revision: binaryRevision()}}
	merged := 0
	if f.merge && !f.dry {
		if merged, err = mergeShards(plan, dir, opts); err != nil {
			return err
		}
	}
	if shard.Count > 0 {
		opts.OutDir = runner.ShardDir(dir, shard)
	}
	if f.dry {
		return dryRun(plan, opts, stdout)
	}
	return executeExperiment(ctx, plan, opts, merged, stdout, stderr)
}

// mergeShards copies the shards' results into dir (--merge): exit 1 when
// a run has a result of the current code in none of them.
func mergeShards(plan *runner.Plan, dir string, opts runner.Options) (int, error) {
	rep, err := runner.Merge(plan, dir, opts)
	if err != nil {
		return 0, err
	}
	if n := len(rep.Missing); n > 0 {
		r := rep.Missing[0]
		return 0, &failedError{fmt.Errorf("experiment %s: %d of %d runs have a result of the current code neither in %s nor in its shards (the first: [%d] %s): run the shards that hold them, then --merge again", plan.Exp.Name, n, len(plan.Runs), dir, r.Index+1, r.Label())}
	}
	return rep.Copied, nil
}

// dryRun lists the runs with their state and prints the summary.
func dryRun(plan *runner.Plan, opts runner.Options, stdout io.Writer) error {
	states, err := runner.States(plan, opts.OutDir, opts)
	if err != nil {
		return &internalError{err}
	}
	exp := plan.Exp
	fmt.Fprintf(stdout, "experiment %s: kind %s (%s), %d runs\n", exp.Name, exp.Kind.Name, exp.Kind.Command, len(plan.Runs))
	sum := &runner.Summary{Experiment: exp.Name, Out: opts.OutDir, DryRun: true}
	for _, r := range plan.Runs {
		if !opts.Shard.Has(r) {
			continue
		}
		state := states[r.Index]
		if opts.Fresh {
			state = runner.StateToRun
		}
		sum.Runs++
		switch state {
		case runner.StateDone:
			sum.Skipped++
		case runner.StateStale:
			sum.Stale++
		}
		fmt.Fprintf(stdout, "[%d/%d] %s  %s  %s\n", r.Index+1, len(plan.Runs), r.Label(), r.ID[:12], state)
	}
	if opts.Shard.Count > 1 {
		sum.Shard = opts.Shard.String()
	}
	return printSummary(stdout, sum)
}

// executeExperiment runs the experiment and maps its outcome to an exit
// code.
func executeExperiment(ctx context.Context, plan *runner.Plan, opts runner.Options, merged int, stdout, stderr io.Writer) error {
	sum, _, err := runner.Execute(ctx, plan, opts)
	if sum != nil {
		sum.Merged = merged
		for _, l := range sum.Succeeded {
			fmt.Fprintf(stderr, "experiment %s: %s succeeded although the experiment expects it to fail ([[expected_failure]] in %s): remove or narrow the declaration\n", sum.Experiment, l, plan.Exp.File)
		}
		if perr := printSummary(stdout, sum); perr != nil && err == nil {
			err = perr
		}
	}
	var pe *runner.PublishError
	switch {
	case err != nil:
		if ctx.Err() != nil {
			if sum != nil {
				fmt.Fprintf(stderr, "experiment %s: %d of %d runs done; rerun the same command to resume\n", sum.Experiment, sum.Skipped+sum.Executed, sum.Runs)
			}
			return ctx.Err()
		}
		if errors.Is(err, safefile.ErrLocked) || errors.Is(err, safefile.ErrUnsafe) || errors.As(err, &pe) {
			return err // bad input: exit 2
		}
		if sum != nil && sum.Failed > 0 {
			return &failedError{err} // results that could not be stored
		}
		return &internalError{err}
	case sum.Failed > 0:
		return &failedError{fmt.Errorf("%d of %d runs failed (their errors are in %s/summary.md); rerunning retries them; a run that is expected to fail is declared in the experiment file ([[expected_failure]], docs/experiments.md)", sum.Failed, sum.Runs, sum.Out)}
	}
	return nil
}

// experimentCheck is --check: the committed results must be this
// experiment's (exit 2 otherwise), the process runs with their numerics,
// and any difference is exit 1.
func experimentCheck(ctx context.Context, plan *runner.Plan, dir string, f *experimentFlags, trainFn runner.TrainFunc, stdout, stderr io.Writer) error {
	committed, err := check.Load(plan, dir)
	if err != nil {
		return err
	}
	num, err := ensureNumerics(ctx, committed.Numerics(), f.native, stderr)
	if err != nil {
		return err
	}
	rep, err := check.Run(ctx, plan, committed, check.Options{Subset: f.subset, Jobs: f.jobs, Train: trainFn, Progress: stderr, Numerics: &num})
	if err != nil {
		var ie *check.InputError
		if errors.As(err, &ie) || ctx.Err() != nil {
			return err
		}
		return &internalError{err}
	}
	rep.Print(stderr, len(plan.Runs))
	fmt.Fprintln(stdout, rep.Line())
	if !rep.OK {
		return &failedError{fmt.Errorf("experiment %s --check: %d columns of %d runs differ from the committed results in %s; regenerate them (make experiments EXP=%s) and update the docs that cite them, or find what moved them", plan.Exp.Name, rep.NDiffs, rep.Differing, dir, plan.Exp.File)}
	}
	return nil
}

func printSummary(stdout io.Writer, s *runner.Summary) error {
	line, err := json.Marshal(s)
	if err != nil {
		return &internalError{err}
	}
	fmt.Fprintf(stdout, "%s\n", line)
	return nil
}

// shardOf reads --shard: "" (every run), "i/N", or "slurm" (the task of a
// Slurm job array: SLURM_ARRAY_TASK_ID minus SLURM_ARRAY_TASK_MIN, of
// SLURM_ARRAY_TASK_COUNT).
func shardOf(flag string, getenv func(string) string) (runner.Shard, error) {
	spec := flag
	switch flag {
	case "":
		return runner.Shard{}, nil
	case "slurm":
		id, count := getenv("SLURM_ARRAY_TASK_ID"), getenv("SLURM_ARRAY_TASK_COUNT")
		if id == "" || count == "" {
			return runner.Shard{}, usagef("experiment: --shard slurm reads SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT, which are not set: submit with sbatch --array=0-(N-1) (docs/experiments.md), or give --shard i/N")
		}
		i, err := strconv.Atoi(id)
		if err != nil {
			return runner.Shard{}, usagef("experiment: --shard slurm: SLURM_ARRAY_TASK_ID=%q is not a number", id)
		}
		if lo := getenv("SLURM_ARRAY_TASK_MIN"); lo != "" {
			m, err := strconv.Atoi(lo)
			if err != nil {
				return runner.Shard{}, usagef("experiment: --shard slurm: SLURM_ARRAY_TASK_MIN=%q is not a number", lo)
			}
			i -= m
		}
		spec = fmt.Sprintf("%d/%s", i, count)
	}
	s, err := runner.ParseShard(spec)
	if err != nil {
		if flag == "slurm" {
			return runner.Shard{}, usagef("experiment: --shard slurm: %v; submit the array as --array=0-(N-1) with N = SLURM_ARRAY_TASK_COUNT (no step)", err)
		}
		return runner.Shard{}, usagef("experiment: --shard %v", err)
	}
	return s, nil
}
