// Package minibatch is strategy.minibatch: sampled mini-batches on a
// prefetching pipeline, optionally through the tiered feature store,
// data-parallel over several devices and each batch split into
// micro-batches.
package minibatch

import (
	"context"
	"fmt"
	"time"

	"strata/core/backend"
	"strata/core/config"
	"strata/core/engine"
	"strata/core/registry"
	"strata/core/sampling"
	"strata/core/store"
	"strata/core/tensor"
	"strata/core/train"
	"strata/plugins/strategy/internal/memest"
	"strata/plugins/strategy/internal/microsplit"
	"strata/plugins/strategy/internal/steprun"
)

// miniBatches trains on sampled mini-batches: every epoch shuffles the
// training nodes into batches of train.batch_size, the configured sampler
// builds each batch's blocks, and each batch is one optimizer step.
//
// On a simulated machine with several devices it trains data-parallel, as
// synchronous SGD: each batch is split into one shard per device, every
// device has a replica of the parameters and computes its shard's
// gradient, the gradients are all-reduced over the links (counted like any
// transfer) and every replica takes the same step.
//
// The epoch is a pipeline of three stages joined by bounded queues:
// sampling and host feature extraction run ahead on a goroutine, through a
// queue of train.prefetch batches; the transfer stage gathers each batch's
// input rows from the feature store and uploads its blocks and rows to the
// devices; the training goroutine computes. With train.overlap the
// transfer stage runs on its own goroutine, one batch ahead of training
// (double buffering); otherwise the training goroutine runs it before
// each batch.
type miniBatches struct {
	replicas []*steprun.Runner // one per device; replicas[0] is the loop's
	opts     []train.Optimizer // the optimizers of replicas[1:]
	sampler  sampling.Sampler
	batch    int
	prefetch int
	overlap  bool
	// Time spent per stage in the last epoch, in seconds (sampling and
	// extraction overlap with training, and so does the transfer stage
	// with overlap).
	sampleS, extractS, stageS, trainS float64
	sampledEdges                      int64
	// predicted is the simulated machine's predicted time of the last
	// epoch, pipelined (0 off the simulated backend).
	predicted float64
	// predFeatS and predTopoS are the last epoch's mean predicted feature
	// and topology transfer time per batch.
	predFeatS, predTopoS float64
	// store, when a cache policy is configured, holds the hot feature rows
	// on the devices; hits and rows count the last epoch's gathers.
	store      *store.Store
	hits, rows int64
	peer       int64 // rows served by another device's cache
	// micro, with train.micro_batches, splits every shard into
	// micro-batches (see miniMicro); nil otherwise.
	micro       *miniMicro
	partitioner string // [partition] of the micro-batches, for the result
}

func newMiniBatches(ctx context.Context, cfg *config.Config, e steprun.Env) (*miniBatches, error) {
	if err := (*Minibatch)(nil).CheckConfig(cfg); err != nil {
		return nil, err
	}
	s := cfg.Sampler.Module.(sampling.Sampler)
	micro, err := newMiniMicro(ctx, cfg, e)
	if err != nil {
		return nil, err
	}
	// Evaluation runs over full neighbourhoods: in one piece, or, on a
	// device with a capacity, in chunks of batch_size nodes (with
	// micro_batches = "auto", as many as the memory estimate needs).
	evalChunks := 1
	if cfg.Devices.MemoryBytes > 0 {
		if evalChunks, err = micro.evalChunks(ctx, e, max(1, e.DS.NumNodes/max(cfg.Train.BatchSize, 1))); err != nil {
			micro.close()
			return nil, err
		}
	}
	m := &miniBatches{sampler: s, batch: cfg.Train.BatchSize, prefetch: cfg.Train.Prefetch, overlap: cfg.Train.Overlap}
	m.micro = micro
	devices := []tensor.Tier{e.Tier}
	if md, ok := e.Be.(backend.MultiDevice); ok {
		devices = md.DeviceTiers()
	}
	for i, tier := range devices {
		re := e
		re.Tier = tier
		r, err := steprun.NewRunner(re, evalChunks) // same seed: identical replicas
		if err != nil {
			m.release()
			return nil, err
		}
		m.replicas = append(m.replicas, r)
		if i > 0 {
			opt, err := train.NewOptimizer(cfg.Train.Optimizer, e.Be, cfg.Train.LR, cfg.Train.WeightDecay, cfg.Train.Momentum)
			if err != nil {
				m.release()
				return nil, err
			}
			m.opts = append(m.opts, opt)
		}
	}
	if cfg.Cache.Name != "" {
		var err error
		if m.store, err = newFeatureStore(ctx, cfg, e, devices); err != nil {
			m.release()
			return nil, err
		}
	}
	if err := m.micro.settle(ctx, e, m); err != nil {
		m.release()
		return nil, err
	}
	return m, nil
}

