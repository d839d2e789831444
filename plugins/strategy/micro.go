package strategy

import (
	"context"
	"errors"
	"fmt"

	"strata/core/backend"
	"strata/core/config"
	"strata/core/engine"
	"strata/core/registry"
	"strata/core/tensor"
	"strata/core/train"
	"strata/plugins/sampler"
)

// microBatches splits every step into K micro-batches of training nodes, as
// Betty does: each micro-batch runs over the full-neighbour blocks of its
// nodes, the gradients of all of them accumulate into one optimizer step,
// and peak memory is that of the largest micro-batch, not of the graph.
//
// The step's gradient equals the full-graph gradient: every micro-batch's
// mean loss is weighed by its share of the training nodes, and block edges
// carry the full graph's normalisation weights. (Dropout draws differ, and
// batch norm sees each micro-batch's statistics.)
//
// With train.micro_batches = "auto" K is the smallest number whose largest
// micro-batch fits the simulated device by Betty's memory estimate
// (costmodel.betty-memory), and evaluation chunks are sized the same way.
type microBatches struct {
	*blockRunner
	batches []microBatch // the micro-batches, with their blocks
	total   int          // training nodes
	inputs  []int        // input rows (block 0 sources) per micro-batch, last step
	// wholeInputs is the input rows of the whole batch (all training
	// nodes at once), the denominator of the redundancy.
	wholeInputs int
	auto        bool
	estPeak     int64 // the largest micro-batch's estimated peak (0: not estimated)
	partitioner string
	capacity    int64 // devices.memory_bytes, for Announce
}

// redundancy returns Betty's redundancy of the last step: the micro-batches'
// input rows summed, over the whole batch's.
func (m *microBatches) redundancy() float64 {
	s := 0
	for _, n := range m.inputs {
		s += n
	}
	return float64(s) / float64(m.wholeInputs)
}

// checkAutoMicro checks that train.micro_batches = "auto" has a device
// capacity to fit.
func checkAutoMicro(cfg *config.Config) error {
	if cfg.Train.Backend != "sim" {
		return cfg.KeyError(fmt.Sprintf("train.micro_batches = \"auto\" sizes the micro-batches to a simulated device's memory, but train.backend = %q; set train.backend = \"sim\" and devices.memory_bytes, or give micro_batches a number", cfg.Train.Backend), "train", "micro_batches")
	}
	if cfg.Devices.MemoryBytes <= 0 {
		return cfg.KeyError("train.micro_batches = \"auto\" sizes the micro-batches to the device's memory, but devices.memory_bytes is 0 (unlimited); set devices.memory_bytes, or give micro_batches a number", "train", "micro_batches")
	}
	return nil
}

