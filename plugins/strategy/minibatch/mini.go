// Package minibatch is strategy.minibatch: sampled mini-batches on a
// prefetching pipeline, optionally through the tiered feature store,
// data-parallel over several devices and each batch split into
// micro-batches.
package minibatch

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"strata/core/backend"
	"strata/core/config"
	"strata/core/diskrows"
	"strata/core/engine"
	"strata/core/graph"
	"strata/core/registry"
	"strata/core/sampling"
	"strata/core/store"
	"strata/core/tensor"
	"strata/core/train"
	"strata/plugins/strategy/internal/memest"
	"strata/plugins/strategy/internal/microsplit"
	"strata/plugins/strategy/internal/options"
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
// devices; the training goroutine computes. With minibatch.overlap the
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
	// sampleMEPS prices host sampling (minibatch.sample_meps; 0: not).
	sampleMEPS float64
	// Time spent per stage in the last epoch, in seconds (sampling and
	// extraction overlap with training, and so does the transfer stage
	// with overlap).
	sampleS, extractS, stageS, trainS float64
	sampledEdges                      int64
	// predicted is the simulated machine's predicted time of the last
	// epoch, pipelined (0 off the simulated backend).
	predicted float64
	// predFeatS and predTopoS are the last epoch's mean predicted feature
	// and topology transfer time per batch, predSampleS its host
	// sampling's (minibatch.sample_meps).
	predFeatS, predTopoS, predSampleS float64
	// store, when a cache policy is configured, holds the hot feature rows
	// on the devices; hits and rows count the last epoch's gathers.
	store      *store.Store
	hits, rows int64
	peer       int64 // rows served by another device's cache
	// micro, with train.micro_batches, splits every shard into
	// micro-batches (see miniMicro); nil otherwise.
	micro       *miniMicro
	partitioner string // [partition] of the micro-batches, for the result
	// link trains link prediction on batches of edges (train.task =
	// "link"); nil for node tasks.
	link *miniLink
	// disk, with minibatch.features.tier = "disk", serves the input rows
	// from the dataset file; diskEpoch counts the last epoch's reads.
	disk                *diskrows.Tier
	diskPrev, diskEpoch diskrows.Stats
}

