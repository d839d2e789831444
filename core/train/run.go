package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"time"

	"strata/core/backend"
	"strata/core/config"
	"strata/core/graph"
	"strata/core/metrics"
	"strata/core/modhost"
	"strata/core/safefile"
	"strata/core/tensor"
)

// Options are run-time settings that are not part of the experiment config.
type Options struct {
	Progress io.Writer    // progress bar destination; nil disables it
	Version  string       // strata version for the result
	Host     modhost.Host // runs layer and cost-model modules
	// Resume continues the run from output.checkpoint (strata train
	// --resume): the config and the model module must be the ones the
	// checkpoint was written with.
	Resume bool
	// AfterEpoch, when set, is called after each epoch's bookkeeping and
	// checkpoint (a test hook: it may cancel the run's context).
	AfterEpoch func(epoch int)
	// BeforeEval, when set, is called before each evaluation (a test
	// hook: it may cancel the run's context).
	BeforeEval func(epoch int)
}

// run is Run with the config's modules provisioned.
func run(ctx context.Context, cfg *config.Config, opts Options) (*Result, error) {
	start := time.Now()
	strat, err := StrategyFor(cfg)
	if err != nil {
		return nil, err
	}
	cfgSHA, err := cfg.SHA256()
	if err != nil {
		return nil, err
	}
	var ck *checkpoint
	if opts.Resume {
		path := cfg.CheckpointPath()
		if path == "" {
			return nil, cfg.KeyError("--resume continues from output.checkpoint, and the config sets none: set output.checkpoint (and train.checkpoint_every) to the file the interrupted run wrote", "output", "checkpoint")
		}
		if ck, err = readCheckpoint(path); err != nil {
			return nil, fmt.Errorf("--resume: %w", err)
		}
		if ck.meta.ConfigSHA256 != cfgSHA {
			return nil, fmt.Errorf("--resume: %s was written by a run of config %s, this config hashes to %s: resume with the config the run started with, or start afresh without --resume", path, ck.meta.ConfigSHA256, cfgSHA)
		}
	}
	loadCtx := ctx
	if _, set := graph.LoadProgressFrom(ctx); !set {
		loadCtx = graph.WithLoadProgress(ctx, graph.LoadProgress{W: opts.Progress, Label: "train: loading " + cfg.Data.Dataset, Quiet: time.Second, Every: 5 * time.Second})
	}
	env, model, closeEnv, err := NewEnv(loadCtx, cfg, opts.Host)
	if err != nil {
		return interruptedEarly(ctx, err, cfg, opts, start, cfgSHA)
	}
	defer closeEnv()
	env.Progress = opts.Progress
	if ck != nil && ck.meta.ModuleSHA256 != model.SHA256 {
		return nil, fmt.Errorf("--resume: %s was written with model module %s (sha256 %s), the config's module %s has sha256 %s: resume with the module the run started with, or start afresh without --resume",
			cfg.CheckpointPath(), ck.meta.Model, ck.meta.ModuleSHA256, model.Name, model.SHA256)
	}
	be, ds, dim := env.Backend, env.Dataset, env.Dim
	// Loading leaves garbage (parsed copies, temporaries): collect it so
	// that the stepper's buffers reuse its memory instead of adding to it.
	debug.FreeOSMemory()
	st, err := strat.NewStepper(ctx, env)
	if err != nil {
		return interruptedEarly(ctx, err, cfg, opts, start, cfgSHA)
	}
	defer func() { st.Release(); trimPool(be) }()
	ds.DropMappedPages() // what training reads has been copied, or comes back from the page cache
	debug.FreeOSMemory()
	loadRSS := metrics.PeakRSS()
	if a, ok := st.(Announcer); ok && opts.Progress != nil {
		if line := a.Announce(); line != "" {
			fmt.Fprintln(opts.Progress, line)
		}
	}
	opt, err := NewOptimizer(cfg.Train.Optimizer, be, cfg.Train.LR, cfg.Train.WeightDecay, cfg.Train.Momentum)
	if err != nil {
		return nil, err
	}
	res := &Result{
		Dataset: ds.Name, Model: model.Name, Mode: cfg.Train.Mode, Backend: be.Name(),
		Nodes: ds.NumNodes, Edges: ds.Graph.NNZ(), Features: dim, Classes: ds.NumClasses,
		Params: model.Graph.NumParams(), Seed: cfg.Train.Seed, Version: opts.Version,
		Threads: threads(cfg), LoadTimeS: time.Since(start).Seconds(), BestEpoch: -1,
	}
	if d, ok := be.(backend.Named); ok {
		res.Device = d.DeviceName()
	}
	if env.FeatureDType.IsHalf() {
		res.FeatureDType, res.FeatureBytes = env.FeatureDType.String(), 2*int64(len(env.Features16))
	}
	res.noValid, res.noTest = len(ds.Valid) == 0, len(ds.Test) == 0
	res.ConfigSHA256 = cfgSHA
	loop := &loop{cfg: cfg, be: be, st: st, opt: opt, ds: ds, res: res, ck: ck, model: model, dim: dim, afterEpoch: opts.AfterEpoch, beforeEval: opts.BeforeEval}
	if err := loop.run(ctx, opts); err != nil {
		var de *DivergedError
		if errors.As(err, &de) {
			res.Status = StatusDiverged
			return res, err
		}
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			res.Status = StatusInterrupted // the best so far, for the result line
			return res, err
		}
		return nil, err
	}
	res.MicroBatches = cfg.Train.MicroBatches
	if r, ok := st.(ResultReporter); ok {
		r.ReportResult(res)
	}
	if tc, ok := be.(backend.TrafficCounter); ok {
		res.Traffic, res.TrafficByPurpose = loop.traffic.totals(tc.Traffic(), tc.TrafficByPurpose())
		for _, l := range res.Traffic {
			res.TransferTimeS += l.Seconds
		}
	}
	res.PeakRSSBytes, res.LoadPeakRSSBytes = metrics.PeakRSS(), loadRSS
	for t, v := range be.Stats().Peak { // since the loop's last phase
		res.PeakTierBytes[string(t)] = max(res.PeakTierBytes[string(t)], v)
	}
	return res, nil
}