func newMicroBatches(ctx context.Context, cfg *config.Config, e stepEnv) (*microBatches, error) {
	k, auto := cfg.Train.MicroBatches, cfg.Train.AutoMicroBatches()
	train := e.ds.Train
	if !auto && k > len(train) {
		return nil, cfg.KeyError(fmt.Sprintf("train.micro_batches = %d is more than the %d training nodes", k, len(train)), "train", "micro_batches")
	}
	if auto {
		if err := checkAutoMicro(cfg); err != nil {
			return nil, err
		}
	}
	s, err := newSplitter(ctx, cfg, "training nodes")
	if err != nil {
		return nil, err
	}
	full := &sampler.Full{Hops: len(graphsPerLayer(e.model))}
	whole, err := full.Sample(ctx, e.adjs.Adj, train, 0)
	if err != nil {
		return nil, err
	}
	// On a simulated device every micro-batch's peak is estimated (and
	// reported); "auto" searches K with it.
	if _, isSim := e.be.(backend.Machine); isSim {
		if s.est, err = newMemEstimator(ctx, e, cfg.Train.Optimizer, cfg.Train.Momentum, true); err != nil {
			return nil, err
		}
		defer s.est.Close()
		s.capacity = cfg.Devices.MemoryBytes
	}
	var mbs []microBatch
	var worst memEstimate
	if auto {
		mbs, worst, err = s.auto(ctx, whole)
	} else {
		mbs, worst, err = s.split(ctx, whole, k)
	}
	var inf *InfeasibleError
	if errors.As(err, &inf) {
		// The run also evaluates: the capacity it needs is the larger.
		if inf.EvalCapacity, err = evalMinCapacity(ctx, e, s.est); err != nil {
			return nil, err
		}
		return nil, inf
	}
	if err != nil {
		return nil, err
	}
	// Evaluation reads every node, bound for inference (no gradients): on
	// a device with a capacity in twice as many chunks as training (with
	// "auto", as many as its estimate needs), otherwise in one piece.
	evalChunks := 1
	if cfg.Devices.MemoryBytes > 0 {
		evalChunks = 2 * len(mbs)
		if auto {
			if evalChunks, err = fitEvalChunks(ctx, e, s.est, s.capacity, evalChunks); err != nil {
				return nil, err
			}
		}
	}
	r, err := newBlockRunner(e, evalChunks)
	if err != nil {
		return nil, err
	}
	return &microBatches{blockRunner: r, batches: mbs, total: len(train), wholeInputs: len(whole[0].Src), auto: auto, estPeak: worst.Peak}, nil
}

// fitEvalChunks returns the smallest number of evaluation chunks, from
// start and doubling, whose full-neighbour inference fits capacity by the
// estimate; when not even one node at a time fits, an *EvalInfeasibleError.
func fitEvalChunks(ctx context.Context, e stepEnv, est *memEstimator, capacity int64, start int) (int, error) {
	n := e.ds.NumNodes
	full := &sampler.Full{Hops: len(graphsPerLayer(e.model))}
	for chunks := max(1, min(start, n)); chunks < n; chunks = min(n, 2*chunks) {
		fits := true
		for c := 0; c < chunks && fits; c++ {
			blocks, err := full.Sample(ctx, e.adjs.Adj, iota32From(c*n/chunks, (c+1)*n/chunks), 0)
			if err != nil {
				return 0, err
			}
			m, err := est.infer(blocks)
			if err != nil {
				return 0, err
			}
			fits = m.Peak <= capacity
		}
		if fits {
			return chunks, nil
		}
	}
	worst, err := evalMinCapacity(ctx, e, est)
	if err != nil {
		return 0, err
	}
	if worst > capacity {
		return 0, &EvalInfeasibleError{Capacity: capacity, MinCapacity: worst}
	}
	return n, nil
}

// evalMinCapacity returns the smallest capacity evaluation fits in: the
// largest estimated inference peak of one node's full neighbourhood.
func evalMinCapacity(ctx context.Context, e stepEnv, est *memEstimator) (int64, error) {
	full := &sampler.Full{Hops: len(graphsPerLayer(e.model))}
	var worst int64
	for v := range e.ds.NumNodes {
		blocks, err := full.Sample(ctx, e.adjs.Adj, []int32{int32(v)}, 0)
		if err != nil {
			return 0, err
		}
		m, err := est.infer(blocks)
		if err != nil {
			return 0, err
		}
		worst = max(worst, m.Peak)
	}
	return worst, nil
}

// EvalInfeasibleError says that evaluation does not fit the device even
// one node at a time.
type EvalInfeasibleError struct {
	Capacity, MinCapacity int64
}

func (e *EvalInfeasibleError) Error() string {
	return fmt.Sprintf("train.micro_batches = \"auto\": evaluation does not fit devices.memory_bytes = %d (%s) even one node at a time: "+
		"the smallest feasible capacity is devices.memory_bytes = %d (%s)", e.Capacity, mib(e.Capacity), e.MinCapacity, mib(e.MinCapacity))
}

