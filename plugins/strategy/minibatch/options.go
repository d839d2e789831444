package minibatch

import (
	"strata/core/config"
	"strata/plugins/strategy/internal/options"
)

// Options are strategy.minibatch's section, [minibatch]. Every key lived
// in core's config before the strategy owned it; their moved tags keep
// the old spellings (train.batch_size, train.prefetch,
// train.micro_batches, train.overlap, [store]) readable and config_sha256
// unchanged (core/config/moved.go).
type Options struct {
	options.Size
	options.Depth
	options.Split
	options.Inference
	Overlap bool `toml:"overlap" moved:"train.overlap" doc:"move the next batch to the device (feature-store gather, blocks, input rows) while the current one trains, double-buffered; the predicted epoch time then overlaps transfer and compute. Device peak memory then holds two batches and depends on timing (was train.overlap, still read there)"`
	// SampleMEPS prices host sampling on a simulated machine.
	SampleMEPS float64 `toml:"sample_meps" hash:"omitempty" range:"[0,)" doc:"simulated backend: the host CPU's sampling rate in millions of sampled edges per second, which prices host sampling in the predicted time: each step's sampling of every device's shard (one CPU samples for all the devices) takes edges / (sample_meps x 10^6) s and runs ahead of the step's transfer and computation, as a data loader's workers do (a pipeline stage); 0 = host sampling is not timed. Device sampling (minibatch.store.graph_ratio set) is timed by its counted topology reads instead"`
	Store      Store   `toml:"store" moved:"store" hash:"omitdefault" doc:"the global memory store (XGNN GGMS): graph topology as well as features over the devices and the host, see docs/store.md (was [store], still read there)"`
	// SparseInput holds the features by their non-zeros and binds every
	// batch's input rows as entries (steprun's entries.go).
	SparseInput bool `toml:"sparse_input" hash:"omitempty" doc:"hold sparse input features (under 10% non-zero, e.g. bag-of-words) by their non-zeros: every batch (and layer-wise evaluation's first layer) gathers the entries of its input rows alone and multiplies them by the first layer as SpMM, never forming the dense rows; the same results to float rounding (another summation order). Off by default, as the published results were made dense. Not with the disk tier or [cache]"`
	// Features is [minibatch.features], where the input rows come from.
	Features Features `toml:"features" hash:"omitdefault" doc:"where the input feature rows come from: memory (the dataset's rows) or disk (positional reads from the .strata file behind a host cache, docs/store.md)"`
}

// Features configures the disk feature tier (core/diskrows).
type Features struct {
	Tier        string `toml:"tier" enum:"memory,disk" doc:"memory: rows from the loaded dataset; disk: rows read from the .strata dataset file with positional reads behind a host cache, never all resident"`
	CacheBytes  int64  `toml:"cache_bytes" range:"[0,1125899906842624]" doc:"disk tier: bytes of the host row cache (whole rows), checked against the memory budget (--max-memory)"`
	CachePolicy string `toml:"cache_policy" doc:"disk tier: the cache.* module that decides which rows the host cache keeps (a dynamic policy: cache.lru, cache.clock, cache.sieve, cache.s3fifo)"`
	Readers     int    `toml:"readers" range:"[1,64]" doc:"disk tier: positional reads in flight at once"`
	// DropPageCache evicts the file's rows from the OS page cache before
	// every epoch.
	DropPageCache bool `toml:"drop_page_cache" hash:"omitempty" doc:"disk tier: evict the file's feature rows from the OS page cache before every epoch (posix_fadvise DONTNEED), so each epoch reads from the device what the host cache misses: a cold measurement (Linux)"`
}

// Store configures the memory store of mini-batch training with a
// [cache] policy (docs/store.md).
type Store struct {
	GraphRatio   float64 `toml:"graph_ratio" range:"[0,1]" special:"-2:unset: the samplers read the host graph" word:"auto:-1:topology first when the whole topology fits the devices, else features first (XGNN §6.8)" doc:"share of the nodes whose topology (CSR rows, hottest first) lives on the devices, placed like the hot feature rows and taken from the device budget before the features; the samplers then read the graph through the store, every read counted on its link. Unset = the samplers read the host graph"`
	FeatureRatio float64 `toml:"feature_ratio" range:"[0,1]" special:"-2:unset: as many feature rows as the budget holds" doc:"share of the nodes whose feature rows (hottest first) may be cached on the devices, XGNN's feat_ratio; unset = as many as the device budget holds after the topology"`
	Placement    string  `toml:"placement" enum:",interleaved,replicated,replicated-interleaved" doc:"the hot tier without [placement]: interleaved (hot row r on device r mod D, the default), replicated (every device the same hottest rows), replicated-interleaved (the hottest rows replicated, the next interleaved; data tiering §4.2)"`
	Replicate    float64 `toml:"replicate" range:"[0,1]" doc:"replicated-interleaved: the share of each device's feature budget that holds the replicated hottest rows"`
	// GraphFit keeps the hottest topology rows of graph_ratio that fit.
	GraphFit bool `toml:"graph_fit" hash:"omitempty" doc:"with a numeric graph_ratio: keep the hottest topology rows that fit the device budget, topology first, the features taking what is left (XGNN-G, §6.8), instead of refusing a ratio that does not fit; \"auto\" gives the features the budget first (XGNN-F)"`
	// TopologyPlacement places the topology apart from the feature rows.
	TopologyPlacement string `toml:"topology_placement" enum:",interleaved,replicated" hash:"omitempty" doc:"the topology rows' placement when it differs from the feature rows': interleaved (XGNN's graph store: row r on device r mod D) or replicated (DGL with a feature cache: the whole graph on every device); \"\" = as the feature rows. Needs graph_ratio"`
}

// GraphRatioUnset and GraphRatioAuto are Store.GraphRatio when the key is
// absent and when it is "auto".
const (
	GraphRatioUnset = -2
	GraphRatioAuto  = -1
)

// defaultOptions are the options of a config without [minibatch].
func defaultOptions() Options {
	return Options{Size: options.DefaultSize(), Depth: options.DefaultDepth(), Split: options.DefaultSplit(),
		Store:    Store{GraphRatio: GraphRatioUnset, FeatureRatio: GraphRatioUnset, Replicate: 0.5},
		Features: Features{Tier: "memory", CachePolicy: "cache.lru", Readers: 4}}
}

// optionsOf returns the [minibatch] options of cfg (the defaults when
// train.mode names another strategy).
func optionsOf(cfg *config.Config) Options {
	if m, ok := cfg.Strategy.Module.(*Minibatch); ok {
		return m.Options
	}
	return defaultOptions()
}

// storeKey is the path of a [minibatch.store] key, for errors.
func storeKey(key string) []string { return []string{"minibatch", "store", key} }