func newMiniBatches(ctx context.Context, cfg *config.Config, e steprun.Env) (*miniBatches, error) {
	if err := (*Minibatch)(nil).CheckConfig(cfg); err != nil {
		return nil, err
	}
	s := cfg.Sampler.Module.(sampling.Sampler)
	disk, err := openDiskTier(ctx, cfg, e)
	if err != nil {
		return nil, err
	}
	if disk != nil {
		e.Disk = disk
	}
	if optionsOf(cfg).SparseInput && e.UseSparseInput() && e.Log != nil {
		fmt.Fprintf(e.Log, "minibatch: sparse input, %d entries (%.2f%% of the features)\n", e.Entries.NNZ(), 100*float64(e.Entries.NNZ())/float64(max(1, e.DS.NumNodes*e.Dim)))
	}
	micro, err := newMiniMicro(ctx, cfg, e)
	if err != nil {
		closeDisk(disk)
		return nil, err
	}
	// Evaluation runs over full neighbourhoods: in one piece, or, on a
	// device with a capacity (devices.memory_bytes, or the memory pool
	// that "auto" fits on cuda), in chunks of batch_size nodes (with
	// micro_batches = "auto", as many as the memory estimate needs).
	evalChunks := 1
	if cfg.Devices.MemoryBytes > 0 || micro.capacity() > 0 {
		if evalChunks, err = micro.evalChunks(ctx, e, max(1, e.DS.NumNodes/max(optionsOf(cfg).BatchSize, 1))); err != nil {
			micro.close()
			closeDisk(disk)
			return nil, err
		}
	}
	opts := optionsOf(cfg)
	m := &miniBatches{sampler: s, batch: opts.BatchSize, prefetch: opts.PrefetchDepth, overlap: opts.Overlap, sampleMEPS: opts.SampleMEPS}
	m.micro, m.disk = micro, disk
	devices := []tensor.Tier{e.Tier}
	if md, ok := e.Be.(backend.MultiDevice); ok {
		devices = md.DeviceTiers()
	}
	for i, tier := range devices {
		re := e
		re.Tier = tier
		r, err := steprun.NewRunner(re, evalChunks) // same seed: identical replicas
		if err == nil {
			err = steprun.UseInference(cfg, r)
		}
		if err != nil {
			m.release()
			return nil, err
		}
		m.replicas = append(m.replicas, r)
		if i > 0 {
			opt, err := e.NewOptimizer(e.Be)
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
	if e.Link != nil {
		if len(m.replicas) > 1 {
			m.release()
			return nil, cfg.KeyError(fmt.Sprintf("devices: link prediction on mini-batches trains on one device yet, and the machine has %d; use devices.count = 1", len(m.replicas)), "devices")
		}
		if m.link, err = newMiniLink(e, m.replicas[0]); err != nil {
			m.release()
			return nil, err
		}
	}
	return m, nil
}

func (m *miniBatches) release() {
	if m.link != nil {
		m.link.release()
	}
	if m.store != nil {
		m.store.Close()
	}
	m.micro.close()
	closeDisk(m.disk)
	for _, r := range m.replicas {
		r.Release()
	}
}

func (m *miniBatches) predict(ctx context.Context, pred []int32) error {
	return m.replicas[0].Predict(ctx, pred)
}

func (m *miniBatches) params() *engine.Params {
	if m.link != nil {
		return m.link.params
	}
	return m.replicas[0].PS
}

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
	link   *linkBatch              // its pairs, when training links
}

// sampled is one batch made ready by the producer.
type sampled struct {
	shards []shard
	err    error
}

func (m *miniBatches) epoch(ctx context.Context, seed uint64, update func() error) (float64, error) {
	e := m.replicas[0].Env
	if m.disk != nil {
		if err := m.disk.StartEpoch(); err != nil {
			return 0, err
		}
	}
	var batches [][]int32
	var links []linkBatch
	if m.link == nil {
		batches = m.epochBatches(e, seed)
	} else {
		var err error
		if links, err = m.link.epochBatches(ctx, seed, m.batch); err != nil {
			return 0, err
		}
		for _, b := range links {
			batches = append(batches, b.nodes)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := &miniEpoch{m: m, e: e, ctx: ctx, cancel: cancel, seed: seed, queue: make(chan sampled, m.prefetch), done: make(chan struct{}), links: links, batches: len(batches)}
	go p.produce(batches)
	// The transfer stage: inline, or a goroutine one batch ahead.
	_, p.sb = e.Be.(backend.TimePredictor)
	p.stageDone = make(chan struct{})
	if m.overlap {
		p.stages = make(chan *staged) // unbuffered: one batch staged while one trains
		go p.transfer()
	} else {
		close(p.stageDone)
	}
	defer p.stop()
	t, err := p.trainAll(update)
	if err != nil {
		return 0, err
	}
	<-p.done
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.recordEpoch(p, &t)
	return t.loss / float64(max(t.n, 1)), nil
}

// epochBatches splits the training nodes, shuffled with the epoch's
// seed, into batches of the batch size.
func (m *miniBatches) epochBatches(e steprun.Env, seed uint64) [][]int32 {
	order := steprun.Shuffled(e.DS.Train, seed)
	var batches [][]int32
	for lo := 0; lo < len(order); lo += m.batch {
		batches = append(batches, order[lo:min(lo+m.batch, len(order))])
	}
	return batches
}

// batchLogEvery is how often a long epoch reports its batches.
const batchLogEvery = 10 * time.Second

// miniEpoch is one epoch's pipeline: the producer (sampling and host
// extraction) feeding queue, and the transfer stage, inline or (with
// overlap) a goroutine feeding stages.
type miniEpoch struct {
	m      *miniBatches
	e      steprun.Env
	ctx    context.Context
	cancel context.CancelFunc
	seed   uint64
	links  []linkBatch // batch i's pairs, when training links
	// batches is the epoch's batch count, for its progress lines.
	batches int
	sb      bool // the backend predicts time (a simulated machine)
	queue   chan sampled
	done    chan struct{} // closed when the producer ends
	// stages carries the staged batches with overlap (nil without);
	// stageDone is closed when its goroutine ends (at once without).
	stages    chan *staged
	stageDone chan struct{}
	// The producer's totals, read once done is closed.
	sampleS, hostExtractS float64
	edges                 int64
}

// miniTotals are the training goroutine's totals over an epoch.
type miniTotals struct {
	loss, trainS, stageS, featS, topoS float64
	hits, peer, rows                   int64
	stagePred, computePred             []float64
	samplePred                         []float64 // host sampling, when priced
	n                                  int       // the batches trained
}

// produce is the producer's goroutine: every batch sampled and
// extracted into the queue, until a batch fails or the epoch is
// cancelled.
func (p *miniEpoch) produce(batches [][]int32) {
	defer close(p.done)
	defer close(p.queue)
	for i, nodes := range batches {
		b := p.sampleBatch(i, nodes)
		select {
		case p.queue <- b:
		case <-p.ctx.Done():
			return
		}
		if b.err != nil {
			return
		}
	}
}

// sampleBatch samples batch i's shard of every device, splits it into
// micro-batches when micro-batching and gathers its input rows on the
// host when there is neither a store nor micro-batches; it stops at the
// first error.
func (p *miniEpoch) sampleBatch(i int, nodes []int32) sampled {
	m, e := p.m, p.e
	var b sampled
	d := len(m.replicas)
	for k := 0; k < d && b.err == nil; k++ {
		part := nodes[k*len(nodes)/d : (k+1)*len(nodes)/d]
		if len(part) == 0 {
			continue
		}
		t0 := time.Now()
		blocks, topo, err := m.sample(p.ctx, k, part, p.seed*0x9e3779b97f4a7c15+uint64(i*d+k))
		t1 := time.Now()
		p.sampleS += t1.Sub(t0).Seconds()
		if err != nil {
			b.err = err
			break
		}
		sh := shard{nodes: part, blocks: blocks, topo: topo}
		if p.links != nil { // one device: the batch is its shard
			sh.link = &p.links[i]
			if m.link.task.ExcludeBatch {
				sh.blocks = m.link.excludeHeld(blocks, sh.link.held)
				blocks = sh.blocks
			}
		}
		if m.micro != nil {
			if b.err = m.micro.splitShard(p.ctx, &sh); b.err != nil {
				break
			}
		}
		if m.store == nil && sh.micro == nil {
			if sh.x, b.err = e.GatherInput(blocks[0].Src); b.err != nil {
				break
			}
		}
		for _, bl := range blocks {
			p.edges += bl.NumEdges()
		}
		p.hostExtractS += time.Since(t1).Seconds()
		b.shards = append(b.shards, sh)
	}
	return b
}

// stageOne runs the transfer stage on batch n, with its predicted times
// on a simulated machine.
func (p *miniEpoch) stageOne(b sampled, n int) *staged {
	e := p.e
	var before train.Prediction
	if p.sb {
		before = train.PredictionNow(e.Be)
	}
	st := p.m.stage(p.ctx, b, n)
	if p.sb {
		d := train.PredictionNow(e.Be).Since(before)
		st.predictedS, _ = d.Split()
		st.featS, st.topoS = d.TransferS[backend.PurposeFeatures], d.TransferS[backend.PurposeTopology]
		st.sampleS = p.m.hostSampleS(b)
	}
	return st
}

// transfer is the transfer stage's goroutine with overlap: every queued
// batch staged into stages, until one fails or the epoch is cancelled.
func (p *miniEpoch) transfer() {
	defer close(p.stageDone)
	defer close(p.stages)
	n := 0
	for b := range p.queue {
		st := p.stageOne(b, n)
		select {
		case p.stages <- st:
		case <-p.ctx.Done():
			st.release(p.m)
			return
		}
		if st.err != nil {
			return
		}
		n++
	}
}

// stop cancels the epoch, releases what the transfer stage made after an
// early return and waits for it.
func (p *miniEpoch) stop() {
	p.cancel()
	if p.stages != nil {
		for st := range p.stages { // drain what the stage made after an early return
			st.release(p.m)
		}
	}
	<-p.stageDone
}

// next returns batch n staged: from the transfer goroutine, or staged
// here from the queue; false when there are no more.
func (p *miniEpoch) next(n int) (*staged, bool) {
	if p.stages != nil {
		st, ok := <-p.stages
		return st, ok
	}
	b, ok := <-p.queue
	if !ok {
		return nil, false
	}
	return p.stageOne(b, n), true
}

// trainAll trains every staged batch in turn and sums the epoch's
// totals; it stops at the first error.
func (p *miniEpoch) trainAll(update func() error) (miniTotals, error) {
	m, e := p.m, p.e
	var t miniTotals
	start, last := time.Now(), time.Now()
	for {
		st, ok := p.next(t.n)
		if !ok {
			break
		}
		if st.err != nil {
			st.release(m)
			return t, st.err
		}
		t.stageS += st.seconds
		t.featS, t.topoS = t.featS+st.featS, t.topoS+st.topoS
		t.hits, t.peer, t.rows = t.hits+st.hits, t.peer+st.peer, t.rows+st.rows
		var before train.Prediction
		if p.sb {
			before = train.PredictionNow(e.Be)
		}
		t0 := time.Now()
		l, err := m.train(p.ctx, st, p.seed, t.n, update)
		st.release(m)
		if err != nil {
			return t, err
		}
		t.loss += l
		t.trainS += time.Since(t0).Seconds()
		if now := time.Now(); e.Log != nil && now.Sub(last) >= batchLogEvery {
			last = now
			rate := float64(t.n+1) / now.Sub(start).Seconds()
			fmt.Fprintf(e.Log, "minibatch: batch %d of %d, %.2f batches/s, about %.0f s left in the epoch\n", t.n+1, p.batches, rate, float64(p.batches-t.n-1)/rate)
		}
		if p.sb {
			_, c := train.PredictionNow(e.Be).Since(before).Split()
			t.stagePred, t.computePred = append(t.stagePred, st.predictedS), append(t.computePred, c)
			t.samplePred = append(t.samplePred, st.sampleS)
		}
		t.n++
	}
	return t, nil
}

// recordEpoch keeps the finished epoch's stage times, counts and
// predicted time.
func (m *miniBatches) recordEpoch(p *miniEpoch, t *miniTotals) {
	n := t.n
	m.sampleS, m.extractS, m.stageS, m.trainS, m.sampledEdges = p.sampleS, p.hostExtractS, t.stageS, t.trainS, p.edges
	m.hits, m.peer, m.rows = t.hits, t.peer, t.rows
	m.predFeatS, m.predTopoS = t.featS/float64(max(n, 1)), t.topoS/float64(max(n, 1))
	m.micro.endEpoch(m)
	if m.disk != nil {
		now := m.disk.Stats()
		m.diskEpoch = now.Sub(m.diskPrev)
		m.diskPrev = now
	}
	m.predSampleS = 0
	for _, s := range t.samplePred {
		m.predSampleS += s
	}
	m.predSampleS /= float64(max(n, 1))
	m.predicted = predictedEpochS(t, m.overlap, m.sampleMEPS > 0)
}

// predictedEpochS is an epoch's predicted time from its steps': transfer
// stage and computation one after the other, or pipelined with overlap;
// with priced host sampling, each step's sampling is a stage of its own
// ahead of them (a data loader samples the next batches while a step
// runs).
func predictedEpochS(t *miniTotals, overlap, sampling bool) float64 {
	switch {
	case sampling && overlap:
		return steprun.LockstepS(t.samplePred, t.stagePred, t.computePred)
	case sampling:
		rest := make([]float64, len(t.stagePred))
		for i := range rest {
			rest[i] = t.stagePred[i] + t.computePred[i]
		}
		return steprun.LockstepS(t.samplePred, rest)
	case overlap:
		return steprun.PipelinedS(t.stagePred, t.computePred)
	}
	var s float64
	for i := range t.stagePred {
		s += t.stagePred[i] + t.computePred[i]
	}
	return s
}

// hostSampleS is the predicted time of a batch's host sampling: its
// sampled edges, over every shard, at minibatch.sample_meps; 0 when not
// priced or when the devices sample (the store holds the topology).
func (m *miniBatches) hostSampleS(b sampled) float64 {
	if m.sampleMEPS <= 0 || m.store != nil && m.store.HoldsTopology() {
		return 0
	}
	var edges int64
	for _, sh := range b.shards {
		for _, bl := range sh.blocks {
			edges += int64(bl.NumEdges())
		}
	}
	return float64(edges) / (m.sampleMEPS * 1e6)
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
	sampleS    float64 // the batch's predicted host sampling (minibatch.sample_meps)
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
		var l float64
		var err error
		if sh.link != nil {
			l, err = m.link.trainBatch(ctx, st.bound[k], sh.link, steprun.BatchSeed(seed, n))
		} else {
			l, err = r.TrainBatch(ctx, st.bound[k], sh.nodes, steprun.BatchSeed(seed, n), float64(len(sh.nodes))/float64(total), false)
		}
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
// prefetching pipeline (train.prefetch, minibatch.overlap), input rows read
// through the tiered feature store when [cache] is set, data-parallel over
// every device of a machine with several, optionally each batch split
// into micro-batches.
type Minibatch struct {
	Options
}

var _ train.Strategy = (*Minibatch)(nil)

// StrataModule implements registry.Module.
func (*Minibatch) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: "strategy.minibatch", New: func() registry.Module { return &Minibatch{Options: defaultOptions()} },
		Doc: "sampled mini-batches ([sampler]) on a prefetching pipeline, features through the tiered store ([cache]), data-parallel over devices"}
}

// Uses implements train.Strategy: [partition] when its batches are split
// into micro-batches.
func (m *Minibatch) Uses() train.Uses {
	return train.Uses{Sampler: true, Blocks: true, Cache: true, Devices: true, Partition: m.Micro(), HalfFeatures: true, Float64: true, Checkpoints: true, EdgeWeights: true, Link: true}
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
	if err := checkLinkConfig(cfg); err != nil {
		return err
	}
	if err := checkSparseInput(cfg); err != nil {
		return err
	}
	if err := checkDiskTier(cfg); err != nil {
		return err
	}
	if err := options.CheckInference(cfg); err != nil {
		return err
	}
	if optionsOf(cfg).SampleMEPS > 0 && cfg.Train.Backend != "sim" {
		return cfg.KeyError(fmt.Sprintf("minibatch.sample_meps prices host sampling in a simulated machine's predicted time, and train.backend = %q predicts none; set train.backend = \"sim\" or remove minibatch.sample_meps", cfg.Train.Backend), "minibatch", "sample_meps")
	}
	if fd := cfg.Data.FeatureStorage(); fd != "float32" && cfg.Cache.Name != "" {
		return cfg.KeyError(fmt.Sprintf("data.feature_dtype = %q: the tiered feature store ([cache]) holds float32 rows only; remove [cache] (the rows are then gathered on the host in 16 bits) or use data.feature_dtype = \"float32\"", fd), "data", "feature_dtype")
	}
	if opts := optionsOf(cfg); opts.Micro() {
		if opts.AutoK() {
			if err := microsplit.CheckAutoMicro(cfg); err != nil {
				return err
			}
		}
		return microsplit.NeedPartitioner(cfg, "output nodes of each mini-batch")
	}
	return options.CheckPartitionUsed(cfg)
}

// Epoch implements train.Stepper.
func (m *miniBatches) Epoch(ctx context.Context, seed uint64, update func() error) (float64, error) {
	return m.epoch(ctx, seed, update)
}

// Predict implements train.Stepper.
func (m *miniBatches) Predict(ctx context.Context, pred []int32) error { return m.predict(ctx, pred) }

// ScorePairs implements train.LinkScorer.
func (m *miniBatches) ScorePairs(ctx context.Context, pairs graph.Pairs, scores []float64) error {
	if m.link == nil {
		return fmt.Errorf("minibatch: pair scores of a run that does not train links (train.task = \"link\")")
	}
	return m.link.dec.ScoreOver(ctx, m.replicas[0], pairs, scores)
}

// PredictScores implements train.Scorer.
func (m *miniBatches) PredictScores(ctx context.Context, pred, rows []int32, logits []float64) error {
	return m.replicas[0].PredictScores(ctx, pred, rows, logits)
}

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
	rec.SampleS, rec.ExtractS, rec.StageS, rec.TrainS = m.sampleS, m.extractS, m.stageS, m.trainS
	if rec.Extra == nil {
		rec.Extra = map[string]string{}
	}
	rec.Extra["cache_hit_rate"] = strconv.FormatFloat(m.hitRate(), 'g', 6, 64)
	if m.disk != nil {
		st := m.diskEpoch
		rec.Extra["disk_bytes"] = strconv.FormatInt(st.Bytes, 10)
		rec.Extra["disk_hits"] = strconv.FormatInt(st.Hits, 10)
		rec.Extra["disk_misses"] = strconv.FormatInt(st.Misses, 10)
		rec.Extra["disk_device_bytes"] = strconv.FormatInt(st.DeviceBytes, 10)
	}
}

// Columns implements train.Columner: the epoch's cache hit rate.
func (m *miniBatches) Columns() []string {
	if m.disk != nil {
		return []string{"cache_hit_rate", "disk_bytes", "disk_hits", "disk_misses", "disk_device_bytes"}
	}
	return []string{"cache_hit_rate"}
}

// ReportResult implements train.ResultReporter.
func (m *miniBatches) ReportResult(res *train.Result) {
	split := options.SplitFigures{MicroBatches: 1}
	if mm := m.micro; mm != nil {
		res.Partitioner, res.EstimatedPeakBytes = m.partitioner, mm.estPeak
		split.MicroBatches, split.Auto = mm.microK, mm.auto
	}
	res.SampleTimeS, res.ExtractTimeS, res.StageTimeS, res.TrainTimeS = m.sampleS, m.extractS, m.stageS, m.trainS
	fig := &Figures{DiskTier: m.diskTierFigure(), SplitFigures: split, CacheHitRate: m.hitRate(), TierHitRates: m.hitRates(), PredictedFeaturesS: m.predFeatS, PredictedTopologyS: m.predTopoS, PredictedSamplingS: m.predSampleS}
	if m.store != nil && m.store.HoldsTopology() {
		k, _ := m.store.HotTopology()
		fig.TopologyRatio = float64(k) / float64(max(m.store.NumRows(), 1))
		topo, feat := m.store.DeviceBytes()
		fig.DeviceTopologyBytes, fig.DeviceFeatureBytes = mean(topo), mean(feat)
	}
	if m.sampleS > 0 {
		fig.SampledEdgesPerS = float64(m.sampledEdges) / m.sampleS
	}
	res.SetFigures("minibatch", fig)
}

func init() { registry.Register(&Minibatch{Options: defaultOptions()}) }

// Figures are strategy.minibatch's figures of its tiered feature store
// ([cache], [minibatch.store]) in the result line, "minibatch": {...}.
type Figures struct {
	// SplitFigures are the micro-batches each batch was split into.
	options.SplitFigures
	// CacheHitRate is the share of the last epoch's feature rows served
	// by the device's feature cache; TierHitRates splits those rows by
	// where they came from: "local" (the training device's own cache),
	// "peer" (another device's, over a link) and "host".
	CacheHitRate float64            `json:"cache_hit_rate,omitempty" doc:"share of the last epoch's feature rows served by the device cache"`
	TierHitRates map[string]float64 `json:"tier_hit_rates,omitempty" doc:"share of the last epoch's feature rows served by the device's own cache (local), another device's (peer) or the host"`
	// PredictedFeaturesS and PredictedTopologyS are the mean predicted
	// transfer time per step of the last epoch's feature extraction
	// (store gathers, input rows) and topology (the samplers' reads
	// through the store, block uploads), links in parallel (on sim).
	PredictedFeaturesS float64 `json:"predicted_features_s,omitempty" doc:"mean predicted transfer time per step of the last epoch's feature extraction, seconds"`
	PredictedTopologyS float64 `json:"predicted_topology_s,omitempty" doc:"mean predicted transfer time per step of the last epoch's topology reads and block uploads, seconds"`
	PredictedSamplingS float64 `json:"predicted_sampling_s,omitempty" doc:"mean predicted host sampling time per step of the last epoch (minibatch.sample_meps; every device's shard), seconds"`
	// TopologyRatio is the share of the nodes whose topology the devices
	// hold (minibatch.store.graph_ratio, "auto" resolved).
	TopologyRatio float64 `json:"topology_ratio,omitempty" doc:"share of the nodes whose topology the devices hold (minibatch.store.graph_ratio, auto resolved)"`
	// DeviceTopologyBytes and DeviceFeatureBytes are what the store's
	// topology rows and cached feature rows take on a device, the mean
	// over the devices (with a graph ratio).
	DeviceTopologyBytes float64 `json:"device_topology_bytes,omitempty" doc:"bytes of topology rows the store holds on a device, mean over the devices (with minibatch.store.graph_ratio)"`
	DeviceFeatureBytes  float64 `json:"device_feature_bytes,omitempty" doc:"bytes of feature rows the store caches on a device, mean over the devices (with minibatch.store.graph_ratio)"`
	// SampledEdgesPerS is the last epoch's sampled edges per second of
	// sampling time.
	SampledEdgesPerS float64 `json:"sampled_edges_per_s,omitempty" doc:"sampled edges per second of sampling time"`
	// DiskTier counts the last epoch's reads of the disk feature tier
	// (minibatch.features.tier = "disk"); nil without one.
	DiskTier *diskrows.Stats `json:"disk_tier,omitempty" doc:"the last epoch's disk feature tier traffic: host-cache hits, rows read (misses), bytes read and reads issued"`
}

// CheckRules implements train.CheckRuler: the sampling rate is measured
// by the wall clock; the store's figures are compared.
func (*Figures) CheckRules() []train.CheckRule {
	return []train.CheckRule{{Pattern: "sampled_edges_per_s", Why: train.WhyWallClock}}
}

// Figures implements train.FigureDeclarer.
func (*Minibatch) Figures() any { return &Figures{} }

// ExampleConfig implements train.Exampler: a two-layer uniform sampler.
func (*Minibatch) ExampleConfig() []string {
	return []string{`sampler.name="uniform"`, "sampler.fanouts=[5,5]", "train.batch_size=64"}
}

// OwnCostModels implements train.CostModelUser: Betty's memory estimate
// (train.micro_batches = "auto").
func (*Minibatch) OwnCostModels() []string { return []string{memest.CostModel} }

// checkSparseInput refuses minibatch.sparse_input with a feature source
// that serves dense rows (the disk tier, the device store of [cache]).
func checkSparseInput(cfg *config.Config) error {
	opts := optionsOf(cfg)
	switch {
	case !opts.SparseInput:
		return nil
	case opts.Features.Tier == "disk":
		return cfg.KeyError("minibatch.sparse_input: the disk tier reads dense rows and never holds them all; use minibatch.features.tier = \"memory\" or sparse_input = false", "minibatch", "sparse_input")
	case cfg.Cache.Name != "":
		return cfg.KeyError("minibatch.sparse_input: the device store ([cache]) serves dense rows; remove [cache] or use sparse_input = false", "minibatch", "sparse_input")
	}
	return nil
}
