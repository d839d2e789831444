package train

import (
	"context"
	"errors"
	"fmt"
	"time"

	"strata/core/metrics"
	"strata/core/safefile"
)

// An observer follows a run's epochs: the loop calls start once before the
// first epoch, epoch after every epoch whose record is complete, and end
// once however the run ends. Each hook runs for every observer, in the
// order of loop.obs (see open); the resources they hold are released after
// every end hook (loop.onRelease).
type observer interface {
	// start runs before the first epoch (after a resume's restore); stop
	// ends the run at once, finished.
	start(ctx context.Context) (stop bool, err error)
	// epoch sees a finished epoch's record, and may fill it in for the
	// observers after it; stop ends the run, finished, after this epoch
	// (once every observer has seen it and unless ctx was cancelled).
	epoch(ctx context.Context, rec *EpochRecord) (stop bool, err error)
	// end sees how the run ended; its error joins the run's (see
	// ending.err). It takes no context: what it writes is written even
	// when the run was interrupted.
	end(e *ending) error
}

// nopObserver's hooks do nothing: observers embed it and implement the
// hooks they need.
type nopObserver struct{}

func (nopObserver) start(context.Context) (bool, error)               { return false, nil }
func (nopObserver) epoch(context.Context, *EpochRecord) (bool, error) { return false, nil }
func (nopObserver) end(*ending) error                                 { return nil }

// endKind is how a run ended.
type endKind int

const (
	// endFinished: every epoch ran, or early stopping (train.patience)
	// ended the run; its outputs are committed and output.model written.
	endFinished endKind = iota
	// endStopped: the run diverged or was interrupted (its context
	// cancelled); its result and the outputs of its finished epochs are
	// kept, output.model is not written.
	endStopped
	// endFailed: an error; the outputs are dropped and the result too.
	endFailed
)

func (k endKind) String() string {
	return [...]string{"finished", "stopped", "failed"}[k]
}

// ending is how a run ended, as the observers' end hooks see it: the kind,
// the error that stopped or failed it, and the end hooks' errors so far.
type ending struct {
	kind  endKind
	cause error
	errs  []error
}

// keep reports whether an output commits what it wrote: after a stopped
// run always, after a finished one unless an earlier end hook failed.
func (e *ending) keep() bool {
	return e.kind == endStopped || e.complete()
}

// complete reports whether the run finished and every end hook so far
// succeeded: only then does it end with its best model.
func (e *ending) complete() bool {
	return e.kind == endFinished && len(e.errs) == 0
}

// err is the run's error: the first end hook's error of a finished run;
// the cause joined with the end hooks' errors of a stopped one; the cause
// of a failed one.
func (e *ending) err() error {
	switch e.kind {
	case endFinished:
		if len(e.errs) > 0 {
			return e.errs[0]
		}
		return nil
	case endStopped:
		return errors.Join(append([]error{e.cause}, e.errs...)...)
	}
	return e.cause
}

// finish is the run's one exit path: every observer's end hook, in order,
// once; then (deferred in run) the release of what open acquired.
func (l *loop) finish(kind endKind, cause error) error {
	e := &ending{kind: kind, cause: cause}
	for _, o := range l.obs {
		if err := o.end(e); err != nil {
			e.errs = append(e.errs, err)
		}
	}
	return e.err()
}

// onRelease adds f to what the run releases when it ends, after every end
// hook and in reverse order, as a defer would.
func (l *loop) onRelease(f func()) { l.releases = append(l.releases, f) }

// releaseAll releases what open acquired, the last first.
func (l *loop) releaseAll() {
	for i := len(l.releases) - 1; i >= 0; i-- {
		l.releases[i]()
	}
	l.releases = nil
}

// start runs every observer's start hook; stop if any asks to.
func (l *loop) start(ctx context.Context) (stop bool, err error) {
	for _, o := range l.obs {
		s, err := o.start(ctx)
		if err != nil {
			return false, err
		}
		stop = stop || s
	}
	return stop, nil
}

// observe runs every observer's epoch hook on rec; stop if any asks to.
func (l *loop) observe(ctx context.Context, rec *EpochRecord) (stop bool, err error) {
	for _, o := range l.obs {
		s, err := o.epoch(ctx, rec)
		if err != nil {
			return false, err
		}
		stop = stop || s
	}
	return stop, nil
}

