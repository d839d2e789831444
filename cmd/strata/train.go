package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"strata/core/train"
	"strata/plugins/wasm"
)

func cmdTrain(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := newFlags("train", "[-c FILE] [--set key=value]... [--resume]", stderr)
	var cf configFlags
	cf.register(fs)
	resume := fs.Bool("resume", false, "continue an interrupted run from output.checkpoint (same config and model module)")
	var rf runtimeFlags
	rf.register(fs)
	cfg, wopts, err := cf.load(fs, args)
	if err != nil {
		return err
	}
	stopProfile, err := rf.start(cf.maxMem, profileInputs(cf.path, cfg.DatasetSpec())...)
	if err != nil {
		return err
	}
	defer func() {
		if perr := stopProfile(); perr != nil && err == nil {
			err = perr
		}
	}()
	ctx = withMaxMemory(ctx, cf.maxMem)
	ctx, stdout, progress, leave, err := joinGroup(ctx, cfg, *resume, stdout, stderr)
	if err != nil {
		return err
	}
	defer leave()
	rescue := &train.Rescue{}
	stopWatch := watchGroup(ctx, rescue, stdout, stderr)
	start := time.Now()
	res, err := train.Run(ctx, cfg, train.Options{
		Progress:   progress,
		Version:    fullVersion(),
		Host:       wasm.Host{Options: wopts},
		Resume:     *resume,
		AfterEpoch: afterEpochFrom(ctx),
		BeforeEval: beforeEvalFrom(ctx),
		Warnings:   stderr,
		Rescue:     rescue,
	})
	stopWatch()
	abortGroup(ctx, err, stderr)
	if res != nil {
		// The one-line summary for people follows the result line, on
		// the progress output (silenced with it).
		defer func() { summarize(progress, res, cfg.Train.Epochs, time.Since(start)) }()
	}
	if res != nil && res.Status == train.StatusInterrupted && errors.Is(err, context.Canceled) {
		// Interrupted (SIGINT): the best result so far, then exit 130.
		if line, jerr := json.Marshal(res); jerr == nil {
			fmt.Fprintf(stdout, "%s\n", line)
		}
		return err
	}
	var diverged *train.DivergedError
	var unsaved *train.OutputError
	if (errors.As(err, &diverged) || errors.As(err, &unsaved)) && res != nil {
		// The partial result is printed (non-finite numbers as "NaN",
		// "+Inf", "-Inf"; a checkpoint or model that could not be
		// written: status "failed", output.csv and output.log
		// committed), then the run fails with exit code 1.
		if line, jerr := json.Marshal(res); jerr == nil {
			fmt.Fprintf(stdout, "%s\n", line)
		}
		return &failedError{err}
	}
	if err != nil {
		return err
	}
	if res.AlreadyFinished() {
		fmt.Fprintf(stderr, "strata: already finished: %s holds the end of the run (%d epochs); its result again, nothing trained\n", cfg.CheckpointPath(), res.Epochs)
	}
	if cfg.Output.JSON {
		line, err := json.Marshal(res)
		if err != nil {
			return &internalError{err}
		}
		fmt.Fprintf(stdout, "%s\n", line)
	} else {
		fmt.Fprintf(stdout, "%s %s: best valid %.4f (epoch %d), test %.4f, %.4gs/epoch%s\n",
			res.Model, res.Dataset, res.BestValidAcc, res.BestEpoch, res.TestAcc, res.EpochTimeMedianS, res.Summaries())
	}
	return nil
}

// summarize prints the run's summary line (train.Result.SummaryLine) on
// w; nil (output.progress = "off", a rank other than 0) prints nothing.
func summarize(w io.Writer, res *train.Result, planned int, elapsed time.Duration) {
	if w != nil {
		fmt.Fprintln(w, res.SummaryLine(planned, elapsed))
	}
}

// afterEpochKey is the context key of a test's train.Options.AfterEpoch
// hook (a test stops a run after an epoch this way).
type afterEpochKey struct{}

// afterEpochFrom returns the hook a test put in ctx, or nil.
func afterEpochFrom(ctx context.Context) func(epoch int) {
	f, _ := ctx.Value(afterEpochKey{}).(func(epoch int))
	return f
}

// progressWriter resolves output.progress: progress goes to stderr unless
// it is "off"; the training loop draws a bar on a terminal and prints
// plain lines otherwise.
func progressWriter(mode string, stderr io.Writer) io.Writer {
	if mode == "off" {
		return nil
	}
	return stderr
}

// beforeEvalKey is the context key of a test's train.Options.BeforeEval
// hook (a test interrupts an evaluation this way).
type beforeEvalKey struct{}

// beforeEvalFrom returns the hook a test put in ctx, or nil.
func beforeEvalFrom(ctx context.Context) func(epoch int) {
	f, _ := ctx.Value(beforeEvalKey{}).(func(epoch int))
	return f
}
