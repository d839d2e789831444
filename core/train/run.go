package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"time"

	"strata/core/backend"
	"strata/core/backend/cpu"
	"strata/core/backend/sim"
	"strata/core/config"
	"strata/core/graph"
	"strata/core/metrics"
	"strata/core/tensor"
	"strata/cuda"
	"strata/plugins/wasm"
)

// Options are run-time settings that are not part of the experiment config.
type Options struct {
	Progress io.Writer // progress bar destination; nil disables it
	Version  string    // strata version for the result
	Wasm     wasm.Options
}

// Run trains the configured model full-graph and returns the result summary.
func Run(ctx context.Context, cfg *config.Config, opts Options) (*Result, error) {
	start := time.Now()
	ds, feats, dim, err := loadData(ctx, cfg)
	if err != nil {
		return nil, err
	}
	seed := uint64(cfg.Train.Seed)
	be, err := newBackend(cfg)
	if err != nil {
		return nil, err
	}
	if sb, ok := be.(*sim.Backend); ok {
		release, err := attachKernelCost(ctx, cfg, sb, opts.Wasm)
		if err != nil {
			return nil, err
		}
		defer release()
	}
	dt := tensor.Float32
	if cfg.Train.DType == "float64" {
		dt = tensor.Float64
	}
	if c, ok := be.(io.Closer); ok {
		defer c.Close()
	}
	tier := tensor.Host
	if d, ok := be.(backend.Device); ok {
		tier = d.ComputeTier() // the first simulated device, or the GPU
	}
	model, err := BuildModel(ctx, cfg, opts.Wasm, dim, ds.NumClasses)
	if err != nil {
		return nil, err
	}
	adjs, err := buildAdjacencies(ds, cfg.Data.Symmetrize)
	if err != nil {
		return nil, err
	}
	env := stepEnv{be: be, dt: dt, tier: tier, model: model.Graph, ds: ds, feats: feats, dim: dim, adjs: adjs, seed: seed, wasm: opts.Wasm}
	var st stepper
	switch {
	case cfg.Train.Mode == "minibatch":
		st, err = newMiniBatches(ctx, cfg, env)
	case cfg.Train.Micro():
		st, err = newMicroBatches(ctx, cfg, env)
	default:
		st, err = newFullGraph(env)
	}
	if err != nil {
		return nil, err
	}
	defer st.release()
	if mb, ok := st.(*microBatches); ok && mb.auto && opts.Progress != nil {
		fmt.Fprintf(opts.Progress, "train.micro_batches = \"auto\": K = %d micro-batches, the largest estimated at %d bytes of devices.memory_bytes = %d\n",
			len(mb.batches), mb.estPeak, cfg.Devices.MemoryBytes)
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
	if d, ok := be.(interface{ DeviceName() string }); ok {
		res.Device = d.DeviceName()
	}
	res.noValid, res.noTest = len(ds.Valid) == 0, len(ds.Test) == 0
	if res.ConfigSHA256, err = cfg.SHA256(); err != nil {
		return nil, err
	}
	loop := &loop{cfg: cfg, be: be, st: st, opt: opt, ds: ds, res: res}
	if err := loop.run(ctx, opts); err != nil {
		var de *DivergedError
		if errors.As(err, &de) {
			res.Status = StatusDiverged
			return res, err
		}
		return nil, err
	}
	res.MicroBatches = cfg.Train.MicroBatches
	if mb, ok := st.(*microBatches); ok {
		res.Partitioner, res.Redundancy = cfg.Partition.ID, mb.redundancy()
		res.MicroBatches, res.MicroBatchesAuto, res.EstimatedPeakBytes = len(mb.batches), mb.auto, mb.estPeak
	}
	if mb, ok := st.(*miniBatches); ok {
		if mm := mb.micro; mm != nil {
			res.Partitioner, res.MicroBatches, res.MicroBatchesAuto, res.EstimatedPeakBytes = cfg.Partition.ID, mm.microK, mm.auto, mm.estPeak
		}
		res.SampleTimeS, res.ExtractTimeS, res.StageTimeS, res.TrainTimeS = mb.sampleS, mb.extractS, mb.stageS, mb.trainS
		res.CacheHitRate, res.TierHitRates = mb.hitRate(), mb.hitRates()
		if mb.sampleS > 0 {
			res.SampledEdgesPerS = float64(mb.sampledEdges) / mb.sampleS
		}
	}
	if sb, ok := be.(*sim.Backend); ok {
		res.Traffic, res.TrafficByPurpose = sb.Traffic(), sb.TrafficByPurpose()
		for _, l := range res.Traffic {
			res.TransferTimeS += l.Seconds
		}
	}
	res.PeakRSSBytes = metrics.PeakRSS()
	for t, v := range be.Stats().Peak { // since the loop's last phase
		res.PeakTierBytes[string(t)] = max(res.PeakTierBytes[string(t)], v)
	}
	return res, nil
}

// loadData opens the dataset, checks that it can be trained on and returns
// it with its prepared feature matrix.
func loadData(ctx context.Context, cfg *config.Config) (*graph.Dataset, []float32, int, error) {
	if err := checkSupported(cfg); err != nil {
		return nil, nil, 0, err
	}
	ds, err := loadDataset(ctx, cfg)
	if err != nil {
		return nil, nil, 0, err
	}
	if n, w := int64(ds.NumNodes), int64(cfg.Data.SynthFeatures); ds.FeatDim == 0 && n*w*4 > graph.MaxMemory(ctx) {
		return nil, nil, 0, cfg.KeyError(fmt.Sprintf("data.synth_features = %d: %d nodes x %d random features would need %s, more than the memory budget of %s (--max-memory); use fewer features",
			w, n, w, graph.FormatBytes(n*w*4), graph.FormatBytes(graph.MaxMemory(ctx))), "data", "synth_features")
	}
	if ds.NumClasses < 2 {
		return nil, nil, 0, fmt.Errorf("data: dataset %q has %d classes; node classification needs labels with at least 2 classes", ds.Name, ds.NumClasses)
	}
	if len(ds.Train) == 0 {
		return nil, nil, 0, fmt.Errorf("data: dataset %q has no training nodes", ds.Name)
	}
	feats, dim, err := prepareFeatures(ds, cfg.Data.FeatureNorm, cfg.Data.SynthFeatures, uint64(cfg.Train.Seed))
	if err != nil {
		return nil, nil, 0, err
	}
	return ds, feats, dim, nil
}

// loadDataset opens data.dataset and applies data.reorder.
func loadDataset(ctx context.Context, cfg *config.Config) (*graph.Dataset, error) {
	ds, err := graph.OpenContext(ctx, cfg.DatasetSpec())
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, cfg.KeyError(err.Error(), "data", "dataset")
	}
	if cfg.Data.Reorder == "degree" {
		graph.ReorderByDegree(ds)
	}
	return ds, nil
}