func (m *miniBatches) release() {
	if m.store != nil {
		m.store.Close()
	}
	m.micro.close()
	for _, r := range m.replicas {
		r.Release()
	}
}

func (m *miniBatches) predict(ctx context.Context, pred []int32) error {
	return m.replicas[0].Predict(ctx, pred)
}

func (m *miniBatches) params() *engine.Params { return m.replicas[0].PS }

// hitRate returns the share of the last epoch's feature rows that the
// training device's own cache served.
func (m *miniBatches) hitRate() float64 {
	if m.rows == 0 {
		return 0
	}
	return float64(m.hits) / float64(m.rows)
}

// hitRates returns the share of the last epoch's feature rows served by
// each level of the hierarchy: the training device's own cache ("local"),
// another device's over a link ("peer") and host memory ("host"); nil
// without a feature store.
func (m *miniBatches) hitRates() map[string]float64 {
	if m.rows == 0 {
		return nil
	}
	r := float64(m.rows)
	return map[string]float64{"local": float64(m.hits) / r, "peer": float64(m.peer) / r, "host": float64(m.rows-m.hits-m.peer) / r}
}

// shard is one device's part of a batch, made ready by the producer.
type shard struct {
	nodes  []int32
	blocks []sampling.Block
	x      steprun.FeatRows        // host-gathered input rows (none with a store or micro-batches)
	micro  []microsplit.MicroBatch // its micro-batches, when micro-batching
	topo   store.TopologyStats     // the sampler's reads through the store
}

// sampled is one batch made ready by the producer.
type sampled struct {
	shards []shard
	err    error
}

