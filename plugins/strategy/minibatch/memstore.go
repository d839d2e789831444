package minibatch

import (
	"context"
	"errors"
	"fmt"
	"math"

	"strata/core/backend"
	"strata/core/caching"
	"strata/core/config"
	"strata/core/placing"
	"strata/core/sampling"
	"strata/core/store"
	"strata/core/tensor"
	"strata/core/train"
	"strata/plugins/strategy/internal/steprun"
)

// newFeatureStore ranks the nodes with the [cache] policy and places the
// hot rows on the training devices: interleaved, or as minibatch.store.placement
// or a [placement] plan says; with minibatch.store.graph_ratio the store holds the
// topology too and the samplers read through it (docs/store.md).
//
// The device budget: cache.capacity_bytes per device (the policy ranks
// devices x capacity_bytes of rows), or with cache.capacity (a fraction of
// all nodes) as many rows per device as the ranked rows need spread over
// the devices.
func newFeatureStore(ctx context.Context, cfg *config.Config, e steprun.Env, devices []tensor.Tier) (*store.Store, error) {
	pol, ok := cfg.Cache.Module.(caching.Policy)
	if !ok {
		return nil, cfg.KeyError(fmt.Sprintf("cache.name = %q decides online; mini-batch training takes a static policy that ranks the nodes (degree, rpagerank, weighted-rpagerank, presample, random, none)", cfg.Cache.Name), "cache", "name")
	}
	if e.Tier == tensor.Host {
		return nil, cfg.KeyError("cache: a feature cache needs a device to cache on; set train.backend = \"sim\"", "cache", "name")
	}
	if e.DT != tensor.Float32 {
		return nil, cfg.KeyError("cache: the feature store holds float32 rows; set train.dtype = \"float32\"", "train", "dtype")
	}
	opt := optionsOf(cfg).Store
	D := int64(len(devices))
	rowBytes := int64(e.Dim) * 4
	perDevBytes, _ := cfg.Cache.Options["capacity_bytes"].(int64)
	prefix := cfg.Data.Reorder == "score" // nodes relabelled hottest first
	var rank []int32
	if prefix {
		rank = steprun.Iota32(rankedCount(pol, e.DS.NumNodes, rowBytes, D))
	} else {
		if bs, ok := pol.(caching.ByteSized); ok && perDevBytes > 0 {
			// The budget is per device: rank what all the devices hold.
			bs.SetBytes(D * perDevBytes)
			defer bs.SetBytes(perDevBytes)
		}
		var err error
		if rank, err = pol.Rank(ctx, e.DS); err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Cache.ID, err)
		}
	}
	perDevice := (int64(len(rank)) + D - 1) / D
	if perDevBytes <= 0 {
		perDevBytes = perDevice * rowBytes
	}
	if opt.GraphRatio != GraphRatioUnset {
		// The topology ratio is of all the nodes, hottest first: rank
		// them all (the budget still bounds the feature rows).
		var err error
		if prefix {
			rank = steprun.Iota32(e.DS.NumNodes)
		} else if rank, err = train.RankAll(ctx, pol, e.DS); err != nil {
			return nil, cfg.KeyError(fmt.Sprintf("minibatch.store.graph_ratio: %s: %v", cfg.Cache.ID, err), storeKey("graph_ratio")...)
		}
	}
	opts := store.Options{Placement: store.Interleaved, Devices: devices, Capacity: []int64{perDevBytes}, Prefix: prefix}
	switch opt.Placement {
	case "replicated":
		opts.Placement = store.Replicated
	case "replicated-interleaved":
		opts.Placement, opts.Replicate = store.ReplicatedInterleaved, opt.Replicate
	}
	if cfg.Placement.Name != "" {
		if opt.Placement != "" {
			return nil, cfg.KeyError(fmt.Sprintf("minibatch.store.placement = %q and [placement] both place the hot rows; keep one", opt.Placement), storeKey("placement")...)
		}
		solver, ok := cfg.Placement.Module.(placing.Solver)
		machine, isSim := e.Be.(backend.Machine)
		switch {
		case !ok:
			return nil, fmt.Errorf("placement.name = %q is not a placement solver", cfg.Placement.Name)
		case !isSim:
			return nil, cfg.KeyError("placement: placing partitions needs simulated devices; set train.backend = \"sim\"", "placement", "name")
		}
		plan, err := solver.Place(ctx, machine.Topology(), nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Placement.ID, err)
		}
		if len(plan.Devices) != len(devices) {
			return nil, cfg.KeyError(fmt.Sprintf("placement: the plan of %s places %d devices, but training uses %d; the plan must cover every training device", cfg.Placement.ID, len(plan.Devices), len(devices)), "placement", "name")
		}
		// Each device holds as many partitions as the fullest one: with a
		// fraction, the same budget covers MaxStored partitions of
		// len(rank)/D rows.
		opts.Placement, opts.Plan = store.Planned, plan.StorePlan()
		if _, bytes := cfg.Cache.Options["capacity_bytes"].(int64); !bytes {
			opts.Capacity = []int64{perDevice * int64(plan.MaxStored()) * rowBytes}
		}
	}
	if opt.GraphFit {
		if opt.GraphRatio < 0 {
			return nil, cfg.KeyError("minibatch.store.graph_fit keeps the part of graph_ratio's topology that fits, but graph_ratio is unset or \"auto\"; give graph_ratio a number or remove graph_fit", storeKey("graph_fit")...)
		}
		opts.GraphFit = true
	}
	if opt.TopologyPlacement != "" {
		if opt.GraphRatio == GraphRatioUnset {
			return nil, cfg.KeyError(fmt.Sprintf("minibatch.store.topology_placement = %q places the topology on the devices, but minibatch.store.graph_ratio is unset (the samplers read the host graph); set graph_ratio or remove topology_placement", opt.TopologyPlacement), storeKey("topology_placement")...)
		}
		opts.TopologyPlacement = store.Placement(opt.TopologyPlacement)
	}
	if r := opt.GraphRatio; r != GraphRatioUnset {
		if _, ok := sampling.AsGraphSampler(cfg.Sampler.Module); !ok {
			return nil, cfg.KeyError(fmt.Sprintf("minibatch.store.graph_ratio: sampler %q does not read the graph through the store's access API (sampling.GraphSampler); remove minibatch.store.graph_ratio or use full, uniform, khop or randomwalk", cfg.Sampler.Name), storeKey("graph_ratio")...)
		}
		opts.Topology, opts.Graph = true, e.Adjs.Adj
		opts.GraphRatio, opts.GraphAuto = max(r, 0), r == GraphRatioAuto
	}
	if f := opt.FeatureRatio; f != GraphRatioUnset {
		opts.LimitFeatures, opts.FeatureRatio = true, f
	}
	s, err := store.New(backend.ForPurpose(e.Be, backend.PurposeFeatures), e.Feats, e.Dim, rank, opts)
	if errors.Is(err, store.ErrTopologyBudget) {
		return nil, cfg.KeyError(err.Error(), storeKey("graph_ratio")...)
	}
	return s, err
}

