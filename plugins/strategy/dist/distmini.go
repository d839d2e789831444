package dist

import (
	"context"
	"fmt"
	"math"
	"time"

	"strata/core/comm"
	"strata/core/config"
	"strata/core/registry"
	"strata/core/sampling"
	"strata/core/train"
	"strata/plugins/strategy/internal/options"
	"strata/plugins/strategy/internal/steprun"
)

// DistMini is strategy.distmini: distributed mini-batch training over the
// ranks of an MPI job (DistDGL's design, see distRank). Every rank shuffles
// the training nodes into the same global batches of train.batch_size;
// each rank trains the seeds of a batch that it owns, sampling them with
// [sampler] (uniform or full) through their owners, and the gradients are
// all-reduced before every step. With the same seed the ranks' batches
// together are strategy.minibatch's, so N ranks reach its parameters (to
// float32 rounding, without dropout). Link prediction (train.task =
// "link") splits strategy.minibatch's batches of edges the same way, by
// the owner of each positive's source (distLink).
type DistMini struct {
	options.Size
}

var (
	_ train.Strategy      = (*DistMini)(nil)
	_ train.ConfigChecker = (*DistMini)(nil)
	_ train.Exampler      = (*DistMini)(nil)
	_ comm.Distributed    = (*DistMini)(nil)

	_ train.LinkScorer      = (*distMini)(nil)
	_ train.OutputPredictor = (*distMini)(nil)
)

// StrataModule implements registry.Module.
func (*DistMini) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: "strategy.distmini", New: func() registry.Module { return &DistMini{options.DefaultSize()} },
		Doc: "distributed mini-batches over MPI ranks (DistDGL): a METIS partition per rank, remote neighbours and features by all-to-all-v, all-reduced gradients (docs/distributed.md)"}
}

// Distributed implements comm.Distributed.
func (*DistMini) Distributed() {}

// Uses implements train.Strategy.
func (*DistMini) Uses() train.Uses {
	return train.Uses{Sampler: true, Blocks: true, RankPartition: true, Float64: true, Checkpoints: true, Link: true}
}

// CheckConfig implements train.ConfigChecker.
func (*DistMini) CheckConfig(cfg *config.Config) error {
	_, err := rowSampler(cfg)
	return err
}

// rowSampler returns [sampler] as a sampling.RowSampler (uniform, or
// full: every neighbour), one fanout per model layer.
func rowSampler(cfg *config.Config) (sampling.RowSampler, error) {
	s, ok := cfg.Sampler.Module.(sampling.RowSampler)
	if !ok {
		return nil, cfg.KeyError(fmt.Sprintf("train.mode = \"distmini\" samples on the nodes' owners, which needs a sampler that draws every node's neighbours on its own "+
			"(the capability sampling.RowSampler: RowFanouts and SampleRows), as sampler.name = \"uniform\" and \"full\" do; sampler.name = %q does not", cfg.Sampler.Name), "sampler", "name")
	}
	if fanouts, _ := s.RowFanouts(); len(fanouts) != cfg.Model.Layers {
		return nil, cfg.KeyError(fmt.Sprintf("%s samples %d layers but model.layers = %d; give one fanout per layer", cfg.Sampler.ID, len(fanouts), cfg.Model.Layers), "sampler")
	}
	return s, nil
}

// ExampleConfig implements train.Exampler.
func (*DistMini) ExampleConfig() []string {
	return []string{`sampler.name="uniform"`, "sampler.fanouts=[5,5]", "train.batch_size=64"}
}

// NewStepper implements train.Strategy.
func (*DistMini) NewStepper(ctx context.Context, env *train.Env) (train.Stepper, error) {
	rs, err := rowSampler(env.Config)
	if err != nil {
		return nil, err
	}
	e := steprun.EnvOf(env)
	d, err := newDistRank(ctx, env.Config, e, rs)
	if err != nil {
		return nil, err
	}
	m := &distMini{distRank: d, batch: batchSize(env.Config)}
	if e.Link != nil {
		if m.link, err = newDistLink(d); err != nil {
			d.Release()
			return nil, err
		}
	}
	if layers, err := splitForRanks(env.Config, e.Model); err == nil {
		if m.eval, err = newLayerRank(ctx, d, layers); err != nil {
			m.Release()
			return nil, err
		}
	}
	return m, nil
}

type distMini struct {
	*distRank
	batch int
	// eval predicts layer by layer, each layer's 1-hop halo rows fetched
	// (nil: a model that cannot be split into layers predicts over
	// full-neighbourhood blocks, every input row of the L-hop
	// neighbourhood fetched at once).
	eval *layerRank
	// link trains link prediction (train.task = "link"); nil for node
	// tasks.
	link *distLink
}

// Release implements train.Stepper.
func (m *distMini) Release() {
	if m.link != nil {
		m.link.dec.Release()
	}
	m.distRank.Release()
}

// Predict implements train.Stepper.
func (m *distMini) Predict(ctx context.Context, pred []int32) error {
	if m.eval != nil {
		return m.eval.Predict(ctx, pred)
	}
	return m.predictAll(ctx, pred)
}

var _ train.ResultReporter = (*distMini)(nil)

// Epoch implements train.Stepper: the batches and sampling streams of
// strategy.minibatch on one device.
func (m *distMini) Epoch(ctx context.Context, seed uint64, update func() error) (float64, error) {
	if m.link != nil {
		return m.linkEpoch(ctx, seed, update)
	}
	order := steprun.Shuffled(m.e.DS.Train, seed)
	m.predictFeatures(order) // outside the epoch's time
	t0 := time.Now()
	m.startEpoch()
	me := int32(m.c.Rank())
	loss, n := 0.0, 0
	for lo := 0; lo < len(order); lo += m.batch {
		batch := order[lo:min(lo+m.batch, len(order))]
		var mine []int32
		for _, v := range batch {
			if m.owner[v] == me {
				mine = append(mine, v)
			}
		}
		share := float64(len(mine)) / float64(len(batch))
		l, err := m.step(ctx, mine, seed*0x9e3779b97f4a7c15+uint64(n), nil, func(bb *steprun.Bound) (float64, error) {
			return m.r.TrainBatch(ctx, bb, mine, steprun.BatchSeed(seed, n), share, false)
		}, update)
		if err != nil {
			return 0, fmt.Errorf("batch %d on rank %d: %w", n, me, err)
		}
		loss += l
		n++
	}
	m.endEpoch(t0)
	return loss / float64(max(n, 1)), nil
}

// predictFeatures sets the feature bytes the partition and the fanouts
// predict this rank sends in the epoch of the batches of order
// (expectedSampledRows; float32 rows).
func (m *distMini) predictFeatures(order []int32) {
	if m.c.Size() == 1 {
		return
	}
	rows := 0.0
	for lo := 0; lo < len(order); lo += m.batch {
		seeds := make([][]int32, m.c.Size())
		for _, v := range order[lo:min(lo+m.batch, len(order))] {
			seeds[m.owner[v]] = append(seeds[m.owner[v]], v)
		}
		rows += expectedSampledRows(m.e.Adjs.Adj, m.owner, m.c.Rank(), seeds, m.fanouts, m.replace)
	}
	m.predicted = map[string]int64{"features": int64(math.Round(rows * float64(m.e.Dim) * 4))}
}

func init() { registry.Register(new(DistMini)) }

// batchSize is distmini.batch_size (the default for a Config not made by
// config.Parse).
func batchSize(cfg *config.Config) int {
	if m, ok := cfg.Strategy.Module.(*DistMini); ok {
		return m.BatchSize
	}
	return options.DefaultSize().BatchSize
}
