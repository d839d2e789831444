package train

import (
	"context"
	"fmt"

	"strata/core/comm"
	"strata/core/config"
	"strata/core/graph"
)

// rankLocal reports whether NewEnv leaves the feature rows to the
// strategy: a strategy that splits the graph among the ranks of a
// communicator (Uses.RankPartition) on more than one rank, where each rank
// loads only its own nodes' rows (LoadFeatureRows). Relabelled nodes
// (data.reorder) are loaded whole: their ids are not the file's rows.
func rankLocal(ctx context.Context, cfg *config.Config) bool {
	strat, err := StrategyFor(cfg)
	if err != nil || !strat.Uses().RankPartition || comm.From(ctx).Size() == 1 {
		return false
	}
	return cfg.Data.Reorder == "" || cfg.Data.Reorder == "none"
}

// LoadFeatureRows returns the raw feature rows of the nodes rows of cfg's
// dataset ds, in that order, reading only those rows where the format
// allows (graph.WithFeatureRows), or the synthetic rows
// (data.synth_features) of the same values as the whole matrix. Prepare
// them with PrepareFeatureRows.
func LoadFeatureRows(ctx context.Context, cfg *config.Config, ds *graph.Dataset, rows []int32) ([]float32, error) {
	if ds.FeatDim == 0 {
		dim := cfg.Data.SynthFeatures
		out := make([]float32, 0, len(rows)*dim)
		for _, v := range rows {
			for c := 0; c < dim; c++ {
				out = append(out, randomFeature(uint64(cfg.Train.Seed), int(v)*dim+c))
			}
		}
		return out, nil
	}
	d, err := graph.OpenContext(graph.WithFeatureRows(ctx, rows), cfg.DatasetSpec())
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, cfg.KeyError(err.Error(), "data", "dataset")
	}
	if d.FeatDim != ds.FeatDim || len(d.Features) != len(rows)*ds.FeatDim {
		return nil, fmt.Errorf("data: %s: %d feature values of width %d for %d rows, the first load said width %d (did the file change?)", cfg.DatasetSpec(), len(d.Features), d.FeatDim, len(rows), ds.FeatDim)
	}
	return d.Features, nil
}

// BinaryFeatures reports whether every value of rows is 0 or 1: the test
// of data.feature_norm = "auto", which a distributed run must combine over
// every rank's rows.
func BinaryFeatures(rows []float32) bool { return isBinary(rows) }

// PrepareFeatureRows applies data.feature_norm to rows (width dim), in
// place, as NewEnv prepares the whole matrix; allBinary is BinaryFeatures
// of the whole matrix (for "auto").
func PrepareFeatureRows(norm string, rows []float32, dim int, allBinary bool) {
	if norm == "none" || (norm == "auto" && !allBinary) {
		return
	}
	rowNormalizeInto(rows, rows, dim)
}