// interruptedEarly returns, for a run whose set-up (loading, compiling,
// building the stepper) ended with err, the result line of a run
// interrupted before its first epoch when ctx was cancelled (SIGINT), so
// the caller prints one as for a later interruption; otherwise err alone.
func interruptedEarly(ctx context.Context, err error, cfg *config.Config, opts Options, start time.Time, cfgSHA string) (*Result, error) {
	if !errors.Is(err, context.Canceled) || ctx.Err() == nil {
		return nil, err
	}
	return &Result{Status: StatusInterrupted, Dataset: cfg.Data.Dataset, Model: cfg.Model.Name, Mode: cfg.Train.Mode, Backend: cfg.Train.Backend,
		BestEpoch: -1, Seed: cfg.Train.Seed, Version: opts.Version, ConfigSHA256: cfgSHA, Threads: threads(cfg),
		LoadTimeS: time.Since(start).Seconds(), PeakRSSBytes: metrics.PeakRSS(), PeakTierBytes: map[string]int64{}}, err
}

// NewEnv builds what a stepper is built from: it loads the dataset and
// prepares its features, opens the backend (with its kernel cost model
// when it predicts time), builds the model from its module and the
// adjacencies. closeEnv releases the backend and the cost model.
func NewEnv(ctx context.Context, cfg *config.Config, host modhost.Host) (env *Env, model *Model, closeEnv func(), err error) {
	if host == nil {
		return nil, nil, nil, errors.New("train: no module host to run the model's layer module (Options.Host)")
	}
	ds, feats, dim, err := loadData(ctx, cfg, rankLocal(ctx, cfg))
	if err != nil {
		return nil, nil, nil, err
	}
	be, err := newBackend(ctx, cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	var closers []func()
	cleanup := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	defer func() {
		if err != nil {
			cleanup()
		}
	}()
	if c, ok := be.(io.Closer); ok {
		closers = append(closers, func() { c.Close() })
	}
	if tp, ok := be.(backend.TimePredictor); ok {
		release, err := attachKernelCost(ctx, cfg, tp, host)
		if err != nil {
			return nil, nil, nil, err
		}
		closers = append(closers, release)
	}
	dt := tensor.Float32
	if cfg.Train.DType == "float64" {
		dt = tensor.Float64
	}
	tier := tensor.Host
	if d, ok := be.(backend.Device); ok {
		tier = d.ComputeTier() // the first simulated device, or the GPU
	}
	model, err = BuildModel(ctx, cfg, host, dim, ds.NumClasses)
	if err != nil {
		return nil, nil, nil, err
	}
	adjs, err := BuildAdjacencies(ds, cfg.Data.Symmetrize)
	if err != nil {
		return nil, nil, nil, err
	}
	env = &Env{Config: cfg, Backend: be, DType: dt, Tier: tier, Model: model.Graph, Dataset: ds, Features: feats, Dim: dim,
		Adjs: adjs, Seed: uint64(cfg.Train.Seed), Host: host, FeatureDType: tensor.Float32}
	if err := compactFeatures(cfg, env); err != nil {
		return nil, nil, nil, err
	}
	return env, model, cleanup, nil
}

// loadData opens the dataset, checks that it can be trained on and returns
// it with its prepared feature matrix; with local, without any feature row
// (the strategy loads its own, LoadFeatureRows), only their width.
func loadData(ctx context.Context, cfg *config.Config, local bool) (*graph.Dataset, []float32, int, error) {
	if err := checkSupported(cfg); err != nil {
		return nil, nil, 0, err
	}
	if local {
		ctx = graph.WithFeatureRows(ctx, nil)
	}
	ds, err := LoadDataset(ctx, cfg)
	if err != nil {
		return nil, nil, 0, err
	}
	if n, w := int64(ds.NumNodes), int64(cfg.Data.SynthFeatures); ds.FeatDim == 0 && n*w*4 > graph.MaxMemory(ctx) {
		return nil, nil, 0, cfg.KeyError(fmt.Sprintf("data.synth_features = %d: %d nodes x %d random features would need %s, more than the memory budget of %s (--max-memory); use fewer features",
			w, n, w, graph.FormatBytes(n*w*4), graph.FormatBytes(graph.MaxMemory(ctx))), "data", "synth_features")
	}
	if ds.NumClasses < 2 {
		return nil, nil, 0, cfg.KeyError(fmt.Sprintf("dataset %q has %d classes; node classification needs labels with at least 2 classes (an edge list carries none: give labels in the OGB raw layout, raw/node-label.csv, a .npy directory's labels.npy or a .npz file, see docs/datasets.md)", ds.Name, ds.NumClasses), "data", "dataset")
	}
	if len(ds.Train) == 0 {
		return nil, nil, 0, cfg.KeyError(fmt.Sprintf("dataset %q has no training nodes; give it a split with data.split = \"random-20-30-seed0\" (20 training and 30 validation nodes per class) or split files (docs/datasets.md)", ds.Name), "data", "dataset")
	}
	if local {
		if ds.FeatDim == 0 && cfg.Data.SynthFeatures <= 0 {
			return nil, nil, 0, fmt.Errorf("data: dataset %q has no node features; set data.synth_features = <width> to train on random features", ds.Name)
		}
		if ds.FeatDim == 0 {
			return ds, nil, cfg.Data.SynthFeatures, nil
		}
		return ds, nil, ds.FeatDim, nil
	}
	feats, dim, err := prepareFeatures(ds, cfg.Data.FeatureNorm, cfg.Data.SynthFeatures, uint64(cfg.Train.Seed))
	if err != nil {
		return nil, nil, 0, err
	}
	return ds, feats, dim, nil
}

// LoadDataset opens data.dataset (cancelled with ctx, within the memory
// budget ctx carries) and applies data.reorder ("score" ranks with the
// [cache] module: provision cfg first, see config.Config.Provision).
func LoadDataset(ctx context.Context, cfg *config.Config) (*graph.Dataset, error) {
	ds, err := graph.OpenContext(ctx, cfg.DatasetSpec())
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, cfg.KeyError(err.Error(), "data", "dataset")
	}
	switch cfg.Data.Reorder {
	case "degree":
		graph.ReorderByDegree(ds)
	case "score":
		if err := reorderByScore(ctx, cfg, ds); err != nil {
			return nil, err
		}
	}
	return ds, nil
}

