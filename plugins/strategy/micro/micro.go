// Package micro is strategy.micro, Betty: the training nodes split into
// micro-batches (a partitioner, full-neighbour blocks), gradients
// accumulated, one optimizer step per epoch.
package micro

import (
	"context"
	"errors"
	"fmt"

	"strata/core/config"
	"strata/core/engine"
	"strata/core/registry"
	"strata/core/sampling"
	"strata/core/train"
	"strata/plugins/strategy/internal/memest"
	"strata/plugins/strategy/internal/microsplit"
	"strata/plugins/strategy/internal/options"
	"strata/plugins/strategy/internal/steprun"
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
// micro-batch fits the device by Betty's memory estimate
// (costmodel.betty-memory): the simulated device's devices.memory_bytes,
// or a GPU's memory pool (backend.MemoryCapacity, microsplit.NewEstimator);
// evaluation chunks are sized the same way.
type microBatches struct {
	*steprun.Runner
	batches []microsplit.MicroBatch // the micro-batches, with their blocks
	total   int                     // training nodes
	inputs  []int                   // input rows (block 0 sources) per micro-batch, last step
	// wholeInputs is the input rows of the whole batch (all training
	// nodes at once), the denominator of the redundancy.
	wholeInputs int
	auto        bool
	estPeak     int64 // the largest micro-batch's estimated peak (0: not estimated)
	partitioner string
	capacity    int64 // what "auto" fits (devices.memory_bytes, or the device's pool), for Announce
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

func newMicroBatches(ctx context.Context, cfg *config.Config, e steprun.Env) (*microBatches, error) {
	opts := options.SplitOf(cfg)
	k, auto := opts.MicroBatches, opts.AutoK()
	train := e.DS.Train
	if !auto && k > len(train) {
		return nil, cfg.KeyError(fmt.Sprintf("%s = %d is more than the %d training nodes", options.SplitKeyName(cfg), k, len(train)), options.SplitKey(cfg)...)
	}
	if auto {
		if err := microsplit.CheckAutoMicro(cfg); err != nil {
			return nil, err
		}
	}
	s, err := microsplit.NewSplitter(ctx, cfg, "training nodes")
	if err != nil {
		return nil, err
	}
	full := sampling.Full{Hops: len(steprun.GraphsPerLayer(e.Model))}
	whole, err := full.Sample(ctx, e.Adjs.Adj, train, 0)
	if err != nil {
		return nil, err
	}
	// On a simulated device every micro-batch's peak is estimated (and
	// reported); "auto" searches K with it, on a device that reports its
	// memory too.
	if s.Est, s.Capacity, err = microsplit.NewEstimator(ctx, cfg, e, auto); err != nil {
		return nil, err
	}
	if s.Est != nil {
		defer s.Est.Close()
	}
	var mbs []microsplit.MicroBatch
	var worst memest.Estimate
	if auto {
		mbs, worst, err = s.Auto(ctx, whole)
	} else {
		mbs, worst, err = s.Split(ctx, whole, k)
	}
	var inf *microsplit.InfeasibleError
	if errors.As(err, &inf) {
		// The run also evaluates: the capacity it needs is the larger.
		if inf.EvalCapacity, err = microsplit.EvalMinCapacity(ctx, e, s.Est); err != nil {
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
	if s.Capacity > 0 {
		evalChunks = 2 * len(mbs)
		if auto && !options.InferenceOf(cfg).Layerwise() { // layer-wise needs less than L-hop inference
			if evalChunks, err = microsplit.FitEvalChunks(ctx, e, s.Est, s.Capacity, evalChunks); err != nil {
				return nil, err
			}
		}
	}
	r, err := steprun.NewRunner(e, evalChunks)
	if err == nil {
		err = steprun.UseInference(cfg, r)
	}
	if err != nil {
		return nil, err
	}
	return &microBatches{Runner: r, batches: mbs, total: len(train), wholeInputs: len(whole[0].Src), auto: auto, estPeak: worst.Peak, capacity: s.Capacity}, nil
}

// epoch is one optimizer step over all micro-batches.
func (m *microBatches) epoch(ctx context.Context, seed uint64, update func() error) (float64, error) {
	if err := m.PS.ZeroGrads(); err != nil {
		return 0, err
	}
	m.inputs = m.inputs[:0]
	var loss float64
	for i, mb := range m.batches {
		bb, err := m.Bind(mb.Blocks, steprun.FeatRows{}, nil, false)
		if err != nil {
			return 0, fmt.Errorf("micro-batch %d: %w", i, err)
		}
		l, err := m.TrainBatch(ctx, bb, mb.Nodes, seed, float64(len(mb.Nodes))/float64(m.total), true)
		m.inputs = append(m.inputs, len(mb.Blocks[0].Src))
		bb.Release(m.Env)
		if err != nil {
			return 0, fmt.Errorf("micro-batch %d: %w", i, err)
		}
		loss += l
	}
	return loss, update()
}

// Micro is strategy.micro, Betty's micro-batching: full-graph training
// whose training nodes a partitioner splits into micro-batches with
// full-neighbour blocks; gradients accumulate over the micro-batches and
// the optimizer steps once per epoch. train.mode = "fullgraph" with
// train.micro_batches > 1 (or "auto") selects it too. With
// micro_batches = 1 it runs Betty's K = 1: one batch of the training
// nodes' whole receptive field (full-graph training instead computes
// every node's output).
type Micro struct {
	options.Split
	options.Inference
}

var (
	_ train.Strategy       = (*Micro)(nil)
	_ train.FigureDeclarer = (*Micro)(nil)
)

// StrataModule implements registry.Module.
func (*Micro) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: "strategy.micro", New: func() registry.Module { return &Micro{Split: options.DefaultSplit()} },
		Doc: "Betty: full-graph training split into micro-batches by [partition], gradients accumulated; micro_batches = \"auto\" fits devices.memory_bytes or the GPU's free memory"}
}

// Uses implements train.Strategy.
func (*Micro) Uses() train.Uses {
	return train.Uses{Partition: true, Blocks: true, HalfFeatures: true, Float64: true, Checkpoints: true, EdgeWeights: true, Link: true}
}

// NewStepper implements train.Strategy.
func (*Micro) NewStepper(ctx context.Context, env *train.Env) (train.Stepper, error) {
	if env.Link != nil {
		l, err := newMicroLink(ctx, env.Config, steprun.EnvOf(env))
		if err != nil {
			return nil, err
		}
		l.partitioner = env.Config.Partition.ID
		return l, nil
	}
	m, err := newMicroBatches(ctx, env.Config, steprun.EnvOf(env))
	if err != nil {
		return nil, err
	}
	m.partitioner = env.Config.Partition.ID
	return m, nil
}

// CheckConfig implements train.ConfigChecker: what can be told without
// the data.
func (*Micro) CheckConfig(cfg *config.Config) error {
	opts := options.SplitOf(cfg)
	if !opts.Micro() && opts.MicroBatches != 1 {
		return cfg.KeyError(fmt.Sprintf("train.mode = %q splits the training nodes into micro-batches, but %s = %d; set it to 1 or more, or to \"auto\"", cfg.Train.Mode, options.SplitKeyName(cfg), opts.MicroBatches), options.SplitKey(cfg)...)
	}
	if opts.AutoK() {
		if err := microsplit.CheckAutoMicro(cfg); err != nil {
			return err
		}
	}
	if err := microsplit.CheckLinkAuto(cfg); err != nil {
		return err
	}
	if err := options.CheckInference(cfg); err != nil {
		return err
	}
	return microsplit.NeedPartitioner(cfg, "training nodes")
}

// Epoch implements train.Stepper.
func (m *microBatches) Epoch(ctx context.Context, seed uint64, update func() error) (float64, error) {
	return m.epoch(ctx, seed, update)
}

// Predict implements train.Stepper.
func (m *microBatches) Predict(ctx context.Context, pred []int32) error {
	return m.Runner.Predict(ctx, pred)
}

// Params implements train.Stepper.
func (m *microBatches) Params() *engine.Params { return m.Runner.Params() }

// Release implements train.Stepper.
func (m *microBatches) Release() { m.Runner.Release() }

// Announce implements train.Announcer: the K that "auto" chose.
func (m *microBatches) Announce() string {
	if !m.auto {
		return ""
	}
	return fmt.Sprintf("micro_batches = \"auto\": K = %d micro-batches, the largest estimated at %d bytes of the device's %d",
		len(m.batches), m.estPeak, m.capacity)
}

// ReportResult implements train.ResultReporter.
func (m *microBatches) ReportResult(res *train.Result) {
	res.Partitioner, res.EstimatedPeakBytes = m.partitioner, m.estPeak
	res.SetFigures("micro", &options.SplitFigures{MicroBatches: len(m.batches), Auto: m.auto, Redundancy: m.redundancy()})
}

// Figures implements train.FigureDeclarer: the micro-batches, "auto" and
// Betty's redundancy, under "micro".
func (*Micro) Figures() any { return &options.SplitFigures{} }

func init() { registry.Register(new(Micro)) }

// ExampleConfig implements train.Exampler: two micro-batches of a range
// partition.
func (*Micro) ExampleConfig() []string {
	return []string{"micro.micro_batches=2", `partition.name="range"`}
}

// OwnCostModels implements train.CostModelUser: Betty's memory estimate
// (train.micro_batches = "auto").
func (*Micro) OwnCostModels() []string { return []string{memest.CostModel} }