// Check does everything Run does before training: it opens the dataset,
// prepares the features and builds the model from its module. With
// skipData it only builds the model, with nominal sizes.
func Check(ctx context.Context, cfg *config.Config, wopts wasm.Options, skipData bool) error {
	dim, classes := 16, 2
	if err := checkSupported(cfg); err != nil {
		return err
	}
	if !skipData {
		ds, _, d, err := loadData(ctx, cfg)
		if err != nil {
			return err
		}
		dim, classes = d, ds.NumClasses
	}
	_, err := BuildModel(ctx, cfg, wopts, dim, classes)
	return err
}

func threads(cfg *config.Config) int {
	if cfg.Train.Threads > 0 {
		return cfg.Train.Threads
	}
	return runtime.GOMAXPROCS(0)
}

func newBackend(cfg *config.Config) (backend.Backend, error) {
	switch cfg.Train.Backend {
	case "cpu":
		return cpu.New(cpu.Options{Threads: threads(cfg)}), nil
	case "sim":
		topo, err := topology(cfg)
		if err != nil {
			return nil, err
		}
		topo.Compute = deviceSpec(cfg)
		return sim.New(topo, threads(cfg))
	case "cuda":
		be, err := cuda.New(cuda.Options{})
		if errors.Is(err, cuda.ErrNoCUDA) {
			return nil, cfg.KeyError(fmt.Sprintf("train.backend = \"cuda\": %v", err), "train", "backend")
		}
		if err != nil {
			return nil, fmt.Errorf("train.backend = \"cuda\": %w", err)
		}
		return be, nil
	}
	return nil, cfg.KeyError(fmt.Sprintf("train.backend = %q is not available in this build (available: \"cpu\", \"sim\", \"cuda\")", cfg.Train.Backend), "train", "backend")
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
	st   stepper
	opt  Optimizer
	ds   *graph.Dataset
	res  *Result
	pred []int32
}