// sample builds shard k's blocks: through the store's topology as device k
// reads it when the store holds the topology (the reads are counted on
// the links when the shard is staged), else from the host graph.
func (m *miniBatches) sample(ctx context.Context, k int, part []int32, rng uint64) ([]sampling.Block, store.TopologyStats, error) {
	e := m.replicas[0].Env
	if m.store == nil || !m.store.HoldsTopology() {
		b, err := m.sampler.Sample(ctx, e.Adjs.Adj, part, rng)
		return b, store.TopologyStats{}, err
	}
	v, err := m.store.Topology(m.replicas[k].Env.Tier)
	if err != nil {
		return nil, store.TopologyStats{}, err
	}
	gs, _ := sampling.AsGraphSampler(m.sampler) // checked by newFeatureStore
	b, err := gs.SampleGraph(ctx, v, part, rng)
	return b, v.Take(), err
}

// rankedCount is how many nodes the policy's capacity ranks: with
// capacity_bytes (per device) devices x bytes of rows, else the fraction
// of the n nodes (cache.Capacity.Rows).
func rankedCount(pol caching.Policy, n int, rowBytes, devices int64) int {
	c, ok := pol.(interface{ Current() (float64, int64) })
	if !ok {
		return 0
	}
	f, b := c.Current()
	if b > 0 {
		return int(min(int64(n), devices*b/rowBytes))
	}
	return min(n, int(math.Floor(f*float64(n))))
}

// mean is the mean of v (0 for none).
func mean(v []int64) float64 {
	var s float64
	for _, x := range v {
		s += float64(x)
	}
	return s / float64(max(len(v), 1))
}
