package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"strata/core/config"
	"strata/core/safefile"
	"strata/core/train"
	"strata/experiments/runner"
	"strata/plugins/wasm"
)

const experimentArgs = "-c FILE [--jobs N] [--out DIR] [--fresh] [--dry-run]"

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
	if *dry {
		done := runner.Done(plan, dir)
		fmt.Fprintf(stdout, "experiment %s: kind %s (%s), %d runs\n", exp.Name, exp.Kind.Name, exp.Kind.Command, len(plan.Runs))
		for _, r := range plan.Runs {
			state := "to run"
			if done[r.Index] && !*fresh {
				state = "done"
			}
			fmt.Fprintf(stdout, "[%d/%d] %s  %s  %s\n", r.Index+1, len(plan.Runs), r.Label(), r.ID[:12], state)
		}
		skipped := 0
		for _, d := range done {
			if d && !*fresh {
				skipped++
			}
		}
		return printSummary(stdout, &runner.Summary{Experiment: exp.Name, Runs: len(plan.Runs), Skipped: skipped, Out: dir, DryRun: true})
	}
	sum, _, err := runner.Execute(ctx, plan, runner.Options{
		OutDir:   dir,
		Jobs:     *jobs,
		Fresh:    *fresh,
		Progress: stderr,
		Train: func(ctx context.Context, cfg *config.Config) (*train.Result, error) {
			return train.Run(ctx, cfg, train.Options{Version: fullVersion(), Host: wasm.Host{Options: wopts}})
		},
	})
	if sum != nil {
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