func (m *miniBatches) epoch(ctx context.Context, seed uint64, update func() error) (float64, error) {
	e := m.replicas[0].Env
	order := steprun.Shuffled(e.DS.Train, seed)
	var batches [][]int32
	for lo := 0; lo < len(order); lo += m.batch {
		batches = append(batches, order[lo:min(lo+m.batch, len(order))])
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	queue := make(chan sampled, m.prefetch)
	var sampleS, hostExtractS float64
	var edges int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(queue)
		for i, nodes := range batches {
			var b sampled
			d := len(m.replicas)
			for k := 0; k < d && b.err == nil; k++ {
				part := nodes[k*len(nodes)/d : (k+1)*len(nodes)/d]
				if len(part) == 0 {
					continue
				}
				t0 := time.Now()
				blocks, topo, err := m.sample(ctx, k, part, seed*0x9e3779b97f4a7c15+uint64(i*d+k))
				t1 := time.Now()
				sampleS += t1.Sub(t0).Seconds()
				if err != nil {
					b.err = err
					break
				}
				sh := shard{nodes: part, blocks: blocks, topo: topo}
				if m.micro != nil {
					if b.err = m.micro.splitShard(ctx, e, &sh, m.store == nil); b.err != nil {
						break
					}
				}
				if m.store == nil && sh.micro == nil {
					sh.x = e.GatherInput(blocks[0].Src)
				}
				for _, bl := range blocks {
					edges += bl.NumEdges()
				}
				hostExtractS += time.Since(t1).Seconds()
				b.shards = append(b.shards, sh)
			}
			select {
			case queue <- b:
			case <-ctx.Done():
				return
			}
			if b.err != nil {
				return
			}
		}
	}()
	// The transfer stage: inline, or a goroutine one batch ahead.
	_, sb := e.Be.(backend.TimePredictor)
	stageOne := func(b sampled, n int) *staged {
		var before train.Prediction
		if sb {
			before = train.PredictionNow(e.Be)
		}
		st := m.stage(ctx, b, n)
		if sb {
			d := train.PredictionNow(e.Be).Since(before)
			st.predictedS, _ = d.Split()
			st.featS, st.topoS = d.TransferS[backend.PurposeFeatures], d.TransferS[backend.PurposeTopology]
		}
		return st
	}
	var stages chan *staged
	stageDone := make(chan struct{})
	if m.overlap {
		stages = make(chan *staged) // unbuffered: one batch staged while one trains
		go func() {
			defer close(stageDone)
			defer close(stages)
			n := 0
			for b := range queue {
				st := stageOne(b, n)
				select {
				case stages <- st:
				case <-ctx.Done():
					st.release(m)
					return
				}
				if st.err != nil {
					return
				}
				n++
			}
		}()
	} else {
		close(stageDone)
	}
	defer func() {
		cancel()
		if stages != nil {
			for st := range stages { // drain what the stage made after an early return
				st.release(m)
			}
		}
		<-stageDone
	}()
	next := func(n int) (*staged, bool) {
		if stages != nil {
			st, ok := <-stages
			return st, ok
		}
		b, ok := <-queue
		if !ok {
			return nil, false
		}
		return stageOne(b, n), true
	}
	var loss, trainS, stageS, featS, topoS float64
	var hits, peer, rows int64
	var stagePred, computePred []float64
	n := 0
	for {
		st, ok := next(n)
		if !ok {
			break
		}
		if st.err != nil {
			st.release(m)
			return 0, st.err
		}
		stageS += st.seconds
		featS, topoS = featS+st.featS, topoS+st.topoS
		hits, peer, rows = hits+st.hits, peer+st.peer, rows+st.rows
		var before train.Prediction
		if sb {
			before = train.PredictionNow(e.Be)
		}
		t0 := time.Now()
		l, err := m.train(ctx, st, seed, n, update)
		st.release(m)
		if err != nil {
			return 0, err
		}
		loss += l
		trainS += time.Since(t0).Seconds()
		if sb {
			_, c := train.PredictionNow(e.Be).Since(before).Split()
			stagePred, computePred = append(stagePred, st.predictedS), append(computePred, c)
		}
		n++
	}
	<-done
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.sampleS, m.extractS, m.stageS, m.trainS, m.sampledEdges = sampleS, hostExtractS, stageS, trainS, edges
	m.hits, m.peer, m.rows = hits, peer, rows
	m.predFeatS, m.predTopoS = featS/float64(max(n, 1)), topoS/float64(max(n, 1))
	m.micro.endEpoch(m)
	m.predicted = 0
	for i := range stagePred {
		m.predicted += stagePred[i] + computePred[i]
	}
	if m.overlap {
		m.predicted = steprun.PipelinedS(stagePred, computePred)
	}
	return loss / float64(max(n, 1)), nil
}

// predictedS implements pipelined.
func (m *miniBatches) predictedS() float64 { return m.predicted }

// staged is one batch on the devices: each shard's blocks and input rows
// bound for training.
type staged struct {
	shards     []shard
	bound      []*steprun.Bound
	hits, rows int64   // feature rows the devices' own caches served, of all gathered
	peer       int64   // feature rows other devices' caches served
	seconds    float64 // wall time of the stage
	predictedS float64 // the stage's predicted time on the simulated machine
	featS      float64 // of which feature transfers
	topoS      float64 // and topology transfers
	err        error
}