// check is Check, with the config's modules provisioned unless skipData.
func check(ctx context.Context, cfg *config.Config, host modhost.Host, skipData bool) error {
	if err := checkSupported(cfg); err != nil {
		return err
	}
	if skipData {
		_, err := BuildModel(ctx, cfg, host, 16, 2)
		return err
	}
	// Everything Run does before the first epoch, by the same code.
	strat, err := StrategyFor(cfg)
	if err != nil {
		return err
	}
	env, _, closeEnv, err := NewEnv(ctx, cfg, host)
	if err != nil {
		return err
	}
	defer closeEnv()
	st, err := strat.NewStepper(ctx, env)
	if err != nil {
		return err
	}
	st.Release()
	return nil
}

func threads(cfg *config.Config) int {
	if cfg.Train.Threads > 0 {
		return cfg.Train.Threads
	}
	return runtime.GOMAXPROCS(0)
}

// newBackend opens the backend train.backend names.
func newBackend(ctx context.Context, cfg *config.Config) (backend.Backend, error) {
	m, err := BackendFor(cfg)
	if err != nil {
		return nil, err
	}
	return m.NewBackend(ctx, cfg, threads(cfg))
}

func tierMap(m map[tensor.Tier]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[string(k)] = v
	}
	return out
}

// loop holds the state of one training run.
type loop struct {
	cfg  *config.Config
	be   backend.Backend
	st   Stepper
	opt  Optimizer
	ds   *graph.Dataset
	res  *Result
	pred []int32

	ck      *checkpoint // to resume from, or nil
	traffic trafficBase // link counters carried over a resume
	// transferred is the link bytes counted up to the last epoch record.
	transferred int64
	records     []EpochRecord
	model       *Model
	dim         int
	afterEpoch  func(int)
	beforeEval  func(int)
	extra       []string // the stepper's own output.csv columns (Columner)
}