func iota32From(lo, hi int) []int32 {
	out := make([]int32, hi-lo)
	for i := range out {
		out[i] = int32(lo + i)
	}
	return out
}

func partitionerNames() []string {
	var out []string
	for _, mi := range registry.Namespace("partitioner") {
		out = append(out, mi.Name())
	}
	return out
}

// epoch is one optimizer step over all micro-batches.
func (m *microBatches) epoch(ctx context.Context, seed uint64, update func() error) (float64, error) {
	if err := m.ps.ZeroGrads(); err != nil {
		return 0, err
	}
	m.inputs = m.inputs[:0]
	var loss float64
	for i, mb := range m.batches {
		bb, err := m.bind(mb.blocks, featRows{}, nil, false)
		if err != nil {
			return 0, fmt.Errorf("micro-batch %d: %w", i, err)
		}
		l, err := m.trainBatch(ctx, bb, mb.nodes, seed, float64(len(mb.nodes))/float64(m.total), true)
		m.inputs = append(m.inputs, len(mb.blocks[0].Src))
		bb.release(m.e)
		if err != nil {
			return 0, fmt.Errorf("micro-batch %d: %w", i, err)
		}
		loss += l
	}
	return loss, update()
}

// miniMicro splits sampled mini-batches into micro-batches (Betty on a
// sampled batch): each shard's output nodes are split by the [partition]
// plugin, each micro-batch runs over its share of the shard's sampled
// blocks (the same neighbours, so the gradient is the shard's), and their
// gradients accumulate into the batch's one step. With "auto" every shard
// gets the smallest K whose largest micro-batch fits the device by the
// memory estimate. Micro-batches are bound one at a time by the training
// goroutine (the transfer stage does not stage them: two at once would
// double the peak the split bounds).
type miniMicro struct {
	split *splitter
	k     int
	auto  bool
	// microK and estPeak are the largest K and estimated micro-batch peak
	// of the last epoch (written by the producer, read after it is done).
	microK, curK     int
	estPeak, curPeak int64
	// Feature-store gathers made while training micro-batches.
	hits, rows, peer int64
}

// newMiniMicro returns the micro-batching of a minibatch config, or nil
// when train.micro_batches is 1.
func newMiniMicro(ctx context.Context, cfg *config.Config, e stepEnv) (*miniMicro, error) {
	if !cfg.Train.Micro() {
		return nil, nil
	}
	if err := checkMiniMicro(cfg, len(e.ds.Train)); err != nil {
		return nil, err
	}
	s, err := newSplitter(ctx, cfg, "output nodes of each mini-batch")
	if err != nil {
		return nil, err
	}
	mm := &miniMicro{split: s, k: cfg.Train.MicroBatches, auto: cfg.Train.AutoMicroBatches()}
	if _, isSim := e.be.(backend.Machine); isSim {
		if s.est, err = newMemEstimator(ctx, e, cfg.Train.Optimizer, cfg.Train.Momentum, true); err != nil {
			return nil, err
		}
		s.capacity = cfg.Devices.MemoryBytes
	}
	return mm, nil
}

// checkMiniMicro checks train.micro_batches against mini-batches of
// train.batch_size output nodes.
func checkMiniMicro(cfg *config.Config, train int) error {
	if cfg.Train.AutoMicroBatches() {
		return checkAutoMicro(cfg)
	}
	k, n := cfg.Train.MicroBatches, min(cfg.Train.BatchSize, train)
	if k > n {
		what := fmt.Sprintf("train.batch_size = %d output nodes of a mini-batch", cfg.Train.BatchSize)
		if train < cfg.Train.BatchSize {
			what = fmt.Sprintf("%d training nodes", train)
		}
		return cfg.KeyError(fmt.Sprintf("train.micro_batches = %d is more than the %s; a micro-batch needs at least one output node", k, what), "train", "micro_batches")
	}
	return nil
}

