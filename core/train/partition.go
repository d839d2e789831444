package train

import (
	"context"
	"fmt"
	"time"

	"strata/core/config"
	"strata/partitioners"
	"strata/plugins/registry"
	"strata/plugins/sampler"
)

// PartitionReport is what `strata partition` prints: the quality of one
// partition of a config's graph, or of its training batch.
type PartitionReport struct {
	Dataset     string  `json:"dataset"`
	Partitioner string  `json:"partitioner"`
	Target      string  `json:"target"` // "graph" or "batch"
	TimeS       float64 `json:"time_s"`
	partitioners.Metrics
	// LayerRedundancy is, for a batch split into micro-batches, the input
	// rows of every layer's blocks summed over the micro-batches, divided
	// by those of the whole batch; the first entry is the model's input.
	LayerRedundancy []float64 `json:"layer_redundancy,omitempty"`
}

// Partition splits, with the config's [partition] plugin, either the whole
// (symmetrised) graph into k parts, or with batch the training nodes into
// k micro-batches as train.micro_batches does, and measures the result.
func Partition(ctx context.Context, cfg *config.Config, k int, batch bool) (*PartitionReport, error) {
	if cfg.Partition.Name == "" {
		return nil, cfg.KeyError(fmt.Sprintf("partition.name: the config names no partitioner; add [partition] with name = one of %s", registry.QuoteList(partitionerNames())), "partition", "name")
	}
	part, ok := cfg.Partition.Module.(partitioners.Partitioner)
	if !ok {
		return nil, fmt.Errorf("partition.name = %q is not a partitioner", cfg.Partition.Name)
	}
	if err := registry.Provision(ctx, cfg.Partition.Module); err != nil {
		return nil, fmt.Errorf("partition: %w", err)
	}
	ds, err := loadDataset(cfg)
	if err != nil {
		return nil, err
	}
	adjs, err := buildAdjacencies(ds, cfg.Data.Symmetrize)
	if err != nil {
		return nil, err
	}
	rep := &PartitionReport{Dataset: ds.Name, Partitioner: cfg.Partition.ID, Target: "graph"}
	g := adjs.adj
	if batch {
		rep.Target = "batch"
		if len(ds.Train) == 0 {
			return nil, fmt.Errorf("data: dataset %q has no training nodes to split", ds.Name)
		}
		blocks, err := (&sampler.Full{Layers: 1}).Sample(ctx, g, ds.Train, 0)
		if err != nil {
			return nil, err
		}
		g = blocks[0].Adj
	}
	t0 := time.Now()
	parts, err := part.Partition(ctx, g, k, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Partition.ID, err)
	}
	rep.TimeS = time.Since(t0).Seconds()
	rep.Metrics = partitioners.Quality(g, parts, k)
	if batch {
		if rep.LayerRedundancy, err = layerRedundancy(ctx, adjs, ds.Train, parts, k, cfg.Model.Layers); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// layerRedundancy compares the full-neighbour blocks of each micro-batch
// with those of the whole batch, layer by layer.
func layerRedundancy(ctx context.Context, adjs *adjacencies, train []int32, parts []int32, k, layers int) ([]float64, error) {
	hops := &sampler.Full{Layers: layers}
	whole, err := hops.Sample(ctx, adjs.adj, train, 0)
	if err != nil {
		return nil, err
	}
	groups := make([][]int32, k)
	for i, p := range parts {
		groups[p] = append(groups[p], train[i])
	}
	sum := make([]int, layers)
	for _, grp := range groups {
		if len(grp) == 0 {
			continue
		}
		bs, err := hops.Sample(ctx, adjs.adj, grp, 0)
		if err != nil {
			return nil, err
		}
		for l, b := range bs {
			sum[l] += len(b.Src)
		}
	}
	out := make([]float64, layers)
	for l := range out {
		out[l] = float64(sum[l]) / float64(len(whole[l].Src))
	}
	return out, nil
}
