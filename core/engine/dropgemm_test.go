package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"strata/core/backend"
	"strata/core/ir"
	"strata/core/tensor"
)

// deadLeadLayer reads its input's dropout with two matmuls whose first
// (the group's lead) gets no gradient (only a degree, which has none,
// reads it): the second one's weight gradient must still be made, at the
// lead's backward.
func deadLeadLayer(b *ir.Builder, in, out int64, last bool) int32 {
	x := b.Unary(ir.OpDropout, b.Input("x", in), 0.5)
	a := b.MatMul(x, b.Param("w", []int64{in, out}, "glorot"))
	h := b.Aggregate(b.Graph("adj_self"), b.MatMul(x, b.Param("wr", []int64{in, out}, "glorot")), "gcn")
	h = b.Binary(ir.OpAdd, h, b.Table(ir.OpDegree, b.Graph("adj"), a, 0))
	if !last {
		h = b.Unary(ir.OpReLU, h, 0)
	}
	return h
}

// unsharedDropouts offers the cpu backend's backend.Backend methods and
// of its optional kernels only DropoutGEMM and DropoutApply, not
// DropoutGEMMs: the engine runs DropoutGEMM once per product of a group.
type unsharedDropouts struct {
	backend.Backend
}

func (u unsharedDropouts) DropoutGEMM(seed uint64, rows *tensor.Tensor, p float64, transX bool, x, b *tensor.Tensor, beta float64, c, scratch, keep *tensor.Tensor) error {
	return u.Backend.(backend.DropoutGEMMer).DropoutGEMM(seed, rows, p, transX, x, b, beta, c, scratch, keep)
}

func (u unsharedDropouts) DropoutApply(seed uint64, rows *tensor.Tensor, p float64, x, mask, y *tensor.Tensor) error {
	return u.Backend.(dropoutApplier).DropoutApply(seed, rows, p, x, mask, y)
}

// TestDropoutGroupShared binds models whose first layer reads its input's
// dropout with two matmuls (dropmm: both get gradients; deadlead: the
// first gets none) to a 9,000-node graph, so that the dropout is fused
// and its two matmuls share one masking pass (the group's lead runs both
// products, forward and weight gradient), and checks two training steps
// and an evaluation forward (outputs and parameter gradients) bit for bit
// against the reference binding without sharing (the unfused sequence),
// in float32 (with keep bits) and float64, on the cpu backend and on one
// without DropoutGEMMs (one DropoutGEMM per product, at the same points).
func TestDropoutGroupShared(t *testing.T) {
	f := randomBlockFixture(5, 9000, 20000)
	ctx := context.Background()
	bes := map[string]backend.Backend{"shared": f.be, "per-product": unsharedDropouts{Backend: f.be}}
	if _, ok := bes["per-product"].(backend.DropoutGEMMSharer); ok {
		t.Fatal("the per-product backend shares")
	}
	for _, name := range []string{"dropmm", "deadlead"} {
		layer := map[string]func(*ir.Builder, int64, int64, bool) int32{"dropmm": dropMatMulLayer, "deadlead": deadLeadLayer}[name]
		g := linkLayers(t, layer, []int64{inDim, width, classes})
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
			for _, beName := range []string{"shared", "per-product"} {
				t.Run(fmt.Sprintf("%s/%v/%s", name, dt, beName), func(t *testing.T) {
					var got [2][][]float64
					for k, share := range []bool{true, false} {
						ps, err := NewParams(g, f.be, dt, tensor.Host, 3)
						if err != nil {
							t.Fatal(err)
						}
						defer ps.Release()
						env := f.fullEnv(t, dt)
						env.Backend = bes[beName]
						if name == "deadlead" { // the degree op reads the edge index
							ei, err := BindEdgeIndex(f.be, f.adj, dt, tensor.Host)
							if err != nil {
								t.Fatal(err)
							}
							defer ei.Release(f.be)
							gr := *env.Graphs["adj"]
							gr.Edges = ei
							env.Graphs["adj"] = &gr
						}
						p, err := bindShare(g, env, ps, nil, share)
						if err != nil {
							t.Fatal(err)
						}
						defer p.Release()
						var groups [][]int32
						for i := range p.g.Ops {
							if p.aux[i].dropGroup != nil {
								groups = append(groups, p.aux[i].dropGroup)
							}
						}
						if share && (len(groups) != 1 || len(groups[0]) != 2) || !share && len(groups) != 0 {
							t.Fatalf("share=%v: groups %v, want one of two matmuls when sharing", share, groups)
						}
						got[k] = stepTrace(t, ctx, f.be, p, 7)
					}
					nonzero := false
					for i := range got[0] {
						if !slices.Equal(got[0][i], got[1][i]) {
							t.Fatalf("result %d differs: grouped %v, unfused %v", i, got[0][i][:min(4, len(got[0][i]))], got[1][i][:min(4, len(got[1][i]))])
						}
						nonzero = nonzero || slices.ContainsFunc(got[0][i], func(v float64) bool { return v != 0 })
					}
					if !nonzero {
						t.Fatal("every result is zero")
					}
				})
			}
		}
	}
}
