package sampler

import (
	"context"
	"fmt"

	"strata/core/graph"
	"strata/core/registry"
	"strata/core/sampling"
)

// Full keeps every in-neighbour: its blocks are the exact `layers`-hop
// in-neighbourhood of the seeds, as full-graph training computes it.
type Full struct {
	Hops int `toml:"layers" range:"[1,64]" doc:"number of hops (one block per GNN layer); match model.layers"`
}

// StrataModule registers sampler.full.
func (*Full) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{
		ID:  "sampler.full",
		New: func() registry.Module { return &Full{Hops: 2} },
		Doc: "full-neighbour blocks: every in-neighbour for `layers` hops",
	}
}

// Layers implements sampling.Layered.
func (f *Full) Layers() int { return f.Hops }

// Capabilities implements sampling.Describer: full blocks are
// deterministic and hold every in-edge once.
func (*Full) Capabilities() sampling.Capabilities {
	return sampling.Capabilities{Subset: true}
}

// Validate checks the config.
func (f *Full) Validate() error {
	if f.Hops < 1 {
		return fmt.Errorf("layers = %d: must be >= 1", f.Hops)
	}
	return nil
}

// Sample implements Sampler (the base, sampling.SampleLayers).
func (f *Full) Sample(ctx context.Context, g *graph.CSR, seeds []int32, rng uint64) ([]Block, error) {
	return sampling.SampleLayers(ctx, f, g, seeds, rng)
}

// DrawLayer implements sampling.Drawer: per layer one batched degree
// read and one batched read of the whole rows (sampling.Full).
func (f *Full) DrawLayer(ctx context.Context, g Graph, l int, dst []int32, rng uint64) ([]int64, []int32, []float32, error) {
	return sampling.Full{Hops: f.Hops}.DrawLayer(ctx, g, l, dst, rng)
}

// RowFanouts implements sampling.RowSampler: every neighbour in every
// block.
func (f *Full) RowFanouts() ([]int, bool) { return sampling.Full{Hops: f.Hops}.RowFanouts() }

// SampleRows implements sampling.RowSampler: the whole rows.
func (f *Full) SampleRows(g *graph.CSR, rows, dst []int32, l, fanout int, replace bool, rng uint64) ([]int64, []int32, error) {
	return sampling.Full{Hops: f.Hops}.SampleRows(g, rows, dst, l, fanout, replace, rng)
}