// evalChunks returns the evaluation chunks to use on a device with a
// capacity: start, or with "auto" as many as the memory estimate needs.
func (mm *miniMicro) evalChunks(ctx context.Context, e stepEnv, start int) (int, error) {
	if mm == nil || !mm.auto {
		return start, nil
	}
	return fitEvalChunks(ctx, e, mm.split.est, mm.split.capacity, start)
}

// settle records what else lives on the training device once the stepper
// is set up (a feature cache), for the estimate: what is in use beyond the
// model's parameters, gradients and state. With "auto" and such bytes the
// evaluation chunks of the replicas are sized again, around them.
func (mm *miniMicro) settle(ctx context.Context, e stepEnv, m *miniBatches) error {
	if mm == nil || mm.split.est == nil {
		return nil
	}
	est := mm.split.est
	model := int64((2*est.params + est.state) * est.elt)
	est.resident = float64(max(0, e.be.Stats().InUse[e.tier]-model))
	est.gathered = m.store != nil
	if !mm.auto || est.resident == 0 || len(m.replicas) == 0 {
		return nil
	}
	chunks, err := fitEvalChunks(ctx, e, est, mm.split.capacity, len(m.replicas[0].eval))
	if err != nil {
		return err
	}
	for _, r := range m.replicas {
		r.eval = evalChunkList(e.ds.NumNodes, chunks)
	}
	return nil
}

// splitShard splits a sampled shard into its micro-batches and, when
// gather is set, extracts their input rows on the host. It runs on the
// producer goroutine.
func (mm *miniMicro) splitShard(ctx context.Context, e stepEnv, sh *shard, gather bool) error {
	var worst memEstimate
	var err error
	if mm.auto {
		sh.micro, worst, err = mm.split.auto(ctx, sh.blocks)
	} else {
		sh.micro, worst, err = mm.split.split(ctx, sh.blocks, min(mm.k, len(sh.nodes)))
	}
	if err != nil {
		var inf *InfeasibleError
		if errors.As(err, &inf) {
			inf.Sampled = true
		}
		return fmt.Errorf("splitting into micro-batches: %w", err)
	}
	mm.curK, mm.curPeak = max(mm.curK, len(sh.micro)), max(mm.curPeak, worst.Peak)
	if gather {
		for j := range sh.micro {
			sh.micro[j].x = e.gatherInput(sh.micro[j].blocks[0].Src)
		}
	}
	return nil
}

// endEpoch publishes the epoch's largest K and estimate and adds the
// micro-batches' feature-store gathers to the epoch's.
func (mm *miniMicro) endEpoch(m *miniBatches) {
	if mm == nil {
		return
	}
	mm.microK, mm.estPeak, mm.curK, mm.curPeak = mm.curK, mm.curPeak, 0, 0
	m.hits, m.rows, m.peer = m.hits+mm.hits, m.rows+mm.rows, m.peer+mm.peer
	mm.hits, mm.rows, mm.peer = 0, 0, 0
}

// train runs one shard's micro-batches on replica r, accumulating their
// gradients; each micro-batch's loss is weighed by its share of the
// batch's total output nodes. It returns the weighed loss.
func (mm *miniMicro) train(ctx context.Context, m *miniBatches, r *blockRunner, sh shard, total int, seed uint64) (float64, error) {
	if err := r.ps.ZeroGrads(); err != nil {
		return 0, err
	}
	var loss float64
	for j, mb := range sh.micro {
		var input *tensor.Tensor
		if m.store != nil {
			in, gs, err := m.store.Gather(ctx, mb.blocks[0].Src, r.e.tier)
			if err != nil {
				return 0, fmt.Errorf("micro-batch %d: gathering features: %w", j, err)
			}
			input = in
			mm.hits, mm.rows, mm.peer = mm.hits+int64(gs.Local), mm.rows+int64(gs.Rows), mm.peer+int64(gs.Peer)
		}
		bb, err := r.bind(mb.blocks, mb.x, input, false)
		if err != nil {
			return 0, fmt.Errorf("micro-batch %d: %w", j, err)
		}
		l, err := r.trainBatch(ctx, bb, mb.nodes, seed, float64(len(mb.nodes))/float64(total), true)
		bb.release(r.e)
		if err != nil {
			return 0, fmt.Errorf("micro-batch %d: %w", j, err)
		}
		loss += l
	}
	return loss, nil
}