// stage gathers batch n's input rows from the feature store (or uploads
// the host-extracted rows) and uploads its blocks, on every device.
func (m *miniBatches) stage(ctx context.Context, b sampled, n int) *staged {
	t0 := time.Now()
	st := &staged{shards: b.shards}
	defer func() { st.seconds = time.Since(t0).Seconds() }()
	if b.err != nil {
		st.err = fmt.Errorf("sampling batch %d: %w", n, b.err)
		return st
	}
	for k, sh := range b.shards {
		r := m.replicas[k]
		if m.store != nil {
			if err := m.store.CountTopology(sh.topo); err != nil {
				st.err = fmt.Errorf("batch %d: %w", n, err)
				return st
			}
		}
		if sh.micro != nil {
			st.bound = append(st.bound, nil) // bound one at a time by train
			continue
		}
		var input *tensor.Tensor
		if m.store != nil {
			in, gs, err := m.store.Gather(ctx, sh.blocks[0].Src, r.Env.Tier)
			if err != nil {
				st.err = fmt.Errorf("batch %d: gathering features: %w", n, err)
				return st
			}
			input = in
			st.hits += int64(gs.Local)
			st.rows += int64(gs.Rows)
			st.peer += int64(gs.Peer)
		}
		bb, err := r.Bind(sh.blocks, sh.x, input, false)
		if err != nil {
			st.err = fmt.Errorf("batch %d on %s: %w", n, r.Env.Tier, err)
			return st
		}
		st.bound = append(st.bound, bb)
	}
	return st
}

// release frees what the stage put on the devices.
func (st *staged) release(m *miniBatches) {
	for k, bb := range st.bound {
		bb.Release(m.replicas[k].Env)
	}
	st.bound = nil
}

// train runs one staged batch: every device's shard, the all-reduce and
// the optimizer steps.
func (m *miniBatches) train(ctx context.Context, st *staged, seed uint64, n int, update func() error) (float64, error) {
	total := 0
	for _, sh := range st.shards {
		total += len(sh.nodes)
	}
	var loss float64
	for k, sh := range st.shards {
		r := m.replicas[k]
		if sh.micro != nil {
			l, err := m.micro.train(ctx, m, r, sh, total, steprun.BatchSeed(seed, n))
			if err != nil {
				return 0, fmt.Errorf("batch %d on %s: %w", n, r.Env.Tier, err)
			}
			loss += l
			continue
		}
		l, err := r.TrainBatch(ctx, st.bound[k], sh.nodes, steprun.BatchSeed(seed, n), float64(len(sh.nodes))/float64(total), false)
		if err != nil {
			return 0, fmt.Errorf("batch %d on %s: %w", n, r.Env.Tier, err)
		}
		loss += l
	}
	if err := m.allReduce(len(st.shards)); err != nil {
		return 0, fmt.Errorf("batch %d: all-reduce: %w", n, err)
	}
	if err := update(); err != nil {
		return 0, fmt.Errorf("batch %d: %w", n, err)
	}
	for k := 1; k < len(st.shards); k++ {
		if err := m.opts[k-1].Step(m.replicas[k].PS.List()); err != nil {
			return 0, fmt.Errorf("batch %d: step on %s: %w", n, m.replicas[k].Env.Tier, err)
		}
	}
	return loss, nil
}

// allReduce sums the gradients of the first n replicas and gives every one
// the sum (see allReduceParams).
func (m *miniBatches) allReduce(n int) error {
	ps := make([]*engine.Params, n)
	for k := range ps {
		ps[k] = m.replicas[k].PS
	}
	return steprun.AllReduceParams(m.replicas[0].Env.Be, ps, true)
}

// Minibatch is strategy.minibatch: sampled mini-batches ([sampler]) on a
// prefetching pipeline (train.prefetch, train.overlap), input rows read
// through the tiered feature store when [cache] is set, data-parallel over
// every device of a machine with several, optionally each batch split
// into micro-batches.
type Minibatch struct{}

var _ train.Strategy = (*Minibatch)(nil)

// StrataModule implements registry.Module.
func (*Minibatch) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: "strategy.minibatch", New: func() registry.Module { return new(Minibatch) },
		Doc: "sampled mini-batches ([sampler]) on a prefetching pipeline, features through the tiered store ([cache]), data-parallel over devices"}
}

// Uses implements train.Strategy.
func (*Minibatch) Uses() train.Uses {
	return train.Uses{Sampler: true, Cache: true, Overlap: true, Devices: true, Partition: true, HalfFeatures: true, Float64: true, Checkpoints: true}
}

