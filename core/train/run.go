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
	// Warnings receives warnings (stderr); nil drops them.
	Warnings io.Writer
	// Rescue, when set, lets another goroutine end the run while it waits
	// in a collective that never returns (see Rescue).
	Rescue *Rescue
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
	if err := CheckOutputs(cfg); err != nil { // before hours of training
		return nil, err
	}
	opts.Rescue.begin(func(status string) *Result { return earlyResult(status, cfg, opts, start, cfgSHA) })
	defer opts.Rescue.close()
	var ck *checkpoint
	if opts.Resume {
		if ck, err = resumeFrom(cfg, cfgSHA); err != nil {
			return nil, err
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
	dsID, err := checkpointDataset(cfg, ck, ds, dim, opts.Warnings)
	if err != nil {
		return nil, err
	}
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
	opt, err := env.NewOptimizer(be)
	if err != nil {
		return nil, err
	}
	res := &Result{
		Dataset: ds.Name, Model: model.Name, Mode: cfg.Train.Mode, Backend: be.Name(),
		Nodes: ds.NumNodes, Edges: ds.Graph.NNZ(), Features: dim, Classes: ds.NumClasses,
		Params: model.Graph.NumParams(), Seed: cfg.Train.Seed, Version: opts.Version,
		Threads: threads(cfg), LoadTimeS: time.Since(start).Seconds(), BestEpoch: -1,
	}
	if ds.HasTargets() {
		res.Targets = ds.Kind.String()
	}
	if env.Link != nil {
		res.Targets, res.Params = config.TaskLink, res.Params+env.Link.Decoder.NumParams()
		res.Link = env.Link.figures(cfg)
	}
	if d, ok := be.(backend.Named); ok {
		res.Device = d.DeviceName()
	}
	if env.FeatureDType.IsHalf() {
		res.FeatureDType, res.FeatureBytes = env.FeatureDType.String(), 2*int64(len(env.Features16))
	}
	res.noValid, res.noTest = len(ds.Valid) == 0, len(ds.Test) == 0
	res.ConfigSHA256 = cfgSHA
	res.alreadyFinished = ck != nil && ck.finished(cfg)
	loop := &loop{cfg: cfg, be: be, st: st, opt: opt, lr: env.lr, ds: ds, res: res, ck: ck, model: model, dim: dim, featureNorm: env.FeatureNorm, dataset: dsID, afterEpoch: opts.AfterEpoch, beforeEval: opts.BeforeEval, link: env.Link}
	if err := loop.run(ctx, opts); err != nil {
		return partialResult(ctx, res, err)
	}
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

// partialResult is what Run returns for a run that ended with err: the
// result so far, for the result line, of a run that diverged, was
// interrupted (the best epoch so far) or could not write its checkpoint
// or model (output.csv and output.log are committed); otherwise err alone.
func partialResult(ctx context.Context, res *Result, err error) (*Result, error) {
	var de *DivergedError
	var oe *OutputError
	switch {
	case errors.As(err, &de):
		res.Status = StatusDiverged
	case errors.As(err, &oe):
		res.Status = StatusFailed
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		res.Status = StatusInterrupted
	default:
		return nil, err
	}
	return res, err
}

// resumeFrom reads the checkpoint --resume continues from and checks
// that the config is the one it was written with.
func resumeFrom(cfg *config.Config, cfgSHA string) (*checkpoint, error) {
	path := cfg.CheckpointPath()
	if path == "" {
		return nil, cfg.KeyError("--resume continues from output.checkpoint, and the config sets none: set output.checkpoint (and train.checkpoint_every) to the file the interrupted run wrote", "output", "checkpoint")
	}
	ck, err := readCheckpoint(path, cfg.Train.Epochs)
	if err != nil {
		return nil, fmt.Errorf("--resume: output.checkpoint: %w", err)
	}
	if ck.meta.ConfigSHA256 != cfgSHA {
		return nil, fmt.Errorf("--resume: %s was written by a run of config %s, this config hashes to %s: resume with the config the run started with, or start afresh without --resume", path, ck.meta.ConfigSHA256, cfgSHA)
	}
	return ck, nil
}

// interruptedEarly returns, for a run whose set-up (loading, compiling,
// building the stepper) ended with err, the result line of a run
// interrupted before its first epoch when ctx was cancelled (SIGINT), so
// the caller prints one as for a later interruption; otherwise err alone.
func interruptedEarly(ctx context.Context, err error, cfg *config.Config, opts Options, start time.Time, cfgSHA string) (*Result, error) {
	if !errors.Is(err, context.Canceled) || ctx.Err() == nil {
		return nil, err
	}
	return earlyResult(StatusInterrupted, cfg, opts, start, cfgSHA), err
}

// earlyResult is the result line of a run that ended with status before
// its first epoch.
func earlyResult(status string, cfg *config.Config, opts Options, start time.Time, cfgSHA string) *Result {
	return &Result{Status: status, Dataset: cfg.Data.Dataset, Model: cfg.Model.Name, Mode: cfg.Train.Mode, Backend: cfg.Train.Backend,
		BestEpoch: -1, Seed: cfg.Train.Seed, Version: opts.Version, ConfigSHA256: cfgSHA, Threads: threads(cfg),
		LoadTimeS: time.Since(start).Seconds(), PeakRSSBytes: metrics.PeakRSS(), PeakTierBytes: map[string]int64{}}
}

// NewEnv builds what a stepper is built from: it loads the dataset and
// prepares its features, opens the backend (with its kernel cost model
// when it predicts time), builds the model from its module and the
// adjacencies. closeEnv releases the backend and the cost model.
func NewEnv(ctx context.Context, cfg *config.Config, host modhost.Host) (env *Env, model *Model, closeEnv func(), err error) {
	if host == nil {
		return nil, nil, nil, errors.New("train: no module host to run the model's layer module (Options.Host)")
	}
	ds, feats, dim, norm, err := loadData(ctx, cfg, rankLocal(ctx, cfg))
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
	var split *graph.EdgeSplit
	outWidth := ds.NumClasses
	if cfg.Train.Task == config.TaskLink {
		if split, err = splitForLink(cfg, ds); err != nil {
			return nil, nil, nil, err
		}
		outWidth = embeddingWidth(cfg)
	}
	model, err = BuildModel(ctx, cfg, host, dim, outWidth)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := checkEdgeWeights(cfg, model, ds); err != nil {
		return nil, nil, nil, err
	}
	adjs := BuildModelAdjacencies(ds, cfg.Data.Symmetrize, model.Graph)
	env = &Env{Config: cfg, Backend: be, DType: dt, Tier: tier, Model: model.Graph, Dataset: ds, Features: feats, Dim: dim,
		Adjs: adjs, Seed: uint64(cfg.Train.Seed), Host: host, FeatureDType: tensor.Float32, FeatureNorm: norm}
	if err := compactFeatures(cfg, env); err != nil {
		return nil, nil, nil, err
	}
	if split != nil {
		if env.Link, err = linkTaskFor(ctx, cfg, host, split); err != nil {
			return nil, nil, nil, err
		}
	}
	return env, model, cleanup, nil
}

// loadData opens the dataset, checks that it can be trained on and returns
// it with its prepared feature matrix; with local, without any feature row
// (the strategy loads its own, LoadFeatureRows), only their width. norm
// is the normalisation applied ("row" or "none"; "" with local).
func loadData(ctx context.Context, cfg *config.Config, local bool) (ds *graph.Dataset, feats []float32, dim int, norm string, err error) {
	if err := checkSupported(cfg); err != nil {
		return nil, nil, 0, "", err
	}
	if local {
		ctx = graph.WithFeatureRows(ctx, nil)
	}
	ds, err = LoadDataset(ctx, cfg)
	if err != nil {
		return nil, nil, 0, "", err
	}
	if n, w := int64(ds.NumNodes), int64(cfg.Data.SynthFeatures); ds.FeatDim == 0 && n*w*4 > graph.MaxMemory(ctx) {
		return nil, nil, 0, "", cfg.KeyError(fmt.Sprintf("data.synth_features = %d: %d nodes x %d random features would need %s, more than the memory budget of %s (--max-memory); use fewer features",
			w, n, w, graph.FormatBytes(n*w*4), graph.FormatBytes(graph.MaxMemory(ctx))), "data", "synth_features")
	}
	classes, predicting := ctx.Value(classesKey{}).(int) // a saved model's, on a graph with fewer labelled
	if predicting && ds.NumClasses < classes {
		ds.NumClasses = classes
	}
	link := cfg.Train.Task == config.TaskLink                          // trains on edges: no classes or training nodes needed
	if ds.NumClasses < 2 && !ds.HasTargets() && !predicting && !link { // a saved model fixes its width
		return nil, nil, 0, "", cfg.KeyError(fmt.Sprintf("dataset %q has %d classes; node classification needs labels with at least 2 classes (an edge list carries none: give labels in the OGB raw layout, raw/node-label.csv, a .npy directory's labels.npy or a .npz file, see docs/datasets.md)", ds.Name, ds.NumClasses), "data", "dataset")
	}
	if len(ds.Train) == 0 && !predicting && !link {
		return nil, nil, 0, "", cfg.KeyError(fmt.Sprintf("dataset %q has no training nodes; give it a split with data.split = \"random-20-30-seed0\" (20 training and 30 validation nodes per class) or split files (docs/datasets.md)", ds.Name), "data", "dataset")
	}
	if local {
		if ds.FeatDim == 0 && cfg.Data.SynthFeatures <= 0 {
			return nil, nil, 0, "", fmt.Errorf("data: dataset %q has no node features; set data.synth_features = <width> to train on random features", ds.Name)
		}
		if ds.FeatDim == 0 {
			return ds, nil, cfg.Data.SynthFeatures, "", nil
		}
		return ds, nil, ds.FeatDim, "", nil
	}
	if feats, dim, norm, err = prepareFeatures(ds, cfg.Data.FeatureNorm, cfg.Data.SynthFeatures, uint64(cfg.Train.Seed)); err != nil {
		return nil, nil, 0, "", err
	}
	if norm == "row" {
		ds.Features = nil // the rows as loaded: training reads their normalised copy, feats
	}
	return ds, feats, dim, norm, nil
}

// LoadDataset opens data.dataset (cancelled with ctx, within the memory
// budget ctx carries) and applies data.reorder ("score" ranks with the
// [cache] module: provision cfg first, see config.Config.Provision).
func LoadDataset(ctx context.Context, cfg *config.Config) (*graph.Dataset, error) {
	regression := cfg.Train.Task == config.TaskRegression
	if regression {
		ctx = graph.WithRegression(ctx)
	}
	ds, err := graph.OpenContext(ctx, cfg.DatasetSpec())
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, cfg.KeyError(err.Error(), "data", "dataset")
	}
	if regression && ds.Kind != graph.Regression && ds.Labels != nil && slices.ContainsFunc(ds.Labels, func(l int32) bool { return l >= 0 }) {
		return nil, cfg.KeyError(fmt.Sprintf("train.task = \"regression\" needs real-valued targets, and dataset %q (%s) holds class labels; give the targets as a .npy directory's y.npy (float, (N,) or (N, T), docs/datasets.md) or train its classes with train.task = \"node\"", ds.Name, ds.Source), "train", "task")
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

// loop holds the state of one training run: what it trains, its
// measurements, and the observers that follow its epochs (observer.go).
type loop struct {
	cfg  *config.Config
	be   backend.Backend
	st   Stepper
	opt  Optimizer
	lr   *lrClock // the learning rate of the running epoch, opt's and the replicas'
	ds   *graph.Dataset
	res  *Result
	pred []int32
	plan *evalPlan // what evaluations compute beyond the accuracies
	link *LinkTask // train.task = "link", or nil

	ck          *checkpoint // to resume from, or nil
	dataset     *datasetID  // recorded in checkpoints; nil without them
	traffic     trafficBase // link counters carried over a resume
	model       *Model
	dim         int
	featureNorm string // Env.FeatureNorm, recorded in output.model
	afterEpoch  func(int)
	beforeEval  func(int)

	next     int          // the first epoch to run (a resume's next epoch)
	clock    *timings     // the epochs' and evaluations' measurements
	best     *bestModel   // best-validation parameters, early stopping
	links    *linkCounter // the link bytes of each record
	hist     *history     // every epoch's record, for the checkpoint
	obs      []observer   // in the order their hooks run
	rescue   *Rescue      // ends the run from outside; nil: none
	releases []func()     // what open acquired, released in reverse order
}

// run trains the epochs. Every way out of it (finished, early stopping,
// divergence, interruption, an error, in set-up too) goes through finish.
func (l *loop) run(ctx context.Context, opts Options, extra ...observer) error {
	defer func() { _ = l.rescue.hold(false, func() error { l.releaseAll(); return nil }) }() // a rescue released them
	if err := l.open(ctx, opts, extra); err != nil {
		return l.finish(endFailed, err)
	}
	l.rescue = opts.Rescue
	l.rescue.attach(l)
	kind, cause := l.train(ctx)
	var err error
	if herr := l.rescue.hold(true, func() error { err = l.finish(kind, cause); return nil }); herr != nil {
		return herr
	}
	return err
}

// train runs the epochs from l.next on and returns how the run ended and
// why (the error of a stopped or failed run).
func (l *loop) train(ctx context.Context) (endKind, error) {
	stop, err := l.start(ctx)
	if err != nil {
		return endFailed, err
	}
	for ep := l.next; ep < l.cfg.Train.Epochs && !stop; ep++ {
		rec, kind, err := l.epoch(ctx, ep)
		if err != nil {
			return kind, err
		}
		if err := l.rescue.hold(false, func() (err error) { stop, err = l.observe(ctx, &rec); return err }); err != nil {
			if errors.Is(err, ErrRescued) {
				return endFailed, err
			}
			var oe *OutputError // a checkpoint not written: the finished epochs' outputs are kept
			if errors.As(err, &oe) {
				return endStopped, err
			}
			return endFailed, err
		}
		if err := ctx.Err(); err != nil {
			return endStopped, err // an interrupted run keeps the rows of its finished epochs
		}
	}
	return endFinished, nil
}

// epoch runs epoch ep (its training step, then the evaluation when one is
// due) and returns its record; on an error, how the run ends with it.
func (l *loop) epoch(ctx context.Context, ep int) (EpochRecord, endKind, error) {
	rec, kind, err := l.trainStep(ctx, ep)
	if err != nil || !l.evalDue(ep) {
		return rec, kind, err
	}
	kind, err = l.evalStep(ctx, &rec)
	return rec, kind, err
}

// evalDue reports whether epoch ep ends with an evaluation: every
// train.eval_every epochs and after the last.
func (l *loop) evalDue(ep int) bool {
	every := l.cfg.Train.EvalEvery
	return every > 0 && (ep+1)%every == 0 || ep == l.cfg.Train.Epochs-1
}

// trainStep runs epoch ep's training step, timed and measured (peaks,
// predicted time on simulated devices), and returns its record. A
// non-finite loss stops the run with a *DivergedError.
func (l *loop) trainStep(ctx context.Context, ep int) (EpochRecord, endKind, error) {
	c := l.clock
	t0 := time.Now()
	var before Prediction
	if c.simulated {
		before = PredictionNow(l.be)
	}
	c.peaks.start()
	loss, err := l.step(ctx, ep)
	if err != nil {
		return EpochRecord{}, interrupted(ctx), fmt.Errorf("epoch %d: %w", ep, err)
	}
	if s, ok := l.be.(backend.Synchronizer); ok { // the optimizer step may still be queued
		if err := s.Synchronize(); err != nil {
			return EpochRecord{}, endFailed, fmt.Errorf("epoch %d: %w", ep, err)
		}
	}
	c.peaks.end(c.peaks.train)
	dt := time.Since(t0).Seconds()
	c.times = append(c.times, dt)
	l.res.FinalLoss = loss
	if !finite(loss) {
		l.res.Epochs = ep + 1
		return EpochRecord{}, endStopped, &DivergedError{Epoch: ep, What: "the loss", Value: loss}
	}
	rec := EpochRecord{Epoch: ep, TimeS: dt, Loss: loss, PeakBytes: tierMap(c.peaks.all)}
	if c.simulated {
		work := PredictionNow(l.be).Since(before)
		rec.PredictedS = work.SequentialS()
		if p, ok := l.st.(Pipelined); ok {
			rec.PredictedS = p.PredictedS()
		}
		c.predicted = append(c.predicted, rec.PredictedS)
		l.res.PredictedComputeS = work.computeSeconds()
	}
	if r, ok := l.st.(EpochReporter); ok {
		r.ReportEpoch(&rec)
	}
	return rec, endFinished, nil
}

// evalStep evaluates the model after the epoch of rec (accuracies with
// dropout off, timed and measured) and fills them into rec. Non-finite
// parameters stop the run with a *DivergedError.
func (l *loop) evalStep(ctx context.Context, rec *EpochRecord) (endKind, error) {
	ep, c := rec.Epoch, l.clock
	if l.res.TrainPeakRSSBytes == 0 {
		l.res.TrainPeakRSSBytes = metrics.PeakRSS()
	}
	if l.beforeEval != nil {
		l.beforeEval(ep)
	}
	t1 := time.Now()
	trimPool(l.be) // the steps' free buffers do not stay beside evaluation's
	c.peaks.start()
	tr, va, te, figs, err := l.evaluate(ctx)
	if err != nil {
		kind := interrupted(ctx)
		if kind == endStopped {
			l.res.Epochs = ep + 1 // the finished epoch keeps its time and loss
		}
		return kind, fmt.Errorf("epoch %d evaluation: %w", ep, err)
	}
	c.peaks.end(c.peaks.eval)
	trimPool(l.be) // nor evaluation's beside the next steps'
	c.evalTimes = append(c.evalTimes, time.Since(t1).Seconds())
	snap, err := l.st.Params().Snapshot()
	if err != nil {
		return endFailed, err
	}
	if err := checkFinite(ep, snap); err != nil {
		l.res.Epochs = ep + 1
		return endStopped, err
	}
	rec.TrainAcc, rec.ValidAcc, rec.TestAcc, rec.Metrics, rec.Evaluated = tr, va, te, figs, true
	return endFinished, nil
}

// interrupted is how a run ends with the error of a step or an evaluation:
// stopped (keeping its finished epochs) when ctx was cancelled, otherwise
// failed.
func interrupted(ctx context.Context) endKind {
	if ctx.Err() != nil {
		return endStopped
	}
	return endFailed
}

// step runs one training epoch and returns the loss.
func (l *loop) step(ctx context.Context, epoch int) (float64, error) {
	seed := uint64(l.cfg.Train.Seed)*1_000_003 + uint64(epoch)
	l.lr.at(epoch)
	return l.st.Epoch(ctx, seed, func() error { return l.opt.Step(l.st.Params().List()) })
}

// evaluate returns train, valid and test accuracy with dropout off, and
// the figures of l.plan (valid_loss, train.metrics).
func (l *loop) evaluate(ctx context.Context) (float64, float64, float64, map[string]float64, error) {
	if l.plan.link != nil {
		return l.plan.link.evaluate(ctx, l.plan.metrics)
	}
	if l.pred == nil {
		l.pred = make([]int32, l.ds.NumNodes)
	}
	if err := l.plan.predict(ctx, l.st, l.pred); err != nil {
		return 0, 0, 0, nil, err
	}
	d := l.ds
	if d.HasTargets() {
		tr, va, te := l.plan.targetAccuracies(d)
		return tr, va, te, l.plan.figures(l.pred, d), nil
	}
	return accuracy(l.pred, d.Labels, d.Train), accuracy(l.pred, d.Labels, d.Valid), accuracy(l.pred, d.Labels, d.Test), l.plan.figures(l.pred, d), nil
}

func recordRow(r EpochRecord, tiers []tensor.Tier, extra, figures []string) []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	row := []string{strconv.Itoa(r.Epoch), f(r.TimeS), f(r.Loss), "", "", "",
		f(r.SampleS), f(r.ExtractS), f(r.StageS), f(r.TrainS), strconv.FormatInt(r.TransferBytes, 10), f(r.PredictedS)}
	if r.Evaluated {
		row[3], row[4], row[5] = f(r.TrainAcc), f(r.ValidAcc), f(r.TestAcc)
	}
	for _, tier := range tiers {
		row = append(row, strconv.FormatInt(r.PeakBytes[string(tier)], 10))
	}
	for _, c := range extra {
		row = append(row, r.Extra[c])
	}
	for _, c := range figures {
		cell := "" // not evaluated, or not reported
		if v, ok := r.Metrics[c]; ok {
			cell = f(v)
		}
		row = append(row, cell)
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
		Features: l.dim, Classes: l.ds.NumClasses, Params: r.Params, BestEpoch: r.BestEpoch, BestValidAcc: r.BestValidAcc,
		FeatureNorm: l.featureNorm, Modules: l.model.Modules, Paths: recordedPaths(l.cfg), Targets: targetsName(l.ds)}
	if err := meta.seal(); err != nil {
		return err
	}
	arrays := map[string][]float64{}
	if err := l.addParams(arrays); err != nil {
		return err
	}
	return writeArrays(path, "model", meta, arrays, outputInputs(l.cfg)...)
}

// addParams adds the parameters ("param/<name>") and their non-learnable
// state ("state/<key>", batch-norm statistics) to arrays.
func (l *loop) addParams(arrays map[string][]float64) error {
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
	return nil
}
