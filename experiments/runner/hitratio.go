package runner

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"strata/core/config"
	"strata/core/graph"
	"strata/core/sampling"
	"strata/core/store"
	"strata/plugins/cache"
	"strata/plugins/sampler"
)

// HitRatio is the result of a hitratio run (tiering Fig. 7 and its
// traffic table, for one cache policy and capacity).
type HitRatio struct {
	Dataset    string `json:"dataset"`
	Policy     string `json:"policy"`
	Sampler    string `json:"sampler"`
	Nodes      int    `json:"nodes" doc:"nodes of the graph"`
	Edges      int64  `json:"edges" doc:"stored edges of the sampled graph (reverse edges included with data.symmetrize)"`
	TrainNodes int    `json:"train_nodes" doc:"seed nodes of the epoch: the training split (or [hitratio] synth_train of the nodes)"`
	Features   int    `json:"features" doc:"feature width (data.synth_features for a dataset without features)"`
	Batches    int    `json:"batches" doc:"mini-batches of the epoch (train.batch_size seeds each)"`
	Reads      int64  `json:"reads" doc:"feature-row reads of the epoch: the input nodes of every mini-batch, each occurrence counted"`
	CachedRows int    `json:"cached_rows" doc:"rows the cache holds: cache.capacity of the nodes"`
	// HitRatio is the share of the reads that fall on cached rows.
	HitRatio float64 `json:"hit_ratio" doc:"share of the epoch's feature reads served by the cached rows"`
	// OracleHitRatio is the same for the cached_rows nodes read most in
	// this very epoch: the most any static cache of that size serves.
	OracleHitRatio float64 `json:"oracle_hit_ratio" doc:"the same for the cached_rows nodes read most in this very epoch (the best any static cache of that size can do)"`
	// FeatureBytes are the host-to-device feature bytes of the epoch: the
	// missed rows, gathered batch by batch through the tiered store to one
	// simulated pcie-only device (nil without features, and unless the
	// experiment collects feature_bytes or index_bytes).
	FeatureBytes *int64  `json:"feature_bytes,omitempty" doc:"host-to-device feature bytes of the epoch through the tiered store, one simulated device (the missed rows × features × 4)"`
	IndexBytes   *int64  `json:"index_bytes,omitempty" doc:"int32 row indices uploaded to the device with them"`
	SampleTimeS  float64 `json:"sample_time_s" doc:"sampling time of the epoch, seconds (0 when reused from an earlier run of the same invocation)"`
	RankTimeS    float64 `json:"rank_time_s" doc:"time to rank the nodes, seconds (0 when reused)"`
	GatherTimeS  float64 `json:"gather_time_s" doc:"time to gather the epoch through the store, seconds"`
	Seed         int64   `json:"seed"`
	ConfigSHA256 string  `json:"config_sha256"`
	Version      string  `json:"version"`
}

// memo keeps what consecutive runs of one invocation share: the last
// dataset opened, its sampled epoch and its full rankings. Everything in
// it is a deterministic function of its key.
type memo struct {
	mu       sync.Mutex
	dsKey    string
	ds       *graph.Dataset
	epochs   map[string]*cache.Reads
	rankings map[string][]int32

	// hashes are the dataset files hashed for provenance.json, by path.
	hashMu sync.Mutex
	hashes map[string]FileChecksum
}

// HitRatioOptions are the options of kind hitratio, the [hitratio] table
// of the experiment file.
type HitRatioOptions struct {
	// SynthTrain, for a dataset without a training split, draws this
	// fraction of the nodes (seeded by train.seed) as the epoch's seeds.
	SynthTrain float64
}

func runHitRatio(ctx context.Context, env *runEnv, cfg *config.Config) (any, error) {
	smp, ok := cfg.Sampler.Module.(sampler.Sampler)
	if !ok {
		return nil, fmt.Errorf("sampler.name = %q is not a sampler", cfg.Sampler.Name)
	}
	return config.Provisioned(ctx, cfg, func() (any, error) { return hitRatio(ctx, env, cfg, smp) })
}

