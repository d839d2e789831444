package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"strata/core/config"
	"strata/core/safefile"
	"strata/core/train"
	"strata/experiments/runner"
	"strata/plugins/wasm"
)

const experimentArgs = "-c FILE [--jobs N] [--out DIR] [--fresh] [--dry-run] [--shard i/N|slurm | --merge]"

// cmdExperiment runs an experiment file (docs/experiments.md): it expands
// and validates every run first (exit 2 on any problem, before anything
// runs), runs those without a stored result (each trains, partitions or
// measures its config, by the experiment's kind), writes the reports and
// prints a JSON summary as the last stdout line. A failed run makes the
// exit code 1.
func cmdExperiment(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("experiment", experimentArgs, stderr)
	path := fs.String("c", "", "experiment file (TOML), e.g. experiments/cora-hidden.toml")
	jobs := fs.Int("jobs", 1, "runs to train at a time (each gets cores/N threads unless train.threads is set)")
	out := fs.String("out", "", "results directory (default: results/<name> next to the experiment file)")
	dry := fs.Bool("dry-run", false, "validate every run and list them, with what is already done, without training")
	fresh := fs.Bool("fresh", false, "rerun every run: delete the stored results (runs/) of the results directory first")
	shardFlag := fs.String("shard", "", "run only shard i of N (0-based: runs whose index is i mod N) into DIR/shards/i-of-N; \"slurm\" reads SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT (docs/experiments.md)")
	merge := fs.Bool("merge", false, "assemble the shards' results (DIR/shards/*) into DIR and write the reports; runs nothing")
	var wf wasmFlags
	wf.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *path == "" {
		return usagef("experiment: -c FILE is required (try experiments/cora-hidden.toml)")
	}
	if *jobs < 1 {
		return usagef("experiment: --jobs must be at least 1, got %d", *jobs)
	}
	if *out != "" {
		if st, err := os.Stat(*out); err == nil && !st.IsDir() {
			return usagef("experiment: --out %s is a file, not a directory; give a results directory (it is created if missing)", *out)
		}
	}
	shard, err := shardOf(*shardFlag, os.Getenv)
	if err != nil {
		return err
	}
	if *merge && (shard.Count > 0 || *fresh) {
		return usagef("experiment: --merge assembles the shards' results; it takes neither --shard nor --fresh")
	}
	wopts, err := wf.options()
	if err != nil {
		return err
	}
	exp, err := runner.Load(*path)
	if err != nil {
		return err
	}
	check := func(ctx context.Context, cfg *config.Config) error {
		return train.Check(ctx, cfg, wasm.Host{Options: wopts}, true)
	}
	plan, err := runner.NewPlan(ctx, exp, version, check)
	if err != nil {
		return err
	}
	plan.Build = fullVersion()
	dir := *out
	if dir == "" {
		dir = runner.DefaultOutDir(exp)
	}
	merged := 0
	if *merge && !*dry {
		rep, err := runner.Merge(plan, dir)
		if err != nil {
			return err
		}
		if n := len(rep.Missing); n > 0 {
			r := rep.Missing[0]
			return &failedError{fmt.Errorf("experiment %s: %d of %d runs have a result neither in %s nor in its shards (the first: [%d] %s): run the shards that hold them, then --merge again", exp.Name, n, len(plan.Runs), dir, r.Index+1, r.Label())}
		}
		merged = rep.Copied
	}
	if shard.Count > 0 {
		dir = runner.ShardDir(dir, shard)
	}
	if *dry {
		done := runner.Done(plan, dir)
		fmt.Fprintf(stdout, "experiment %s: kind %s (%s), %d runs\n", exp.Name, exp.Kind.Name, exp.Kind.Command, len(plan.Runs))
		for _, r := range plan.Runs {
			if !shard.Has(r) {
				continue
			}
			state := "to run"
			if done[r.Index] && !*fresh {
				state = "done"
			}
			fmt.Fprintf(stdout, "[%d/%d] %s  %s  %s\n", r.Index+1, len(plan.Runs), r.Label(), r.ID[:12], state)
		}
		skipped, runs := 0, 0
		for _, r := range plan.Runs {
			if shard.Has(r) {
				runs++
				if done[r.Index] && !*fresh {
					skipped++
				}
			}
		}
		sum := &runner.Summary{Experiment: exp.Name, Runs: runs, Skipped: skipped, Out: dir, DryRun: true}
		if shard.Count > 1 {
			sum.Shard = shard.String()
		}
		return printSummary(stdout, sum)
	}
	sum, _, err := runner.Execute(ctx, plan, runner.Options{
		OutDir:   dir,
		Jobs:     *jobs,
		Fresh:    *fresh,
		Shard:    shard,
		Progress: stderr,
		Train: func(ctx context.Context, cfg *config.Config) (*train.Result, error) {
			return train.Run(ctx, cfg, train.Options{Version: fullVersion(), Host: wasm.Host{Options: wopts}})
		},
	})
	if sum != nil {
		sum.Merged = merged
		if perr := printSummary(stdout, sum); perr != nil && err == nil {
			err = perr
		}
	}
	switch {
	case err != nil:
		if ctx.Err() != nil {
			if sum != nil {
				fmt.Fprintf(stderr, "experiment %s: %d of %d runs done; rerun the same command to resume\n", sum.Experiment, sum.Skipped+sum.Executed, sum.Runs)
			}
			return ctx.Err()
		}
		if errors.Is(err, safefile.ErrLocked) || errors.Is(err, safefile.ErrUnsafe) {
			return err // bad input: exit 2
		}
		if sum != nil && sum.Failed > 0 {
			return &failedError{err} // results that could not be stored
		}
		return &internalError{err}
	case sum.Failed > 0:
		return &failedError{fmt.Errorf("%d of %d runs failed (their errors are in %s/summary.md); rerunning retries them", sum.Failed, sum.Runs, sum.Out)}
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
