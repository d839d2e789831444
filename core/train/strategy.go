package train

import (
	"context"
	"fmt"
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
	Sampler bool // [sampler]: it samples mini-batches
	Cache   bool // [cache] (and [placement]): it reads features through the tiered store
	Devices bool // several devices ([devices] count > 1): it trains data-parallel
	// Partition: [partition] splits its work, as its options configure it
	// (Uses of a decoded strategy may depend on its options).
	Partition bool
	// RankPartition: [partition] splits the graph among the ranks of a
	// distributed run (it defaults to METIS).
	RankPartition bool
	// HalfFeatures: it reads feature rows stored in 16 bits
	// (data.feature_dtype = "float16" or "bfloat16", Env.Features16).
	HalfFeatures bool
	// Float64: it trains in float64 (train.dtype = "float64").
	Float64 bool
	// Checkpoints: a run it trains can be checkpointed
	// (train.checkpoint_every) and resumed (strata train --resume), and
	// the resumed run continues exactly as the uninterrupted one.
	Checkpoints bool
	// Blocks: it binds the model to one sampled block per layer, so every
	// layer must read the graph one hop deep (ir.LayerNeeds.Blocks); a
	// model that cannot is refused at model.name before training.
	Blocks bool
	// EdgeWeights: every graph it binds carries the dataset's edge weights
	// (graph.CSR.Values) into the layers that read them; a dataset with
	// weights is refused at train.mode otherwise.
	EdgeWeights bool
	// Link: it trains link prediction (train.task = "link", Env.Link):
	// its stepper trains on the task's pairs and is a LinkScorer.
	Link bool
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
	// FeatureNorm is the normalisation Features went through ("row" or
	// "none": data.feature_norm with "auto" resolved); "" where the
	// strategy loads and normalises its own rows.
	FeatureNorm string
	// Adjs are the graph's adjacencies. A strategy that does not read them
	// after NewStepper (it built structures of its own from them) sets
	// Adjs to nil, so that their memory can be reclaimed.
	Adjs     *Adjacencies
	Seed     uint64
	Host     modhost.Host
	Progress io.Writer // where a long step may report its progress (nil: nowhere)
	// Link is the link-prediction task of train.task = "link" (nil
	// otherwise): the model's output is then node embeddings, which the
	// task's decoder scores in pairs (see LinkScorer).
	Link *LinkTask
	lr   *lrClock // the run's scheduled learning rate (NewOptimizer)
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

// StrategyFor returns the strategy train.mode names, decoded from its
// section (config.Config.Strategy), or the one it hands the config to
// (see Resolver).
func StrategyFor(cfg *config.Config) (Strategy, error) {
	var s Strategy
	if m, ok := cfg.Strategy.Module.(Strategy); ok && cfg.Strategy.ID == "strategy."+cfg.Train.Mode {
		s = m
	} else {
		// A Config not made by config.Parse: the strategy's defaults.
		fresh, err := registry.New[Strategy]("strategy." + cfg.Train.Mode)
		if err != nil {
			return nil, cfg.KeyError("train.mode: "+err.Error(), "train", "mode")
		}
		s = fresh
	}
	r, ok := s.(Resolver)
	if !ok {
		return s, nil
	}
	id := r.Resolve(cfg)
	if id == "" {
		return s, nil
	}
	other, err := registry.New[Strategy](id)
	if err != nil {
		return nil, cfg.KeyError(fmt.Sprintf("train.mode = %q hands this config to %s: %v", cfg.Train.Mode, id, err), "train", "mode")
	}
	return other, nil
}

// Resolver is implemented by a strategy that hands some configs to
// another strategy: Resolve returns that strategy's registry ID, or ""
// to run the config itself (strategy.fullgraph hands a run split into
// micro-batches to Betty's strategy).
type Resolver interface {
	Resolve(cfg *config.Config) string
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

// FigureDeclarer is implemented by a strategy that reports figures of its
// own (Result.SetFigures under its registry name): Figures returns a zero
// value of their type, a struct whose json and doc tags name and document
// each figure. The experiment runner learns a strategy's metrics from it.
type FigureDeclarer interface {
	Figures() any
}

// Summarizer is implemented by a strategy's figures that add to the text
// result line (output.json = false), such as each rank's epoch time.
type Summarizer interface {
	Summary() string
}

// CheckRule classes some of a strategy's figures for `strata experiment
// --check`: the figures whose key path below the strategy's name matches
// Pattern (path.Match with "." as the separator: "ranks.*.comm_s",
// "*_pred") are compared with the committed results when Why is "", and
// not compared, for the reason Why, otherwise. The first matching rule
// decides; a figure that no rule matches is compared.
type CheckRule struct{ Pattern, Why string }

// CheckRuler is implemented by figures not all of which repeat from run
// to run (wall-clock times, this machine's threads).
type CheckRuler interface {
	CheckRules() []CheckRule
}

// The reasons a figure is not compared by `strata experiment --check`.
const (
	WhyWallClock = "wall-clock time: depends on the machine and its load"
	WhyMachine   = "depends on the machine's cores or devices"
)

// CostModelUser is implemented by a strategy that runs cost models of its
// own (a memory estimate, a communication or performance model):
// OwnCostModels returns their registry IDs. They estimate something other
// than a kernel's time, so devices.cost_model does not take them.
type CostModelUser interface {
	OwnCostModels() []string
}