func (l *loop) run(ctx context.Context, opts Options) error {
	epochs := l.cfg.Train.Epochs
	// A bar on a terminal; otherwise (nohup, a batch scheduler) a plain
	// line per epoch, at most one a second, and the last one.
	bar := metrics.NewLogProgress(opts.Progress, "train", epochs, time.Second, nil)
	defer bar.Done()
	var logw *logOut
	if path := l.cfg.LogPath(); path != "" {
		var err error
		if logw, err = openLog(l.cfg, path); err != nil {
			return err
		}
		defer logw.close()
	}
	var csvw *csvOut
	if path := l.cfg.CSVPath(); path != "" {
		var err error
		if csvw, err = openCSV(l.cfg, path); err != nil {
			return fmt.Errorf("output.csv: %w", err)
		}
		defer csvw.close()
		header := []string{"epoch", "time_s", "loss", "train_acc", "valid_acc", "test_acc", "sample_s", "extract_s", "stage_s", "train_s", "cache_hit_rate", "transfer_bytes", "predicted_s"}
		for _, tier := range l.be.Tiers() {
			header = append(header, "peak_"+string(tier)+"_bytes")
		}
		if c, ok := l.st.(Columner); ok {
			l.extra = c.Columns()
			header = append(header, l.extra...)
		}
		if err := csvw.write(header); err != nil {
			return err
		}
	}
	var times, evalTimes, predicted []float64
	_, simulated := l.be.(backend.TimePredictor)
	peaks := newPhasePeaks(l.be)
	var best map[string][]float64
	sinceBest := 0
	start := 0
	if l.ck != nil {
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
			best = prefixed(l.ck.arrays, "best/")
		}
		sinceBest, start = m.SinceBest, m.NextEpoch
		times, evalTimes, predicted = m.TimesS, m.EvalTimesS, m.PredictedS
		l.res.BestEpoch, l.res.BestValidAcc, l.res.TrainAcc, l.res.TestAcc = m.BestEpoch, m.BestValidAcc, m.TrainAcc, m.TestAcc
		l.res.FinalLoss, l.res.Epochs, l.res.PredictedComputeS = m.FinalLoss, m.NextEpoch, m.PredictedComputeS
		if tc, ok := l.be.(backend.TrafficCounter); ok {
			setup := tc.Traffic()
			l.traffic = resumeTraffic(m.Traffic, m.TrafficByPurpose, setup, tc.TrafficByPurpose())
			// The next record counts its epoch and what the checkpoint's
			// own downloads added after the last record, as uninterrupted.
			l.transferred = linkBytes(setup) - m.UnrecordedTransferBytes
		}
		// The peaks so far are the checkpoint's: the resumed set-up is no
		// part of the uninterrupted run.
		peaks.all, peaks.train, peaks.eval = tierKeyed(m.PeakBytes), tierKeyed(m.TrainPeakBytes), tierKeyed(m.EvalPeakBytes)
		// The epochs before the checkpoint go into output.csv and
		// output.log again, so they hold the whole run.
		for _, rec := range m.Records {
			if err := l.emit(csvw, logw, rec); err != nil {
				return err
			}
		}
		l.ck = nil
	}
	ckEvery, ckPath := l.cfg.Train.CheckpointEvery, l.cfg.CheckpointPath()
	if ckEvery > 0 && ckPath != "" {
		lock, err := safefile.Acquire(ckPath)
		if err != nil {
			return fmt.Errorf("output.checkpoint: %w", err)
		}
		defer lock.Release()
	}
	// stats fills the result's timings and peaks, at the end or when the
	// run diverges.
	stats := func() {
		l.res.PeakTierBytes, l.res.TrainPeakTierBytes, l.res.EvalPeakTierBytes = tierMap(peaks.all), tierMap(peaks.train), tierMap(peaks.eval)
		l.res.EpochTimeMedianS = median(times, 2)
		l.res.PredictedEpochS = median(predicted, 0)
		l.res.EvalTimeMedianS = median(evalTimes, 0)
		l.res.PeakRSSBytes = metrics.PeakRSS()
	}
	for ep := start; ep < epochs; ep++ {
		if p := l.cfg.Train.Patience; p > 0 && sinceBest >= p {
			break
		}
		t0 := time.Now()
		var before Prediction
		if simulated {
			before = PredictionNow(l.be)
		}
		peaks.start()
		loss, err := l.step(ctx, ep)
		if err != nil {
			if ctx.Err() != nil {
				stats()
				return errors.Join(fmt.Errorf("epoch %d: %w", ep, err), csvw.commit(), logw.commit())
			}
			return fmt.Errorf("epoch %d: %w", ep, err)
		}
		if s, ok := l.be.(backend.Synchronizer); ok { // the optimizer step may still be queued
			if err := s.Synchronize(); err != nil {
				return fmt.Errorf("epoch %d: %w", ep, err)
			}
		}
		peaks.end(peaks.train)
		dt := time.Since(t0).Seconds()
		times = append(times, dt)
		l.res.FinalLoss = loss
		if !finite(loss) {
			l.res.Epochs = ep + 1
			stats()
			return errors.Join(&DivergedError{Epoch: ep, What: "the loss", Value: loss}, csvw.commit(), logw.commit())
		}
		rec := EpochRecord{Epoch: ep, TimeS: dt, Loss: loss, PeakBytes: tierMap(peaks.all)}
		if simulated {
			work := PredictionNow(l.be).Since(before)
			rec.PredictedS = work.SequentialS()
			if p, ok := l.st.(Pipelined); ok {
				rec.PredictedS = p.PredictedS()
			}
			predicted = append(predicted, rec.PredictedS)
			l.res.PredictedComputeS = work.computeSeconds()
		}
		if r, ok := l.st.(EpochReporter); ok {
			r.ReportEpoch(&rec)
		}
		every := l.cfg.Train.EvalEvery
		if every > 0 && (ep+1)%every == 0 || ep == epochs-1 {
			if l.beforeEval != nil {
				l.beforeEval(ep)
			}
			t1 := time.Now()
			trimPool(l.be) // the steps' free buffers do not stay beside evaluation's
			peaks.start()
			tr, va, te, err := l.evaluate(ctx)
			if err != nil {
				if ctx.Err() != nil {
					// Interrupted: the finished epoch keeps its time and loss.
					l.res.Epochs = ep + 1
					stats()
					return errors.Join(fmt.Errorf("epoch %d evaluation: %w", ep, err), csvw.commit(), logw.commit())
				}
				return fmt.Errorf("epoch %d evaluation: %w", ep, err)
			}
			peaks.end(peaks.eval)
			trimPool(l.be) // nor evaluation's beside the next steps'
			evalTimes = append(evalTimes, time.Since(t1).Seconds())
			if snap, err := l.st.Params().Snapshot(); err != nil {
				return err
			} else if err := checkFinite(ep, snap); err != nil {
				l.res.Epochs = ep + 1
				stats()
				return errors.Join(err, csvw.commit(), logw.commit())
			}
			rec.TrainAcc, rec.ValidAcc, rec.TestAcc, rec.Evaluated = tr, va, te, true
			if l.res.BestEpoch < 0 || va > l.res.BestValidAcc {
				l.res.BestEpoch, l.res.BestValidAcc, l.res.TrainAcc, l.res.TestAcc = ep, va, tr, te
				if best, err = l.st.Params().Snapshot(); err != nil {
					return err
				}
				sinceBest = 0
			} else {
				sinceBest += max(every, 1)
			}
		}
		if tc, ok := l.be.(backend.TrafficCounter); ok {
			total := int64(0)
			for _, t := range tc.Traffic() {
				total += t.Bytes
			}
			rec.TransferBytes, l.transferred = total-l.transferred, total
		}
		if err := l.emit(csvw, logw, rec); err != nil {
			return err
		}
		l.res.Epochs = ep + 1
		bar.Update(ep+1, fmt.Sprintf("epoch %d loss %.4f valid %.3f (best) %.3gs/epoch", ep+1, loss, l.res.BestValidAcc, dt))
		if ckEvery > 0 && ckPath != "" && ((ep+1)%ckEvery == 0 || ep == epochs-1) {
			meta := checkpointMeta{NextEpoch: ep + 1, SinceBest: sinceBest, HasBest: best != nil,
				TimesS: times, EvalTimesS: evalTimes, PredictedS: predicted, Records: l.records,
				PeakBytes: tierMap(peaks.all), TrainPeakBytes: tierMap(peaks.train), EvalPeakBytes: tierMap(peaks.eval)}
			if err := l.saveCheckpoint(ckPath, meta, best); err != nil {
				return fmt.Errorf("output.checkpoint after epoch %d: %w", ep, err)
			}
		}
		if l.afterEpoch != nil {
			l.afterEpoch(ep)
		}
		if err := ctx.Err(); err != nil {
			stats()
			// An interrupted run keeps the rows of its finished epochs.
			return errors.Join(err, csvw.commit(), logw.commit())
		}
	}
	stats()
	if err := csvw.commit(); err != nil {
		return err
	}
	if err := logw.commit(); err != nil {
		return err
	}
	if best != nil {
		if err := l.st.Params().Restore(best); err != nil { // through the parameters' view: counted as parameters
			return err
		}
	}
	if path := l.cfg.ModelPath(); path != "" {
		if err := l.saveModel(path); err != nil {
			return fmt.Errorf("output.model: %w", err)
		}
	}
	return nil
}

