package dist

import (
	"context"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/registry"
	"strata/core/sampling"
	"strata/core/train/strategytest"
	"strata/plugins/strategy/internal/testkit"
)

// rowsToy is a sampler of its own that has the row-sampling capability
// (sampling.RowSampler): every neighbour, as sampling.Full draws it.
type rowsToy struct {
	Hops int `toml:"layers" range:"[1,64]" doc:"number of hops"`
}

func (*rowsToy) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: "sampler.toy-rows", New: func() registry.Module { return &rowsToy{Hops: 2} },
		Doc: "test: full-neighbour blocks, with the row-sampling capability"}
}

func (r *rowsToy) Layers() int { return r.Hops }

func (r *rowsToy) Sample(ctx context.Context, g *graph.CSR, seeds []int32, rng uint64) ([]sampling.Block, error) {
	return sampling.Full{Hops: r.Hops}.Sample(ctx, g, seeds, rng)
}

func (r *rowsToy) RowFanouts() ([]int, bool) { return sampling.Full{Hops: r.Hops}.RowFanouts() }

func (r *rowsToy) SampleRows(g *graph.CSR, rows, dst []int32, l, fanout int, replace bool, rng uint64) ([]int64, []int32, error) {
	return sampling.Full{Hops: r.Hops}.SampleRows(g, rows, dst, l, fanout, replace, rng)
}

// noRowsToy samples like rowsToy but lacks the capability.
type noRowsToy struct {
	Hops int `toml:"layers" range:"[1,64]" doc:"number of hops"`
}

func (*noRowsToy) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: "sampler.toy-no-rows", New: func() registry.Module { return &noRowsToy{Hops: 2} },
		Doc: "test: full-neighbour blocks, without the row-sampling capability"}
}

func (r *noRowsToy) Layers() int { return r.Hops }

func (r *noRowsToy) Sample(ctx context.Context, g *graph.CSR, seeds []int32, rng uint64) ([]sampling.Block, error) {
	return sampling.Full{Hops: r.Hops}.Sample(ctx, g, seeds, rng)
}

func init() {
	registry.Register(new(rowsToy))
	registry.Register(new(noRowsToy))
}

// TestDistMiniRowSampler: distmini takes any sampler with the capability
// sampling.RowSampler (a toy one trains as sampler.full does, on two
// ranks) and refuses one without it, naming the capability.
func TestDistMiniRowSampler(t *testing.T) {
	sets := []string{"train.mode=distmini", "train.batch_size=64", `train.dtype="float64"`}
	cfg := testkit.MustParse(t, strategytest.CoraBase, append(sets, `sampler.name="toy-no-rows"`)...)
	err := (*DistMini)(nil).CheckConfig(cfg)
	if err == nil || !strings.Contains(err.Error(), "sampling.RowSampler") || !strings.Contains(err.Error(), "sampler.name") {
		t.Fatalf("distmini with a sampler without the capability: %v", err)
	}
	toy := runRanks(t, 2, 1, strategytest.CoraBase, append(sets, `sampler.name="toy-rows"`)...)
	full := runRanks(t, 2, 1, strategytest.CoraBase, append(sets, `sampler.name="full"`, "sampler.layers=2")...)
	for r := range toy {
		if d := testkit.MaxRelDiff(t, toy[r].params, full[r].params); d != 0 {
			t.Fatalf("rank %d: the toy row sampler's parameters differ from sampler.full's by %g", r, d)
		}
	}
}