// NewStepper implements train.Strategy.
func (*Minibatch) NewStepper(ctx context.Context, env *train.Env) (train.Stepper, error) {
	m, err := newMiniBatches(ctx, env.Config, steprun.EnvOf(env))
	if err != nil {
		return nil, err
	}
	m.partitioner = env.Config.Partition.ID
	return m, nil
}

// CheckConfig implements train.ConfigChecker: what can be told without
// the data.
func (*Minibatch) CheckConfig(cfg *config.Config) error {
	if err := steprun.CheckSampler(cfg); err != nil {
		return err
	}
	if fd := cfg.Data.FeatureStorage(); fd != "float32" && cfg.Cache.Name != "" {
		return cfg.KeyError(fmt.Sprintf("data.feature_dtype = %q: the tiered feature store ([cache]) holds float32 rows only; remove [cache] (the rows are then gathered on the host in 16 bits) or use data.feature_dtype = \"float32\"", fd), "data", "feature_dtype")
	}
	if cfg.Train.Micro() {
		if cfg.Train.AutoMicroBatches() {
			if err := microsplit.CheckAutoMicro(cfg); err != nil {
				return err
			}
		}
		return microsplit.NeedPartitioner(cfg, "output nodes of each mini-batch")
	}
	return nil
}

// Epoch implements train.Stepper.
func (m *miniBatches) Epoch(ctx context.Context, seed uint64, update func() error) (float64, error) {
	return m.epoch(ctx, seed, update)
}

// Predict implements train.Stepper.
func (m *miniBatches) Predict(ctx context.Context, pred []int32) error { return m.predict(ctx, pred) }

// PredictOutputs implements train.OutputPredictor.
func (m *miniBatches) PredictOutputs(ctx context.Context) (logits, hidden []float64, width int, err error) {
	return m.replicas[0].PredictOutputs(ctx)
}

// Params implements train.Stepper.
func (m *miniBatches) Params() *engine.Params { return m.params() }

// Release implements train.Stepper.
func (m *miniBatches) Release() { m.release() }

// PredictedS implements train.Pipelined.
func (m *miniBatches) PredictedS() float64 { return m.predictedS() }

// ReportEpoch implements train.EpochReporter.
func (m *miniBatches) ReportEpoch(rec *train.EpochRecord) {
	rec.SampleS, rec.ExtractS, rec.StageS, rec.TrainS, rec.CacheHitRate = m.sampleS, m.extractS, m.stageS, m.trainS, m.hitRate()
}

// ReportResult implements train.ResultReporter.
func (m *miniBatches) ReportResult(res *train.Result) {
	if mm := m.micro; mm != nil {
		res.Partitioner, res.MicroBatches, res.MicroBatchesAuto, res.EstimatedPeakBytes = m.partitioner, mm.microK, mm.auto, mm.estPeak
	}
	res.SampleTimeS, res.ExtractTimeS, res.StageTimeS, res.TrainTimeS = m.sampleS, m.extractS, m.stageS, m.trainS
	res.CacheHitRate, res.TierHitRates = m.hitRate(), m.hitRates()
	res.PredictedFeaturesS, res.PredictedTopologyS = m.predFeatS, m.predTopoS
	if m.store != nil && m.store.HoldsTopology() {
		k, _ := m.store.HotTopology()
		res.TopologyRatio = float64(k) / float64(max(m.store.NumRows(), 1))
	}
	if m.sampleS > 0 {
		res.SampledEdgesPerS = float64(m.sampledEdges) / m.sampleS
	}
}

func init() { registry.Register(new(Minibatch)) }

// ExampleConfig implements train.Exampler: a two-layer uniform sampler.
func (*Minibatch) ExampleConfig() []string {
	return []string{`sampler.name="uniform"`, "sampler.fanouts=[5,5]", "train.batch_size=64"}
}

// OwnCostModels implements train.CostModelUser: Betty's memory estimate
// (train.micro_batches = "auto").
func (*Minibatch) OwnCostModels() []string { return []string{memest.CostModel} }