// hitRatio is runHitRatio with the config's modules provisioned.
func hitRatio(ctx context.Context, env *runEnv, cfg *config.Config, smp sampler.Sampler) (any, error) {
	m := env.memo
	m.mu.Lock()
	defer m.mu.Unlock()

	// The dataset, as training prepares it.
	spec := cfg.DatasetSpec()
	dsKey := fmt.Sprintf("%s|sym=%v|reorder=%s|synth=%d", spec, cfg.Data.Symmetrize, cfg.Data.Reorder, cfg.Data.SynthFeatures)
	if m.dsKey != dsKey {
		m.ds, m.dsKey, m.epochs, m.rankings = nil, "", map[string]*cache.Reads{}, map[string][]int32{}
		debug.FreeOSMemory()
		d, err := graph.OpenContext(ctx, spec)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, cfg.KeyError(err.Error(), "data", "dataset")
		}
		if cfg.Data.Reorder == "degree" {
			graph.ReorderByDegree(d)
		}
		if cfg.Data.Symmetrize {
			d.Graph = graph.Symmetrize(d.Graph.Unweighted())
		}
		if d.FeatDim == 0 && cfg.Data.SynthFeatures > 0 {
			// Only their size matters: they set the bytes moved.
			d.FeatDim = cfg.Data.SynthFeatures
			d.Features = make([]float32, d.NumNodes*d.FeatDim)
		}
		m.ds, m.dsKey = d, dsKey
	}
	d := *m.ds // the runs' training nodes may differ
	trainKey := "split"
	if len(d.Train) == 0 {
		frac := env.exp.HitRatio.SynthTrain
		if frac <= 0 {
			return nil, fmt.Errorf("dataset %s has no training split: set [hitratio] synth_train = FRACTION in the experiment file to draw seed nodes", d.Name)
		}
		d.Train = graph.RandomNodes(d.NumNodes, frac, uint64(cfg.Train.Seed))
		trainKey = fmt.Sprintf("synth-%v-%d", frac, cfg.Train.Seed)
	}
	res := &HitRatio{Dataset: d.Name, Policy: cfg.Cache.ID, Sampler: cfg.Sampler.ID, Nodes: d.NumNodes, Edges: d.Graph.NNZ(),
		TrainNodes: len(d.Train), Features: d.FeatDim, Seed: cfg.Train.Seed, Version: env.version}
	var err error
	if res.ConfigSHA256, err = cfg.SHA256(); err != nil {
		return nil, err
	}

	// One sampling epoch over the training nodes.
	smpOpts := config.TOMLValue(cfg.Sampler.Options)
	batch, ok := cfg.Strategy.Module.(sampling.Batcher)
	if !ok {
		return nil, cfg.KeyError(fmt.Sprintf("train.mode = %q samples no batches, and kind hitratio samples one epoch of them; set train.mode to a strategy with batch_size (strata config explain)", cfg.Train.Mode), "train", "mode")
	}
	epochKey := fmt.Sprintf("%s|%s|%s|batch=%d|seed=%d", trainKey, cfg.Sampler.ID, smpOpts, batch.Batch(), cfg.Train.Seed)
	ep := m.epochs[epochKey]
	if ep == nil {
		t0 := time.Now()
		if ep, err = cache.MeasureReads(ctx, d.Graph, d.Train, smp, batch.Batch(), 1, uint64(cfg.Train.Seed)); err != nil {
			return nil, err
		}
		m.epochs[epochKey] = ep
		res.SampleTimeS = time.Since(t0).Seconds()
	}
	res.Batches, res.Reads = len(ep.Batches), ep.Total

	// The cache: its rows, and the reads they serve.
	capa := cache.CapacityOf(cfg.Cache.Module)
	k := 0
	if capa != nil {
		if k, err = capa.Rows(&d); err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Cache.ID, err)
		}
	}
	res.CachedRows = k
	rowBytes := int64(d.FeatDim) * 4
	var hits int64
	switch pol := cfg.Cache.Module.(type) {
	case cache.Policy:
		rankKey := trainKey + "|" + cfg.Cache.ID + "|" + config.TOMLValue(withoutCapacity(cfg.Cache.Options))
		rank, ok := m.rankings[rankKey]
		if !ok {
			t0 := time.Now()
			full, err := cache.FullRanking(ctx, pol, &d)
			if err != nil {
				return nil, err
			}
			rank = full
			m.rankings[rankKey] = rank
			res.RankTimeS = time.Since(t0).Seconds()
		}
		rank = rank[:min(k, len(rank))]
		hits = ep.Served(rank)
		if d.FeatDim > 0 && env.exp.measuresTraffic() {
			t0 := time.Now()
			tr, err := store.MeasureEpoch(ctx, d.Features, d.FeatDim, rank, ep.Batches)
			if err != nil {
				return nil, err
			}
			feat, idx, local := tr.FeatureBytes, tr.IndexBytes, tr.Local
			if local != hits || feat != (ep.Total-hits)*rowBytes {
				return nil, fmt.Errorf("the store served %d of %d reads from the device and moved %d feature bytes; the ranking says %d hits", local, ep.Total, feat, hits)
			}
			res.FeatureBytes, res.IndexBytes = &feat, &idx
			res.GatherTimeS = time.Since(t0).Seconds()
		}
	case cache.Dynamic:
		if hits, err = cache.Replay(pol, &d, ep.Batches); err != nil {
			return nil, err
		}
		if d.FeatDim > 0 && env.exp.measuresTraffic() {
			feat := (ep.Total - hits) * rowBytes
			res.FeatureBytes = &feat
		}
	default:
		return nil, fmt.Errorf("cache.name = %q is neither a static policy nor a dynamic cache", cfg.Cache.Name)
	}
	res.HitRatio, res.OracleHitRatio = ep.Ratio(hits), ep.Ratio(ep.Oracle(k))
	return res, nil
}

// measuresTraffic reports whether a hitratio experiment collects the
// feature traffic: gathering every batch through the store moves all the
// features an epoch reads, which costs more than everything else.
func (e *Experiment) measuresTraffic() bool {
	return slices.ContainsFunc(e.Metrics, func(m string) bool { return m == "feature_bytes" || m == "index_bytes" }) ||
		slices.ContainsFunc(e.Derived, func(d Derived) bool { return d.Metric == "feature_bytes" || d.Metric == "index_bytes" })
}

func withoutCapacity(opts map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range opts {
		if k != "capacity" && k != "capacity_bytes" {
			out[k] = v
		}
	}
	return out
}
