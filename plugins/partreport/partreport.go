// Package partreport measures a partition of a config's graph, or of its
// training batch split into micro-batches, for `strata partition` and the
// experiment runner's partition kinds.
package partreport

import (
	"context"
	"fmt"
	"io"
	"time"

	"strata/core/config"
	"strata/core/graph"
	"strata/core/metrics"
	"strata/core/partition"
	"strata/core/registry"
	"strata/core/sampling"
	"strata/core/train"
)

// PartitionReport is what `strata partition` prints: the quality of one
// partition of a config's graph, or of its training batch.
type PartitionReport struct {
	Dataset     string  `json:"dataset"`
	Partitioner string  `json:"partitioner"`
	Target      string  `json:"target"`            // "graph" or "batch"
	Sampler     string  `json:"sampler,omitempty"` // how the batch's blocks were built
	TimeS       float64 `json:"time_s"`
	partition.Metrics
	// LayerRedundancy is, for a batch split into micro-batches, the source
	// nodes of every layer's blocks summed over the micro-batches, divided
	// by those of the whole batch; the first entry is the model's input
	// (Betty's redundancy).
	LayerRedundancy []float64 `json:"layer_redundancy,omitempty"`
}

// Partition splits, with the config's [partition] plugin, either the whole
// (symmetrised) graph into k parts or, with batch, the training nodes into
// k micro-batches, and measures the result.
//
// The batch is every training node with its blocks: full neighbourhoods, or
// the config's [sampler] when it names one (sampled once, with train.seed);
// micro-batches then take their share of those same blocks, as Betty
// splits a sampled batch. Partitioners that need a square graph (metis,
// hongtu-2level) split the training nodes by the graph induced on them; the
// others by the batch's last block.
//
// A non-nil progress draws a bar over the stages: loading, sampling, the
// partitioner's own stages (partition.Staged) and measuring.
func Partition(ctx context.Context, cfg *config.Config, k int, batch bool, progress io.Writer) (*PartitionReport, error) {
	return config.Provisioned(ctx, cfg, func() (*PartitionReport, error) { return partitionReport(ctx, cfg, k, batch, progress) })
}

// partitionReport is Partition with the config's modules provisioned.
func partitionReport(ctx context.Context, cfg *config.Config, k int, batch bool, progress io.Writer) (*PartitionReport, error) {
	if cfg.Partition.Name == "" {
		return nil, cfg.KeyError(fmt.Sprintf("partition.name: the config names no partitioner; add [partition] with name = one of %s", registry.QuoteList(partitionerNames())), "partition", "name")
	}
	part, ok := cfg.Partition.Module.(partition.Partitioner)
	if !ok {
		return nil, fmt.Errorf("partition.name = %q is not a partitioner", cfg.Partition.Name)
	}
	bar := newStageBar(progress, part, batch)
	defer bar.done()
	bar.stage("load")
	ds, err := train.LoadDataset(ctx, cfg)
	if err != nil {
		return nil, err
	}
	adjs, err := train.BuildAdjacencies(ds, cfg.Data.Symmetrize)
	if err != nil {
		return nil, err
	}
	rep := &PartitionReport{Dataset: ds.Name, Partitioner: cfg.Partition.ID, Target: "graph"}
	if !batch {
		bar.stage("partition")
		t0 := time.Now()
		parts, err := part.Partition(ctx, adjs.Adj, k, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Partition.ID, err)
		}
		rep.TimeS = time.Since(t0).Seconds()
		bar.stage("measure")
		rep.Metrics = partition.Quality(adjs.Adj, parts, k)
		return rep, nil
	}
	rep.Target = "batch"
	train := ds.Train
	if len(train) == 0 {
		return nil, fmt.Errorf("data: dataset %q has no training nodes to split", ds.Name)
	}
	var smp sampling.Sampler = sampling.Full{Hops: cfg.Model.Layers}
	rep.Sampler = "sampler.full"
	if cfg.Sampler.Name != "" {
		s, ok := cfg.Sampler.Module.(sampling.Sampler)
		if !ok {
			return nil, fmt.Errorf("sampler.name = %q is not a sampler", cfg.Sampler.Name)
		}
		smp, rep.Sampler = s, cfg.Sampler.ID
	}
	bar.stage("sample")
	blocks, err := smp.Sample(ctx, adjs.Adj, train, uint64(cfg.Train.Seed))
	if err != nil {
		return nil, err
	}
	last := blocks[len(blocks)-1].Adj
	g := last
	if sq, ok := cfg.Partition.Module.(partition.SquareOnly); ok && sq.SquareOnly() {
		g = induced(adjs.Adj, train)
	}
	bar.stage("partition")
	t0 := time.Now()
	parts, err := part.Partition(ctx, g, k, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Partition.ID, err)
	}
	rep.TimeS = time.Since(t0).Seconds()
	bar.stage("measure")
	rep.Metrics = partition.Quality(last, parts, k)
	rep.LayerRedundancy = splitRedundancy(blocks, parts, k)
	return rep, nil
}