// close releases the memory estimator.
func (mm *miniMicro) close() {
	if mm != nil && mm.split.est != nil {
		mm.split.est.Close()
	}
}

// Micro is strategy.micro, Betty's micro-batching: full-graph training
// whose training nodes a partitioner splits into micro-batches with
// full-neighbour blocks; gradients accumulate over the micro-batches and
// the optimizer steps once per epoch. train.mode = "fullgraph" with
// train.micro_batches > 1 (or "auto") selects it too.
type Micro struct{}

var _ train.Strategy = (*Micro)(nil)

// StrataModule implements registry.Module.
func (*Micro) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: "strategy.micro", New: func() registry.Module { return new(Micro) },
		Doc: "Betty: full-graph training split into micro-batches by [partition], gradients accumulated; micro_batches = \"auto\" fits devices.memory_bytes"}
}

// Uses implements train.Strategy.
func (*Micro) Uses() train.Uses { return train.Uses{Partition: true, HalfFeatures: true} }

// NewStepper implements train.Strategy.
func (*Micro) NewStepper(ctx context.Context, env *train.Env) (train.Stepper, error) {
	m, err := newMicroBatches(ctx, env.Config, envOf(env))
	if err != nil {
		return nil, err
	}
	m.partitioner, m.capacity = env.Config.Partition.ID, env.Config.Devices.MemoryBytes
	return m, nil
}

// CheckConfig implements train.ConfigChecker: what can be told without
// the data.
func (*Micro) CheckConfig(cfg *config.Config) error {
	if !cfg.Train.Micro() {
		return cfg.KeyError(fmt.Sprintf("train.mode = %q splits the training nodes into micro-batches, but train.micro_batches = %d; set it above 1 or to \"auto\"", cfg.Train.Mode, cfg.Train.MicroBatches), "train", "micro_batches")
	}
	if cfg.Train.AutoMicroBatches() {
		if err := checkAutoMicro(cfg); err != nil {
			return err
		}
	}
	return needPartitioner(cfg, "training nodes")
}

// Epoch implements train.Stepper.
func (m *microBatches) Epoch(ctx context.Context, seed uint64, update func() error) (float64, error) {
	return m.epoch(ctx, seed, update)
}

// Predict implements train.Stepper.
func (m *microBatches) Predict(ctx context.Context, pred []int32) error { return m.predict(ctx, pred) }

// Params implements train.Stepper.
func (m *microBatches) Params() *engine.Params { return m.params() }

// Release implements train.Stepper.
func (m *microBatches) Release() { m.release() }

// Announce implements train.Announcer: the K that "auto" chose.
func (m *microBatches) Announce() string {
	if !m.auto {
		return ""
	}
	return fmt.Sprintf("train.micro_batches = \"auto\": K = %d micro-batches, the largest estimated at %d bytes of devices.memory_bytes = %d",
		len(m.batches), m.estPeak, m.capacity)
}

// ReportResult implements train.ResultReporter.
func (m *microBatches) ReportResult(res *train.Result) {
	res.Partitioner, res.Redundancy = m.partitioner, m.redundancy()
	res.MicroBatches, res.MicroBatchesAuto, res.EstimatedPeakBytes = len(m.batches), m.auto, m.estPeak
}

func init() { registry.Register(new(Micro)) }

// ExampleConfig implements train.Exampler: two micro-batches of a range
// partition.
func (*Micro) ExampleConfig() []string {
	return []string{"train.micro_batches=2", `partition.name="range"`}
}