func (l *loop) run(ctx context.Context, opts Options) error {
	epochs := l.cfg.Train.Epochs
	bar := metrics.NewProgress(opts.Progress, "train", epochs)
	defer bar.Done()
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
		if err := csvw.write(header); err != nil {
			return err
		}
	}
	var times, evalTimes, predicted []float64
	var transferred int64 // link bytes counted before this epoch
	sb, simulated := l.be.(*sim.Backend)
	peaks := newPhasePeaks(l.be)
	var best map[string][]float64
	sinceBest := 0
	// stats fills the result's timings and peaks, at the end or when the
	// run diverges.
	stats := func() {
		l.res.PeakTierBytes, l.res.TrainPeakTierBytes, l.res.EvalPeakTierBytes = tierMap(peaks.all), tierMap(peaks.train), tierMap(peaks.eval)
		l.res.EpochTimeMedianS = median(times, 2)
		l.res.PredictedEpochS = median(predicted, 0)
		l.res.EvalTimeMedianS = median(evalTimes, 0)
		l.res.PeakRSSBytes = metrics.PeakRSS()
	}
	for ep := 0; ep < epochs; ep++ {
		t0 := time.Now()
		var before prediction
		if simulated {
			before = predictionNow(sb)
		}
		peaks.start()
		loss, err := l.step(ctx, ep)
		if err != nil {
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
			return errors.Join(&DivergedError{Epoch: ep, What: "the loss", Value: loss}, csvw.commit())
		}
		rec := EpochRecord{Epoch: ep, TimeS: dt, Loss: loss, PeakBytes: tierMap(peaks.all)}
		if simulated {
			work := predictionNow(sb).since(before)
			rec.PredictedS = work.sequentialS()
			if p, ok := l.st.(pipelined); ok {
				rec.PredictedS = p.predictedS()
			}
			predicted = append(predicted, rec.PredictedS)
			l.res.PredictedComputeS = work.computeSeconds()
		}
		if mb, ok := l.st.(*miniBatches); ok {
			rec.SampleS, rec.ExtractS, rec.StageS, rec.TrainS, rec.CacheHitRate = mb.sampleS, mb.extractS, mb.stageS, mb.trainS, mb.hitRate()
		}
		every := l.cfg.Train.EvalEvery
		if every > 0 && (ep+1)%every == 0 || ep == epochs-1 {
			t1 := time.Now()
			peaks.start()
			tr, va, te, err := l.evaluate(ctx)
			if err != nil {
				return fmt.Errorf("epoch %d evaluation: %w", ep, err)
			}
			peaks.end(peaks.eval)
			evalTimes = append(evalTimes, time.Since(t1).Seconds())
			if snap, err := l.st.params().Snapshot(); err != nil {
				return err
			} else if err := checkFinite(ep, snap); err != nil {
				l.res.Epochs = ep + 1
				stats()
				return errors.Join(err, csvw.commit())
			}
			rec.TrainAcc, rec.ValidAcc, rec.TestAcc, rec.Evaluated = tr, va, te, true
			if l.res.BestEpoch < 0 || va > l.res.BestValidAcc {
				l.res.BestEpoch, l.res.BestValidAcc, l.res.TrainAcc, l.res.TestAcc = ep, va, tr, te
				if best, err = l.st.params().Snapshot(); err != nil {
					return err
				}
				sinceBest = 0
			} else {
				sinceBest += max(every, 1)
			}
		}
		if sb, ok := l.be.(*sim.Backend); ok {
			total := int64(0)
			for _, t := range sb.Traffic() {
				total += t.Bytes
			}
			rec.TransferBytes, transferred = total-transferred, total
		}
		if csvw != nil {
			if err := csvw.write(recordRow(rec, l.be.Tiers())); err != nil {
				return err
			}
		}
		l.res.Epochs = ep + 1
		bar.Update(ep+1, fmt.Sprintf("loss %.4f valid %.3f", loss, l.res.BestValidAcc))
		if p := l.cfg.Train.Patience; p > 0 && sinceBest >= p {
			break
		}
	}
	stats()
	if err := csvw.commit(); err != nil {
		return err
	}
	if best != nil {
		return l.st.params().Restore(best) // through the parameters' view: counted as parameters
	}
	return nil
}