// emit writes one epoch's record to output.csv and output.log (either may
// be nil) and keeps it for the checkpoint.
func (l *loop) emit(csvw *csvOut, logw *logOut, rec EpochRecord) error {
	l.records = append(l.records, rec)
	if csvw != nil {
		if err := csvw.write(recordRow(rec, l.be.Tiers(), l.extra)); err != nil {
			return err
		}
	}
	return logw.write(rec)
}

// step runs one training epoch and returns the loss.
func (l *loop) step(ctx context.Context, epoch int) (float64, error) {
	seed := uint64(l.cfg.Train.Seed)*1_000_003 + uint64(epoch)
	return l.st.Epoch(ctx, seed, func() error { return l.opt.Step(l.st.Params().List()) })
}

// evaluate returns train, valid and test accuracy with dropout off.
func (l *loop) evaluate(ctx context.Context) (float64, float64, float64, error) {
	if l.pred == nil {
		l.pred = make([]int32, l.ds.NumNodes)
	}
	if err := l.st.Predict(ctx, l.pred); err != nil {
		return 0, 0, 0, err
	}
	d := l.ds
	return accuracy(l.pred, d.Labels, d.Train), accuracy(l.pred, d.Labels, d.Valid), accuracy(l.pred, d.Labels, d.Test), nil
}

