package train

import (
	"context"
	"io"

	"strata/core/backend"
	"strata/core/config"
	"strata/core/engine"
	"strata/core/graph"
	"strata/core/ir"
	"strata/core/modhost"
	"strata/core/registry"
	"strata/core/tensor"
)

// Strategy is a training strategy: a module of the registry namespace
// "strategy" (strategy.fullgraph, strategy.minibatch, strategy.micro, ...)
// that train.mode picks by name. The loop owns the optimizer, evaluation,
// early stopping, metrics and the result; a strategy decides how one epoch
// computes its gradients and how the model predicts every node.
type Strategy interface {
	registry.Module
	// Uses declares the config sections the strategy reads; a section it
	// does not read is an error, not a silent no-op.
	Uses() Uses
	// NewStepper builds the strategy's stepper for one run.
	NewStepper(ctx context.Context, env *Env) (Stepper, error)
}

// Uses lists what a strategy reads beyond [train] and [model].
type Uses struct {
	Sampler   bool // [sampler]: it samples mini-batches
	Cache     bool // [cache] (and [placement]): it reads features through the tiered store
	Overlap   bool // train.overlap: it pipelines transfers
	Devices   bool // several devices ([devices] count > 1): it trains data-parallel
	Partition bool // [partition]: it splits work with a partitioner (with train.micro_batches)
	// RankPartition: [partition] splits the graph among the ranks of a
	// distributed run (it defaults to METIS).
	RankPartition bool
	Hybrid        bool // [hybrid]: it splits work between CPU trainers and devices
	Chunked       bool // [chunked]: HongTu's chunked full-graph training
	// HalfFeatures: it reads feature rows stored in 16 bits
	// (data.feature_dtype = "float16" or "bfloat16", Env.Features16).
	HalfFeatures bool
}

// Env is what a stepper is built from: the run's backend, the linked
// model, the dataset with its prepared features and adjacencies, and the
// module host for cost models.
type Env struct {
	Config  *config.Config
	Backend backend.Backend
	DType   tensor.DType
	Tier    tensor.Tier // where parameters and activations live
	Model   *ir.Graph
	Dataset *graph.Dataset
	// Features are NumNodes × Dim, prepared (normalised or synthetic); nil
	// on a rank of a distributed strategy (RankPartition, several ranks),
	// which loads the rows of its own nodes (LoadFeatureRows).
	Features []float32
	// FeatureDType is the storage of the feature rows: tensor.Float32
	// (Features), or tensor.Float16 / tensor.BFloat16 (data.feature_dtype),
	// whose bits Features16 then holds instead of Features (nil).
	FeatureDType tensor.DType
	Features16   []uint16
	Dim          int
	// Adjs are the graph's adjacencies. A strategy that does not read them
	// after NewStepper (it built structures of its own from them) sets
	// Adjs to nil, so that their memory can be reclaimed.
	Adjs     *Adjacencies
	Seed     uint64
	Host     modhost.Host
	Progress io.Writer // where a long step may report its progress (nil: nowhere)
}

// Stepper computes the gradients of every optimizer step of an epoch and
// the predictions of every node.
type Stepper interface {
	// Epoch runs one epoch: for every batch it leaves the batch's
	// gradients in Params() and calls update (the optimizer step). It
	// returns the epoch's loss (the mean over its batches).
	Epoch(ctx context.Context, seed uint64, update func() error) (float64, error)
	// Predict writes the predicted class of every node (dropout off).
	Predict(ctx context.Context, pred []int32) error
	// Params are the parameters the optimizer updates (the first
	// replica's, when there are several).
	Params() *engine.Params
	// Release frees everything the stepper holds on the backend.
	Release()
}

// The optional interfaces of a Stepper.
type (
	// Announcer has a line to print before training starts (a choice it
	// made, such as the number of micro-batches).
	Announcer interface{ Announce() string }
	// EpochReporter adds its own figures to each epoch's record.
	EpochReporter interface{ ReportEpoch(rec *EpochRecord) }
	// ResultReporter adds its own figures to the result.
	ResultReporter interface{ ReportResult(res *Result) }
	// Columner adds columns of its own to output.csv: their names, once,
	// before the first epoch; ReportEpoch fills EpochRecord.Extra by name.
	Columner interface{ Columns() []string }
	// Pipelined predicts its epoch's time itself, because its stages
	// overlap (otherwise the loop adds the predicted stage times up).
	Pipelined interface{ PredictedS() float64 }
)

// ConfigChecker is implemented by strategies that can reject a config
// before any data is loaded (a missing sampler, a micro-batch count
// without a partitioner): validate and the experiment runner's dry run
// then catch what training would.
type ConfigChecker interface {
	CheckConfig(cfg *config.Config) error
}

// BackendModule is a compute backend: a module of the registry namespace
// "backend" (backend.cpu, backend.sim, backend.cuda) that train.backend
// picks by name.
type BackendModule interface {
	registry.Module
	// CheckConfig rejects settings the backend would ignore (such as
	// [devices] on a backend without simulated devices).
	CheckConfig(cfg *config.Config) error
	// NewBackend opens the backend for a run; threads is the resolved
	// train.threads.
	NewBackend(ctx context.Context, cfg *config.Config, threads int) (backend.Backend, error)
}

// StrategyFor returns the strategy train.mode names. A full-graph run
// split into micro-batches (train.micro_batches > 1 or "auto") is Betty's
// strategy.micro.
func StrategyFor(cfg *config.Config) (Strategy, error) {
	name := cfg.Train.Mode
	if name == "fullgraph" && cfg.Train.Micro() {
		name = "micro"
	}
	s, err := registry.New[Strategy]("strategy." + name)
	if err != nil {
		return nil, cfg.KeyError("train.mode: "+err.Error(), "train", "mode")
	}
	return s, nil
}

// BackendFor returns the backend module train.backend names.
func BackendFor(cfg *config.Config) (BackendModule, error) {
	b, err := registry.New[BackendModule]("backend." + cfg.Train.Backend)
	if err != nil {
		return nil, cfg.KeyError("train.backend: "+err.Error(), "train", "backend")
	}
	return b, nil
}

// Exampler is implemented by strategies that need more than train.mode
// to run (a sampler, micro-batches): ExampleConfig returns the --set
// assignments of a minimal run on a small graph, for `strata config
// explain` readers and the strategy conformance suite (strategytest).
type Exampler interface {
	ExampleConfig() []string
}