// step runs one training epoch and returns the loss.
func (l *loop) step(ctx context.Context, epoch int) (float64, error) {
	seed := uint64(l.cfg.Train.Seed)*1_000_003 + uint64(epoch)
	return l.st.epoch(ctx, seed, func() error { return l.opt.Step(l.st.params().List()) })
}

// evaluate returns train, valid and test accuracy with dropout off.
func (l *loop) evaluate(ctx context.Context) (float64, float64, float64, error) {
	if l.pred == nil {
		l.pred = make([]int32, l.ds.NumNodes)
	}
	if err := l.st.predict(ctx, l.pred); err != nil {
		return 0, 0, 0, err
	}
	d := l.ds
	return accuracy(l.pred, d.Labels, d.Train), accuracy(l.pred, d.Labels, d.Valid), accuracy(l.pred, d.Labels, d.Test), nil
}

func recordRow(r EpochRecord, tiers []tensor.Tier) []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	row := []string{strconv.Itoa(r.Epoch), f(r.TimeS), f(r.Loss), "", "", "",
		f(r.SampleS), f(r.ExtractS), f(r.StageS), f(r.TrainS), f(r.CacheHitRate), strconv.FormatInt(r.TransferBytes, 10), f(r.PredictedS)}
	if r.Evaluated {
		row[3], row[4], row[5] = f(r.TrainAcc), f(r.ValidAcc), f(r.TestAcc)
	}
	for _, tier := range tiers {
		row = append(row, strconv.FormatInt(r.PeakBytes[string(tier)], 10))
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

// topology returns the simulated machine of [devices]: a preset, or the
// custom bandwidths of host_gbps and peer_gbps.
func topology(cfg *config.Config) (sim.Topology, error) {
	d := cfg.Devices
	if len(d.HostGBps) == 0 && len(d.PeerGBps) == 0 {
		preset := d.Preset
		if preset == "" {
			preset = "pcie-only"
		}
		topo, err := sim.Preset(preset, d.Count, d.MemoryBytes)
		if err != nil {
			return topo, cfg.KeyError("devices.preset: "+err.Error(), "devices", "preset")
		}
		return topo, nil
	}
	n := len(d.HostGBps)
	switch {
	case n == 0:
		return sim.Topology{}, cfg.KeyError("devices.peer_gbps is set without devices.host_gbps; give every device's host bandwidth", "devices", "peer_gbps")
	case d.Preset != "" || d.Count != 0:
		return sim.Topology{}, cfg.KeyError("devices.host_gbps describes a custom topology; remove devices.preset and devices.count", "devices", "host_gbps")
	case len(d.PeerGBps) != 0 && len(d.PeerGBps) != n:
		return sim.Topology{}, cfg.KeyError(fmt.Sprintf("devices.peer_gbps has %d rows for the %d devices of host_gbps; give one row per device", len(d.PeerGBps), n), "devices", "peer_gbps")
	}
	peer := make([][]float64, n)
	for i := range peer {
		peer[i] = make([]float64, n)
		if len(d.PeerGBps) == 0 {
			continue
		}
		if len(d.PeerGBps[i]) != n {
			return sim.Topology{}, cfg.KeyError(fmt.Sprintf("devices.peer_gbps[%d] has %d entries, want %d (one per device; 0 = no link)", i, len(d.PeerGBps[i]), n), "devices", "peer_gbps")
		}
		copy(peer[i], d.PeerGBps[i])
	}
	for i := range n {
		if peer[i][i] != 0 {
			return sim.Topology{}, cfg.KeyError(fmt.Sprintf("devices.peer_gbps[%d][%d] = %v: a device has no link to itself; use 0", i, i, peer[i][i]), "devices", "peer_gbps")
		}
		for j := range n {
			if peer[i][j] != peer[j][i] {
				return sim.Topology{}, cfg.KeyError(fmt.Sprintf("devices.peer_gbps[%d][%d] = %v but peer_gbps[%d][%d] = %v: NVLink links are bidirectional, make the matrix symmetric", i, j, peer[i][j], j, i, peer[j][i]), "devices", "peer_gbps")
			}
		}
	}
	topo := sim.Topology{Name: "custom", Devices: n, Capacity: d.MemoryBytes, HostGBps: append([]float64(nil), d.HostGBps...), PeerGBps: peer}
	if err := topo.Validate(); err != nil {
		return topo, cfg.KeyError("devices: "+err.Error(), "devices")
	}
	return topo, nil
}
