package negative

import (
	"context"
	"math/rand/v2"

	"strata/core/graph"
	"strata/core/negative"
	"strata/core/registry"
)

// Uniform draws both endpoints of a negative uniformly over the nodes,
// independently: PyG's negative_sampling and the GAE peer
// (../shared/peers/linkpred.py: torch.randint(0, n, (m, 2))). Without
// exclude_positives a negative may be a self loop or an edge, as there.
type Uniform struct {
	negative.Base
}

func init() { registry.Register(new(Uniform)) }

// StrataModule registers negative.uniform, the namespace's default.
func (*Uniform) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{
		ID:      "negative.uniform",
		New:     func() registry.Module { return new(Uniform) },
		Doc:     "both endpoints uniform over the nodes, independently (PyG negative_sampling, GAE)",
		Default: true,
	}
}

// Bind implements negative.Sampler (the base).
func (u *Uniform) Bind(ctx context.Context, g *graph.CSR) error { return u.BindWith(ctx, u, g) }

// Draw implements negative.Sampler (the base).
func (u *Uniform) Draw(ctx context.Context, src, dst []int32, k int, seed uint64) ([]int32, []int32, error) {
	return u.DrawWith(ctx, u, src, dst, k, seed)
}

// Prepare implements negative.Drawer: nothing to prepare.
func (*Uniform) Prepare(context.Context, *graph.CSR) error { return nil }

// DrawPair implements negative.Drawer.
func (*Uniform) DrawPair(r *rand.Rand, n, _, _ int32) (int32, int32) {
	return r.Int32N(n), r.Int32N(n)
}

// Marginals implements negative.Describer: both endpoints uniform.
func (u *Uniform) Marginals() (src, dst negative.Law) {
	return negative.Law{P: uniformP(u.NumNodes())}, negative.Law{P: uniformP(u.NumNodes())}
}
