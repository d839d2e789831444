package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"strata/core/comm"
	"strata/core/config"
	"strata/core/train"
)

// joinGroup joins the group of ranks the process was started in (alone:
// a single-process group) and returns the context that carries it for the
// strategy. On more than one rank the strategy must distribute (every
// rank would otherwise train the whole model alone), and rank 0 alone
// prints and writes outputs: other ranks get io.Discard for stdout and the
// progress, and no output files. leave closes the group.
func joinGroup(ctx context.Context, cfg *config.Config, resume bool, stdout, stderr io.Writer) (_ context.Context, out, progress io.Writer, leave func(), err error) {
	c, err := comm.Join(ctx, os.Getenv)
	if err != nil {
		return nil, nil, nil, nil, usagef("%v", err)
	}
	leave = func() {
		if err := c.Close(); err != nil {
			fmt.Fprintf(stderr, "strata: rank %d: %v\n", c.Rank(), err)
		}
	}
	progress = progressWriter(cfg.Output.Progress, stderr)
	if c.Size() == 1 {
		return comm.With(ctx, c), stdout, progress, leave, nil
	}
	fail := func(err error) (context.Context, io.Writer, io.Writer, func(), error) {
		leave()
		return nil, nil, nil, nil, err
	}
	// Every rank must run the same config (an MPMD launch could differ).
	sha, err := cfg.SHA256()
	if err != nil {
		return fail(err)
	}
	all, err := comm.AllGather(ctx, c, "config", []byte(sha))
	if err != nil {
		return fail(err)
	}
	for j, b := range all {
		if string(b) != sha {
			return fail(fmt.Errorf("rank %d runs config %.12s and rank %d config %.12s: start every rank with the same config and --set flags (one mpirun command line)", c.Rank(), sha, j, b))
		}
	}
	strat, err := train.StrategyFor(cfg)
	if err != nil {
		return fail(err)
	}
	if _, ok := strat.(comm.Distributed); !ok {
		return fail(cfg.KeyError(fmt.Sprintf("train.mode = %q runs in one process, and this is rank %d of %d (mpirun): set train.mode = \"distmini\" (sampled mini-batches) or \"distfull\" (full graph), see docs/distributed.md, or run without mpirun",
			cfg.Train.Mode, c.Rank(), c.Size()), "train", "mode"))
	}
	if resume || cfg.Output.Checkpoint != "" {
		return fail(cfg.KeyError(fmt.Sprintf("output.checkpoint: checkpoints of a run over %d ranks are not supported; remove output.checkpoint (and --resume)", c.Size()), "output", "checkpoint"))
	}
	if c.Rank() != 0 {
		cfg.Output.Log, cfg.Output.CSV, cfg.Output.Model = "", "", ""
		return comm.With(ctx, c), io.Discard, nil, leave, nil
	}
	return comm.With(ctx, c), stdout, progress, leave, nil
}

// abortGroup ends the whole group when this rank failed while others may
// be waiting for it in a collective (MPI_Finalize would wait for them in
// turn): the error first, then MPI_Abort. Alone, or interrupted, it does
// nothing.
func abortGroup(ctx context.Context, err error, stderr io.Writer) {
	c := comm.From(ctx)
	a, ok := c.(comm.Aborter)
	var diverged *train.DivergedError // every rank diverges at the same step
	if err == nil || !ok || c.Size() == 1 || errors.Is(err, context.Canceled) || errors.As(err, &diverged) {
		return
	}
	fmt.Fprintf(stderr, "strata: rank %d of %d: %v; ending the job\n", c.Rank(), c.Size(), err)
	a.Abort(exitInternal)
}
