package train

import (
	"context"
	"fmt"

	"strata/core/caching"
	"strata/core/config"
	"strata/core/graph"
	"strata/core/store"
)

// reorderByScore is data.reorder = "score": it ranks every node with the
// [cache] policy and relabels the dataset by the ranking with the tiering
// paper's parallel Alg. 2 (store.Reorder), hottest node first, so that the
// feature store's hot rows are a prefix (store.Options.Prefix). Labels and
// splits follow the nodes. The policy is provisioned (Config.Provision at
// the run's entry point).
func reorderByScore(ctx context.Context, cfg *config.Config, ds *graph.Dataset) error {
	pol, ok := cfg.Cache.Module.(caching.Policy)
	if !ok {
		return cfg.KeyError("data.reorder = \"score\" relabels the nodes by the [cache] policy's ranking; set cache.name to a static policy (degree, rpagerank, weighted-rpagerank, presample, random)", "data", "reorder")
	}
	rank, err := RankAll(ctx, pol, ds)
	if err != nil {
		return fmt.Errorf("%s: %w", cfg.Cache.ID, err)
	}
	feats := ds.Features
	if ds.FeatDim == 0 || len(feats) != ds.NumNodes*ds.FeatDim {
		feats = nil
	}
	g, f, newID, err := store.Reorder(ds.Graph, feats, ds.FeatDim, rank)
	if err != nil {
		return cfg.KeyError("data.reorder = \"score\": "+err.Error(), "data", "reorder")
	}
	ds.Graph = g
	if feats != nil {
		ds.Features = f
	}
	graph.RelabelNodeData(ds, rank, newID)
	return nil
}

// RankAll ranks every node of d with pol (capacity 1), then restores the
// policy's capacity. The policy must let its capacity be set and read
// (plugins/cache's static policies do).
func RankAll(ctx context.Context, pol caching.Policy, d *graph.Dataset) ([]int32, error) {
	sz, ok := pol.(interface {
		caching.Sized
		caching.ByteSized
		Current() (float64, int64)
	})
	if !ok {
		return nil, fmt.Errorf("the policy cannot rank every node (its capacity cannot be set)")
	}
	c, b := sz.Current()
	defer func() {
		sz.SetFraction(c)
		if b > 0 {
			sz.SetBytes(b)
		}
	}()
	sz.SetFraction(1)
	return pol.Rank(ctx, d)
}
