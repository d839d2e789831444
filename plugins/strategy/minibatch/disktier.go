package minibatch

import (
	"context"
	"fmt"
	"strings"

	"strata/core/caching"
	"strata/core/config"
	"strata/core/diskrows"
	"strata/core/graph"
	"strata/core/graph/formats"
	"strata/core/registry"
	"strata/plugins/strategy/internal/steprun"
)

// featKey is the path of a [minibatch.features] key, for errors.
func featKey(key string) []string { return []string{"minibatch", "features", key} }

// checkDiskTier checks what [minibatch.features] can tell without the data.
func checkDiskTier(cfg *config.Config) error {
	f := optionsOf(cfg).Features
	if f.Tier != "disk" {
		for key, set := range map[string]bool{"cache_bytes": f.CacheBytes != 0, "drop_page_cache": f.DropPageCache} {
			if set {
				return cfg.KeyError(fmt.Sprintf("minibatch.features.%s applies to the disk tier only, and tier = %q; set tier = \"disk\" or remove it", key, f.Tier), featKey(key)...)
			}
		}
		return nil
	}
	if cfg.Cache.Name != "" {
		return cfg.KeyError("minibatch.features.tier = \"disk\": the tiered device store ([cache]) takes its rows from memory; remove [cache] or use tier = \"memory\"", featKey("tier")...)
	}
	if fd := cfg.Data.FeatureStorage(); fd != "float32" {
		return cfg.KeyError(fmt.Sprintf("minibatch.features.tier = \"disk\": the file holds float32 rows, not data.feature_dtype = %q; use data.feature_dtype = \"float32\" or tier = \"memory\"", fd), featKey("tier")...)
	}
	if cfg.Data.FeatureNorm != "none" {
		return cfg.KeyError(fmt.Sprintf("minibatch.features.tier = \"disk\": data.feature_norm = %q would make a normalised copy of every row in memory; use data.feature_norm = \"none\" (normalise the file's features when converting it) or tier = \"memory\"", cfg.Data.FeatureNorm), "data", "feature_norm")
	}
	if cfg.Data.Reorder != "" && cfg.Data.Reorder != "none" {
		return cfg.KeyError(fmt.Sprintf("minibatch.features.tier = \"disk\": data.reorder = %q relabels the rows in memory; use data.reorder = \"none\" or tier = \"memory\"", cfg.Data.Reorder), "data", "reorder")
	}
	if f.CacheBytes < 0 {
		return cfg.KeyError(fmt.Sprintf("minibatch.features.cache_bytes = %d is negative; use 0 (no cache) or a byte count", f.CacheBytes), featKey("cache_bytes")...)
	}
	if _, err := diskPolicy(cfg, f.CachePolicy); err != nil {
		return err
	}
	return nil
}

// diskPolicy builds the cache module named by cache_policy; it must be a
// dynamic policy that reports the rows it holds.
func diskPolicy(cfg *config.Config, id string) (caching.Dynamic, error) {
	info, err := registry.Lookup(id)
	if err != nil {
		return nil, cfg.KeyError(fmt.Sprintf("minibatch.features.cache_policy = %q: %v", id, err), featKey("cache_policy")...)
	}
	d, ok := info.New().(caching.Dynamic)
	if _, holds := d.(caching.Holder); !ok || !holds || info.Namespace() != "cache" {
		return nil, cfg.KeyError(fmt.Sprintf("minibatch.features.cache_policy = %q is not a dynamic cache policy that reports the rows it holds; use cache.lru, cache.clock, cache.sieve or cache.s3fifo", id), featKey("cache_policy")...)
	}
	return d, nil
}

// openDiskTier opens the disk tier of cfg over e's dataset file, or
// returns nil when the rows come from memory.
func openDiskTier(ctx context.Context, cfg *config.Config, e steprun.Env) (*diskrows.Tier, error) {
	f := optionsOf(cfg).Features
	if f.Tier != "disk" {
		return nil, nil
	}
	if err := checkDiskTier(cfg); err != nil {
		return nil, err
	}
	path := cfg.DatasetSpec()
	if i := strings.LastIndex(path, "@"); i > 0 && !formats.IsBinary(path) {
		path = path[:i] // a split suffix
	}
	if !formats.IsBinary(path) {
		return nil, cfg.KeyError(fmt.Sprintf("minibatch.features.tier = \"disk\": dataset %q is not a .strata binary graph file; convert it first (strata convert) or use tier = \"memory\"", path), featKey("tier")...)
	}
	off, rows, dim, err := formats.FeatureSection(path)
	if err != nil {
		return nil, cfg.KeyError(fmt.Sprintf("minibatch.features.tier = \"disk\": %v; use tier = \"memory\"", err), featKey("tier")...)
	}
	if rows != int64(e.DS.NumNodes) || dim != int64(e.Dim) {
		return nil, cfg.KeyError(fmt.Sprintf("minibatch.features.tier = \"disk\": the file's features are %d x %d, the run's %d x %d (data options that change the features need tier = \"memory\")", rows, dim, e.DS.NumNodes, e.Dim), featKey("tier")...)
	}
	if b := graph.MaxMemory(ctx); b > 0 && f.CacheBytes > b {
		return nil, cfg.KeyError(fmt.Sprintf("minibatch.features.cache_bytes = %s is more than the memory budget of %s (--max-memory); use a smaller cache", graph.FormatBytes(f.CacheBytes), graph.FormatBytes(b)), featKey("cache_bytes")...)
	}
	pol, err := diskPolicy(cfg, f.CachePolicy)
	if err != nil {
		return nil, err
	}
	t, err := diskrows.Open(path, off, e.DS, pol, diskrows.Options{CacheBytes: f.CacheBytes, Readers: f.Readers, DropPageCache: f.DropPageCache})
	if err != nil {
		return nil, cfg.KeyError(err.Error(), featKey("tier")...)
	}
	return t, nil
}

// closeDisk closes a disk tier (nil: none).
func closeDisk(t *diskrows.Tier) {
	if t != nil {
		t.Close()
	}
}

// diskTierFigure is the last epoch's disk tier traffic for the result, or
// nil without a disk tier.
func (m *miniBatches) diskTierFigure() *diskrows.Stats {
	if m.disk == nil {
		return nil
	}
	st := m.diskEpoch
	return &st
}