// induced returns the subgraph of g on nodes, in local ids (position in
// nodes).
func induced(g *graph.CSR, nodes []int32) *graph.CSR {
	local := make(map[int64]int64, len(nodes))
	for i, v := range nodes {
		local[int64(v)] = int64(i)
	}
	var edges [][2]int64
	for i, v := range nodes {
		for e := g.Indptr[v]; e < g.Indptr[v+1]; e++ {
			if j, ok := local[g.Col(e)]; ok {
				edges = append(edges, [2]int64{int64(i), j})
			}
		}
	}
	// FromEdges takes (dst, src) pairs: row i lists its in-neighbours.
	return graph.FromEdges(len(nodes), edges)
}

// splitRedundancy walks the batch's blocks down from each micro-batch's
// outputs and compares the sources each micro-batch needs, layer by layer,
// with the whole batch's.
func splitRedundancy(blocks []sampling.Block, parts []int32, k int) []float64 {
	L := len(blocks)
	sum := make([]int, L)
	for p := 0; p < k; p++ {
		// need: local destination rows of the current block.
		var need []int32
		for i, q := range parts {
			if int(q) == p {
				need = append(need, int32(i))
			}
		}
		for l := L - 1; l >= 0 && len(need) > 0; l-- {
			b := blocks[l]
			seen := make(map[int32]bool, len(need))
			var src []int32
			add := func(c int32) {
				if !seen[c] {
					seen[c] = true
					src = append(src, c)
				}
			}
			for _, r := range need {
				add(r) // a destination is also its own source (local id r)
				for e := b.Adj.Indptr[r]; e < b.Adj.Indptr[r+1]; e++ {
					add(int32(b.Adj.Col(e)))
				}
			}
			sum[l] += len(src)
			need = src // sources of block l are destinations of block l-1
		}
	}
	out := make([]float64, L)
	for l := range out {
		out[l] = float64(sum[l]) / float64(len(blocks[l].Src))
	}
	return out
}

// stageBar is the progress bar of Partition: one step per stage.
type stageBar struct {
	bar    *metrics.Progress
	staged partition.Staged
	steps  map[string]int
}

func newStageBar(w io.Writer, part partition.Partitioner, batch bool) *stageBar {
	names := []string{"load"}
	if batch {
		names = append(names, "sample")
	}
	staged, _ := part.(partition.Staged)
	if staged != nil {
		names = append(names, staged.Stages()...)
	} else {
		names = append(names, "partition")
	}
	names = append(names, "measure")
	b := &stageBar{bar: metrics.NewProgress(w, "partition", len(names)), steps: map[string]int{}}
	for i, n := range names {
		b.steps[n] = i
	}
	if staged != nil && w != nil {
		b.staged = staged
		staged.ReportStages(func(s string) { b.stage(s) })
	}
	return b
}

// stage marks the start of a named stage; names the bar does not list (a
// partitioner's "done", "partition" for a staged partitioner) are ignored.
func (b *stageBar) stage(name string) {
	if i, ok := b.steps[name]; ok {
		b.bar.Update(i, name)
	}
}

func (b *stageBar) done() {
	if b.staged != nil {
		b.staged.ReportStages(nil)
	}
	b.bar.Update(len(b.steps), "done")
	b.bar.Done()
}

// partitionerNames lists the registered partitioners by short name.
func partitionerNames() []string {
	var out []string
	for _, mi := range registry.Namespace("partitioner") {
		out = append(out, mi.Name())
	}
	return out
}
