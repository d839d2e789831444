package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

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

// groupGrace is how long a rank waits after SIGTERM for its run to end by
// itself before it rescues it: mpirun ends the surviving ranks of a job
// one of whose ranks died with SIGTERM, then (odls_base_sigkill_timeout,
// one second by default) SIGKILL.
const groupGrace = 100 * time.Millisecond

// groupWatch ends this rank's run from outside when its loop waits in a
// collective that will never return, because another rank died or hangs:
// output.csv and output.log are committed with the finished epochs, the
// result line printed (status "interrupted" after a signal, "failed"
// after the communicator's watchdog), and the process exits.
type groupWatch struct {
	rescue         *train.Rescue
	stdout, stderr io.Writer
	rank, size     int
	grace          time.Duration
	exit           func(code int) // os.Exit; a test's recorder
}

// watchGroup starts watching a run of several ranks; stop ends the watch
// once the run has returned (it waits for a rescue under way, which exits
// the process). Alone, a rank has nothing to watch.
func watchGroup(ctx context.Context, rescue *train.Rescue, stdout, stderr io.Writer) (stop func()) {
	c := comm.From(ctx)
	if c.Size() == 1 {
		return func() {}
	}
	return newGroupWatch(c, rescue, stdout, stderr).start(ctx)
}

// newGroupWatch returns the watch of this rank of c, with the handler of
// the communicator's watchdog registered.
func newGroupWatch(c comm.Comm, rescue *train.Rescue, stdout, stderr io.Writer) *groupWatch {
	w := &groupWatch{rescue: rescue, stdout: stdout, stderr: stderr, rank: c.Rank(), size: c.Size(), grace: groupGrace, exit: os.Exit}
	if wc, ok := c.(comm.Watched); ok {
		// The watchdog's goroutine: MPI_Abort follows when this returns.
		wc.OnStall(func(what string) {
			w.end(train.StatusFailed, fmt.Errorf("%s waited too long for the other ranks", what))
		})
	}
	return w
}

// start waits for a signal (ctx done), then for the run to end by itself
// within the grace; failing that it rescues the run and exits 130.
func (w *groupWatch) start(ctx context.Context) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		select {
		case <-done:
			return
		case <-time.After(w.grace):
		}
		if w.end(train.StatusInterrupted, errors.New("stopped by a signal in the middle of an epoch (under mpirun: another rank has probably died)")) {
			w.exit(exitInterrupted)
		}
	}()
	return func() { close(done); <-finished }
}

// end rescues the run and prints its result line; false when the run had
// already ended by itself (its own result line follows).
func (w *groupWatch) end(status string, cause error) bool {
	res, ok := w.rescue.End(status, cause)
	if !ok {
		return false
	}
	fmt.Fprintf(w.stderr, "strata: rank %d of %d: %v: ending the run with the epochs it finished\n", w.rank, w.size, cause)
	if line, err := json.Marshal(res); err == nil {
		fmt.Fprintf(w.stdout, "%s\n", line)
	}
	return true
}