// open sets the run up: the progress bar, output.log and output.csv, the
// measurements, a resume's restored state and the checkpoint's lock, in
// that order; then the observers in the order their hooks run, extra
// last. What it acquires is released by releaseAll, also when it fails.
func (l *loop) open(ctx context.Context, opts Options, extra []observer) error {
	// A bar on a terminal; otherwise (nohup, a batch scheduler) a plain
	// line per epoch, at most one a second, and the last one.
	bar := metrics.NewLogProgress(opts.Progress, "train", l.cfg.Train.Epochs, time.Second, nil)
	l.onRelease(bar.Done)
	l.hist = &history{}
	plan, err := newEvalPlan(l.cfg, l.st, l.ds, l.cfg.CSVPath() != "" || l.cfg.LogPath() != "", l.link)
	if err != nil {
		return err
	}
	l.plan = plan
	outputs, err := l.openOutputs()
	if err != nil {
		return err
	}
	l.clock = newTimings(l.be, l.res)
	l.best = &bestModel{st: l.st, res: l.res, every: l.cfg.Train.EvalEvery, patience: l.cfg.Train.Patience, watch: newWatched(l.cfg), plan: plan}
	l.links = newLinkCounter(l.be)
	if l.ck != nil {
		if err := l.resume(ctx, outputs); err != nil {
			return err
		}
	}
	ck, err := l.openCheckpointer()
	if err != nil {
		return err
	}
	if path := l.cfg.ModelPath(); path != "" { // held until output.model is written
		lock, err := safefile.Acquire(path)
		if err != nil {
			return fmt.Errorf("output.model: %w", err)
		}
		l.onRelease(lock.Release)
	}
	l.obs = append([]observer{l.clock, l.best, l.links}, outputs...)
	l.obs = append(l.obs, &progress{bar: bar, res: l.res, best: l.best})
	if ck != nil {
		l.obs = append(l.obs, ck)
	}
	l.obs = append(l.obs, &finalModel{l: l})
	if l.afterEpoch != nil {
		l.obs = append(l.obs, epochHook(l.afterEpoch))
	}
	l.obs = append(l.obs, extra...)
	return nil
}

// openOutputs opens output.log, then output.csv (writing its header), and
// returns the observers that keep every record: the history, the CSV
// rows, the log lines.
func (l *loop) openOutputs() ([]observer, error) {
	outputs := []observer{l.hist}
	var lines *logLines
	if path := l.cfg.LogPath(); path != "" {
		out, err := openLog(l.cfg, path)
		if err != nil {
			return nil, err
		}
		l.onRelease(out.close)
		lines = &logLines{out: out}
	}
	if path := l.cfg.CSVPath(); path != "" {
		out, err := openCSV(l.cfg, path)
		if err != nil {
			return nil, fmt.Errorf("output.csv: %w", err)
		}
		l.onRelease(out.close)
		rows := &csvRows{out: out, be: l.be, figs: l.plan.columns()}
		if err := rows.header(l.st); err != nil {
			return nil, err
		}
		outputs = append(outputs, rows)
	}
	if lines != nil {
		outputs = append(outputs, lines)
	}
	return outputs, nil
}

// openCheckpointer returns, when the run writes checkpoints, their
// observer, with output.checkpoint locked for the run; otherwise nil.
func (l *loop) openCheckpointer() (*checkpointer, error) {
	every, path := l.cfg.Train.CheckpointEvery, l.cfg.CheckpointPath()
	if every <= 0 || path == "" {
		return nil, nil
	}
	lock, err := safefile.Acquire(path)
	if err != nil {
		return nil, fmt.Errorf("output.checkpoint: %w", err)
	}
	l.onRelease(lock.Release)
	return &checkpointer{l: l, path: path, every: every, epochs: l.cfg.Train.Epochs}, nil
}

// resume restores the checkpoint's state (parameters, optimizer, best
// epoch, measurements, link counters) and hands its epochs' records to
// outputs again, so that output.csv and output.log hold the whole run.
func (l *loop) resume(ctx context.Context, outputs []observer) error {
	m := l.ck.meta
	if err := l.st.Params().Restore(prefixed(l.ck.arrays, "param/")); err != nil {
		return fmt.Errorf("--resume: %w", err)
	}
	if err := l.st.Params().RestoreState(prefixed(l.ck.arrays, "state/")); err != nil {
		return fmt.Errorf("--resume: %w", err)
	}
	if err := l.opt.SetState(l.st.Params().List(), OptimizerState{Name: m.Optimizer, Step: m.OptimizerStep, Bufs: prefixed(l.ck.arrays, "opt/")}); err != nil {
		return fmt.Errorf("--resume: %w", err)
	}
	if m.HasBest {
		l.best.params = prefixed(l.ck.arrays, "best/")
	}
	l.best.since, l.next = m.SinceBest, m.NextEpoch
	c := l.clock
	c.times, c.evalTimes, c.predicted = m.TimesS, m.EvalTimesS, m.PredictedS
	l.res.BestEpoch, l.res.BestValidAcc, l.res.TrainAcc, l.res.TestAcc = m.BestEpoch, m.BestValidAcc, m.TrainAcc, m.TestAcc
	for _, rec := range m.Records { // the best epoch's figures, from its record
		if rec.Epoch == m.BestEpoch && rec.Evaluated {
			l.best.take(&rec)
		}
	}
	l.res.FinalLoss, l.res.Epochs, l.res.PredictedComputeS = m.FinalLoss, m.NextEpoch, m.PredictedComputeS
	if tc := l.links.tc; tc != nil {
		setup := tc.Traffic()
		l.traffic = resumeTraffic(m.Traffic, m.TrafficByPurpose, setup, tc.TrafficByPurpose())
		// The next record counts its epoch and what the checkpoint's
		// own downloads added after the last record, as uninterrupted.
		l.links.transferred = linkBytes(setup) - m.UnrecordedTransferBytes
	}
	// The peaks so far are the checkpoint's: the resumed set-up is no
	// part of the uninterrupted run.
	c.peaks.all, c.peaks.train, c.peaks.eval = tierKeyed(m.PeakBytes), tierKeyed(m.TrainPeakBytes), tierKeyed(m.EvalPeakBytes)
	for _, rec := range m.Records {
		for _, o := range outputs {
			if _, err := o.epoch(ctx, &rec); err != nil {
				return err
			}
		}
	}
	l.ck = nil
	return nil
}
