package train

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"strata/core/config"
	"strata/core/graph"
	"strata/core/ir"
	"strata/core/modhost"
	"strata/core/registry"
	"strata/core/sampling"
	"strata/models"
)

// checkEdgeWeights refuses a dataset with edge weights (CSR.Values) where
// they would be ignored: a strategy that does not carry them
// (Uses.EdgeWeights), a sampler whose blocks are not edges of the graph
// (sampling.Capabilities.Subset), a layer module that does not declare that it reads
// them (models.MetaEdgeWeights), or a model op that reads the edges
// without their weights (anything but an aggregate that sums, averages
// or GCN-normalises). Weights that are not finite or are negative (a
// binary graph file written by hand) are refused too.
func checkEdgeWeights(cfg *config.Config, m *Model, ds *graph.Dataset) error {
	if ds.Graph == nil || ds.Graph.Values == nil {
		return nil
	}
	if err := graph.CheckEdgeWeights(ds.Graph.Values); err != nil {
		return cfg.KeyError(fmt.Sprintf("data.dataset: %s: %v", ds.Source, err), "data", "dataset")
	}
	has := fmt.Sprintf("dataset %q has edge weights", ds.Name)
	strat, err := StrategyFor(cfg)
	if err != nil {
		return err
	}
	if !strat.Uses().EdgeWeights {
		return cfg.KeyError(fmt.Sprintf("train.mode = %q does not carry edge weights yet, and %s; use train.mode = %s, or remove the weights to train on the unweighted graph",
			cfg.Train.Mode, has, modesUsing(func(u Uses) bool { return u.EdgeWeights })), "train", "mode")
	}
	if s, ok := cfg.Sampler.Module.(sampling.Sampler); ok && cfg.Sampler.Name != "" && !sampling.CapabilitiesOf(s).Subset {
		return cfg.KeyError(fmt.Sprintf("sampler.name = %q: its blocks hold edges of their own (not edges of the graph), which have no weights, and %s; use sampler.name = %s, whose blocks are edges of the graph, or remove the weights",
			cfg.Sampler.Name, has, subsetSamplers()), "sampler", "name")
	}
	if !m.EdgeWeights {
		return modelKeyError(cfg, fmt.Sprintf("the layer module %q does not take edge weights (it declares no //strata:%s), and %s; use model.name = %s, or remove the weights to train on the unweighted graph",
			m.Name, models.MetaEdgeWeights, has, weightedModels()))
	}
	if op := unweightedGraphOp(m.Graph); op != "" {
		return modelKeyError(cfg, fmt.Sprintf("model %q, as configured, reads the edges with %s, which ignores their weights, and %s; use the layer's sum, mean or GCN aggregation (see its options in docs/models.md), or remove the weights",
			m.Name, op, has))
	}
	return nil
}

// modelKeyError is msg as an error at the key that chose the model:
// model.module for a module file, model.name otherwise.
func modelKeyError(cfg *config.Config, msg string) error {
	if cfg.Model.Module != "" {
		return cfg.KeyError("model.module: "+msg, "model", "module")
	}
	return cfg.KeyError(fmt.Sprintf("model.name = %q: %s", cfg.Model.Name, msg), "model", "name")
}

// weightedReducers are the aggregations that weight each edge: the
// adjacency's values (sum) or the normalisations built from them.
var weightedReducers = []string{"sum", "mean", "gcn"}

// unweightedGraphOp describes the first op of g that reads a graph
// without its edge weights, or returns "".
func unweightedGraphOp(g *ir.Graph) string {
	for _, op := range g.Ops {
		switch {
		case !ir.GraphOp(op.Kind):
		case op.Kind == ir.OpAggregate && slices.Contains(weightedReducers, op.Reducer):
		case op.Kind == ir.OpAggregate:
			return fmt.Sprintf("layer %d's aggregate with reducer %q", op.Layer, op.Reducer)
		default:
			return fmt.Sprintf("layer %d's op %s", op.Layer, op.Kind)
		}
	}
	return ""
}

// subsetSamplers lists, quoted and joined by "or", the registered
// samplers whose blocks are edges of the graph (Capabilities.Subset).
func subsetSamplers() string {
	var names []string
	for _, info := range registry.Namespace("sampler") {
		if s, ok := info.New().(sampling.Sampler); ok && sampling.CapabilitiesOf(s).Subset {
			names = append(names, strconv.Quote(info.Name()))
		}
	}
	return quotedList(names)
}

// quotedList joins names with "or", "(none registered)" for none.
func quotedList(names []string) string {
	if len(names) == 0 {
		return "(none registered)"
	}
	return strings.Join(names, " or ")
}

// weightedModels lists, quoted and joined by "or", the registered layer
// modules that declare models.MetaEdgeWeights.
func weightedModels() string {
	var names []string
	for _, info := range registry.Namespace("model") {
		b, err := modhost.Lookup(info.ID)
		if err != nil {
			continue
		}
		if meta, err := models.Meta(b); err == nil && meta[models.MetaEdgeWeights] != "" {
			names = append(names, strconv.Quote(info.Name()))
		}
	}
	return quotedList(names)
}