func recordRow(r EpochRecord, tiers []tensor.Tier, extra []string) []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	row := []string{strconv.Itoa(r.Epoch), f(r.TimeS), f(r.Loss), "", "", "",
		f(r.SampleS), f(r.ExtractS), f(r.StageS), f(r.TrainS), f(r.CacheHitRate), strconv.FormatInt(r.TransferBytes, 10), f(r.PredictedS)}
	if r.Evaluated {
		row[3], row[4], row[5] = f(r.TrainAcc), f(r.ValidAcc), f(r.TestAcc)
	}
	for _, tier := range tiers {
		row = append(row, strconv.FormatInt(r.PeakBytes[string(tier)], 10))
	}
	for _, c := range extra {
		row = append(row, r.Extra[c])
	}
	return row
}

// median of v after dropping the first warmup entries (if enough remain).
func median(v []float64, warmup int) float64 {
	if len(v) > warmup {
		v = v[warmup:]
	}
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// saveCheckpoint writes the loop's state to path (see docs/checkpoints.md).
func (l *loop) saveCheckpoint(path string, meta checkpointMeta, best map[string][]float64) error {
	r := l.res
	meta.ConfigSHA256, meta.ModuleSHA256, meta.Model, meta.Seed = r.ConfigSHA256, l.model.SHA256, l.model.Name, l.cfg.Train.Seed
	meta.BestEpoch, meta.BestValidAcc, meta.TrainAcc, meta.TestAcc = r.BestEpoch, r.BestValidAcc, r.TrainAcc, r.TestAcc
	meta.FinalLoss, meta.PredictedComputeS = r.FinalLoss, r.PredictedComputeS
	arrays := map[string][]float64{}
	params, err := l.st.Params().Snapshot()
	if err != nil {
		return err
	}
	addPrefixed(arrays, "param/", params)
	state, err := l.st.Params().SnapshotState()
	if err != nil {
		return err
	}
	addPrefixed(arrays, "state/", state)
	addPrefixed(arrays, "best/", best)
	ost, err := l.opt.State()
	if err != nil {
		return err
	}
	meta.Optimizer, meta.OptimizerStep = ost.Name, ost.Step
	addPrefixed(arrays, "opt/", ost.Bufs)
	if tc, ok := l.be.(backend.TrafficCounter); ok { // after the snapshots' downloads
		meta.Traffic, meta.TrafficByPurpose = l.traffic.totals(tc.Traffic(), tc.TrafficByPurpose())
		meta.UnrecordedTransferBytes = linkBytes(tc.Traffic()) - l.transferred
	}
	return writeArrays(path, "checkpoint", meta, arrays, outputInputs(l.cfg)...)
}

// saveModel writes output.model: the parameters the run ends with (the
// best-validation ones), the batch-norm statistics, and what predict
// checks them against.
func (l *loop) saveModel(path string) error {
	canon, err := l.cfg.Canonical()
	if err != nil {
		return err
	}
	r := l.res
	meta := ModelMeta{ConfigSHA256: r.ConfigSHA256, Config: string(canon), ModuleSHA256: l.model.SHA256, Model: l.model.Name,
		Features: l.dim, Classes: l.ds.NumClasses, Params: r.Params, BestEpoch: r.BestEpoch, BestValidAcc: r.BestValidAcc}
	arrays := map[string][]float64{}
	params, err := l.st.Params().Snapshot()
	if err != nil {
		return err
	}
	addPrefixed(arrays, "param/", params)
	state, err := l.st.Params().SnapshotState()
	if err != nil {
		return err
	}
	addPrefixed(arrays, "state/", state)
	return writeArrays(path, "model", meta, arrays, outputInputs(l.cfg)...)
}
