package train

import (
	"context"
	"fmt"

	"strata/core/backend"
	"strata/core/metrics"
)

// timings are the run's measurements: the epochs' and evaluations' times,
// the predicted epoch times (simulated devices) and the peaks of each
// phase. The loop takes them (trainStep, evalStep); a checkpoint carries
// them over a resume; the end hook puts them into the result.
type timings struct {
	nopObserver
	res                         *Result
	simulated                   bool // the backend predicts time (backend.TimePredictor)
	peaks                       *phasePeaks
	times, evalTimes, predicted []float64
}

func newTimings(be backend.Backend, res *Result) *timings {
	_, simulated := be.(backend.TimePredictor)
	return &timings{res: res, simulated: simulated, peaks: newPhasePeaks(be)}
}

// end fills the result's timings and peaks, unless the run failed.
func (t *timings) end(e *ending) error {
	if e.kind == endFailed {
		return nil
	}
	r, p := t.res, t.peaks
	r.PeakTierBytes, r.TrainPeakTierBytes, r.EvalPeakTierBytes = tierMap(p.all), tierMap(p.train), tierMap(p.eval)
	r.EpochTimeMedianS = median(t.times, 2)
	r.PredictedEpochS = median(t.predicted, 0)
	r.EvalTimeMedianS = median(t.evalTimes, 0)
	if r.Link != nil && r.EpochTimeMedianS > 0 {
		r.Link.EdgesPerS = float64(r.Link.TrainEdges) / r.EpochTimeMedianS
	}
	r.PeakRSSBytes = metrics.PeakRSS()
	return nil
}

// bestModel selects the best-validation epoch (the first of equal ones) by
// train.early_stop_metric, keeps a snapshot of its parameters and stops
// the run once train.patience epochs have passed without a better one.
type bestModel struct {
	nopObserver
	st              Stepper
	res             *Result // holds the best epoch and its accuracies
	every, patience int     // train.eval_every, train.patience (0: never stop)
	watch           watched
	plan            *evalPlan
	score           float64 // the best epoch's watched figure (but valid_acc: res.BestValidAcc)
	// params are the best epoch's parameters, nil before the first
	// evaluation; since counts the epochs evaluated after it.
	params map[string][]float64
	since  int
}

// exhausted reports whether patience has run out.
func (b *bestModel) exhausted() bool { return b.patience > 0 && b.since >= b.patience }

// start stops a resumed run whose patience ran out before the checkpoint.
func (b *bestModel) start(context.Context) (bool, error) { return b.exhausted(), nil }

// epoch takes an evaluated epoch that validates better than the best so
// far (or is the first) as the best.
func (b *bestModel) epoch(_ context.Context, rec *EpochRecord) (bool, error) {
	if !rec.Evaluated {
		return b.exhausted(), nil
	}
	r := b.res
	if r.BestEpoch < 0 || b.improves(rec) {
		b.take(rec)
		var err error
		if b.params, err = b.st.Params().Snapshot(); err != nil {
			return false, err
		}
		b.since = 0
	} else {
		b.since += max(b.every, 1)
	}
	return b.exhausted(), nil
}

// improves reports whether rec's watched figure beats the best epoch's.
func (b *bestModel) improves(rec *EpochRecord) bool {
	if b.watch.key == "" { // valid_acc, as before train.early_stop_metric
		return rec.ValidAcc > b.res.BestValidAcc
	}
	return b.watch.better(b.watch.value(rec), b.score)
}

// figure is the best epoch's watched figure for people: "valid 0.792",
// "valid_loss 0.4312".
func (b *bestModel) figure() string {
	if b.watch.key == "" {
		return fmt.Sprintf("valid %.3f", b.res.BestValidAcc)
	}
	return fmt.Sprintf("%s %.4g", b.watch.key, b.score)
}

// take records rec as the best epoch in the result.
func (b *bestModel) take(rec *EpochRecord) {
	r := b.res
	r.BestEpoch, r.BestValidAcc, r.TrainAcc, r.TestAcc = rec.Epoch, rec.ValidAcc, rec.TrainAcc, rec.TestAcc
	r.Metrics, b.score = b.plan.reported(rec.Metrics), b.watch.value(rec)
}

// linkCounter fills each record's TransferBytes: the bytes the simulated
// links carried since the previous record (the first one's include the
// set-up).
type linkCounter struct {
	nopObserver
	tc          backend.TrafficCounter // nil: the backend counts none
	transferred int64                  // the link bytes up to the last record
}

func newLinkCounter(be backend.Backend) *linkCounter {
	tc, _ := be.(backend.TrafficCounter)
	return &linkCounter{tc: tc}
}

func (c *linkCounter) epoch(_ context.Context, rec *EpochRecord) (bool, error) {
	if c.tc != nil {
		total := linkBytes(c.tc.Traffic())
		rec.TransferBytes, c.transferred = total-c.transferred, total
	}
	return false, nil
}

// history keeps every epoch's record, for the checkpoint.
type history struct {
	nopObserver
	records []EpochRecord
}

func (h *history) epoch(_ context.Context, rec *EpochRecord) (bool, error) {
	h.records = append(h.records, *rec)
	return false, nil
}

// csvRows writes each record as a row of output.csv and commits the file
// when the run ends with its outputs kept.
type csvRows struct {
	nopObserver
	out   *csvOut
	be    backend.Backend // its tiers are the peak columns
	extra []string        // the stepper's own columns (Columner)
	figs  []string        // the evaluation's figures (evalPlan.columns)
}

// header writes the header row, the stepper's columns last.
func (c *csvRows) header(st Stepper) error {
	header := []string{"epoch", "time_s", "loss", "train_acc", "valid_acc", "test_acc", "sample_s", "extract_s", "stage_s", "train_s", "transfer_bytes", "predicted_s"}
	for _, tier := range c.be.Tiers() {
		header = append(header, "peak_"+string(tier)+"_bytes")
	}
	if cl, ok := st.(Columner); ok {
		c.extra = cl.Columns()
		header = append(header, c.extra...)
	}
	return c.out.write(append(header, c.figs...))
}

func (c *csvRows) epoch(_ context.Context, rec *EpochRecord) (bool, error) {
	return false, c.out.write(recordRow(*rec, c.be.Tiers(), c.extra, c.figs))
}

func (c *csvRows) end(e *ending) error { return commitKept(e, c.out.commit) }

// logLines writes each record as a JSON line of output.log and commits
// the file when the run ends with its outputs kept.
type logLines struct {
	nopObserver
	out *logOut
}

func (g *logLines) epoch(_ context.Context, rec *EpochRecord) (bool, error) {
	return false, g.out.write(*rec)
}

func (g *logLines) end(e *ending) error { return commitKept(e, g.out.commit) }

// commitKept commits an output when the run keeps its outputs.
func commitKept(e *ending, commit func() error) error {
	if !e.keep() {
		return nil
	}
	return commit()
}

// progress counts each epoch in the result and reports it on the bar:
// the bar counts the epochs done (12/400), the status names the epoch by
// its index from 0 as output.csv and the result do (docs/outputs.md).
type progress struct {
	nopObserver
	bar  *metrics.Progress
	res  *Result
	best *bestModel
}

func (p *progress) epoch(_ context.Context, rec *EpochRecord) (bool, error) {
	p.res.Epochs = rec.Epoch + 1
	p.bar.Update(rec.Epoch+1, progressStatus(rec, p.res, p.best))
	return false, nil
}

// progressStatus is the bar's status after rec: the epoch, its loss, the
// best epoch's watched figure once an evaluation has picked one, the
// epoch's time.
func progressStatus(rec *EpochRecord, res *Result, best *bestModel) string {
	s := fmt.Sprintf("epoch %d loss %.4f", rec.Epoch, rec.Loss)
	if res.BestEpoch >= 0 {
		s += fmt.Sprintf(" best %s at epoch %d", best.figure(), res.BestEpoch)
	}
	return s + fmt.Sprintf(" %.3gs/epoch", rec.TimeS)
}

// checkpointer writes output.checkpoint every train.checkpoint_every
// epochs and after the last (its lock is held from open to the end).
type checkpointer struct {
	nopObserver
	l             *loop
	path          string
	every, epochs int
}

// due reports whether a checkpoint follows epoch ep.
func (c *checkpointer) due(ep int) bool { return (ep+1)%c.every == 0 || ep == c.epochs-1 }

func (c *checkpointer) epoch(_ context.Context, rec *EpochRecord) (bool, error) {
	if !c.due(rec.Epoch) {
		return false, nil
	}
	l, t := c.l, c.l.clock
	meta := checkpointMeta{NextEpoch: rec.Epoch + 1, SinceBest: l.best.since, HasBest: l.best.params != nil,
		TimesS: t.times, EvalTimesS: t.evalTimes, PredictedS: t.predicted, Records: l.hist.records,
		PeakBytes: tierMap(t.peaks.all), TrainPeakBytes: tierMap(t.peaks.train), EvalPeakBytes: tierMap(t.peaks.eval)}
	if err := l.saveCheckpoint(c.path, meta, l.best.params); err != nil {
		return false, &OutputError{Key: "output.checkpoint", Err: fmt.Errorf("after epoch %d: %w", rec.Epoch, err)}
	}
	return false, nil
}

// finalModel ends a complete run with the best-validation parameters
// (when it evaluated) and writes them to output.model.
type finalModel struct {
	nopObserver
	l *loop
}

func (f *finalModel) end(e *ending) error {
	if !e.complete() {
		return nil
	}
	l := f.l
	if l.best.params != nil {
		if err := l.st.Params().Restore(l.best.params); err != nil { // through the parameters' view: counted as parameters
			return err
		}
	}
	if path := l.cfg.ModelPath(); path != "" {
		if err := l.saveModel(path); err != nil {
			return &OutputError{Key: "output.model", Err: err}
		}
	}
	return nil
}

// epochHook calls Options.AfterEpoch after each epoch's bookkeeping and
// checkpoint (a test hook: it may cancel the run's context).
type epochHook func(epoch int)

func (h epochHook) start(context.Context) (bool, error) { return false, nil }

func (h epochHook) epoch(_ context.Context, rec *EpochRecord) (bool, error) {
	h(rec.Epoch)
	return false, nil
}

func (h epochHook) end(*ending) error { return nil }

// saveCheckpoint writes the loop's state to path (see docs/checkpoints.md).
func (l *loop) saveCheckpoint(path string, meta checkpointMeta, best map[string][]float64) error {
	r := l.res
	meta.StateVersion, meta.Dataset = checkpointStateVersion, l.dataset
	meta.ConfigSHA256, meta.ModuleSHA256, meta.Model, meta.Seed = r.ConfigSHA256, l.model.SHA256, l.model.Name, l.cfg.Train.Seed
	meta.BestEpoch, meta.BestValidAcc, meta.TrainAcc, meta.TestAcc = r.BestEpoch, r.BestValidAcc, r.TrainAcc, r.TestAcc
	meta.FinalLoss, meta.PredictedComputeS = r.FinalLoss, r.PredictedComputeS
	arrays := map[string][]float64{}
	if err := l.addParams(arrays); err != nil {
		return err
	}
	addPrefixed(arrays, "best/", best)
	ost, err := l.opt.State()
	if err != nil {
		return err
	}
	meta.Optimizer, meta.OptimizerStep = ost.Name, ost.Step
	addPrefixed(arrays, "opt/", ost.Bufs)
	if tc := l.links.tc; tc != nil { // after the snapshots' downloads
		meta.Traffic, meta.TrafficByPurpose = l.traffic.totals(tc.Traffic(), tc.TrafficByPurpose())
		meta.UnrecordedTransferBytes = linkBytes(tc.Traffic()) - l.links.transferred
	}
	return writeArrays(path, "checkpoint", meta, arrays, outputInputs(l.cfg)...)
}
