package engine

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"strata/core/backend/cpu"
	"strata/core/graph"
	"strata/core/graph/synth"
	"strata/core/ir"
	"strata/core/tensor"
)

// BenchmarkAggregateComposed compares the fused built-in aggregation
// (aggregate sum|mean: one SpMM) with the composed form an aggregator
// module records (gather_src, then segment_sum|segment_mean: a gather and
// an SpMM over the incidence matrix; fused into the built-in's SpMM, see
// fuseGathers) and the unfused kernels ("edges": the gathered rows scaled
// by 1 before the reduction, so the gather, the [E,C] buffer and the
// incidence SpMM all run), forward and forward+backward, on an
// R-MAT graph of 2^STRATA_BENCH_SCALE nodes (default 16;
// docs/performance/aggregators.md uses 20), average degree 8, 16 columns.
func BenchmarkAggregateComposed(b *testing.B) {
	scale := 16
	if s, err := strconv.Atoi(os.Getenv("STRATA_BENCH_SCALE")); err == nil && s > 0 && s <= 24 {
		scale = s
	}
	ds, err := synth.RMAT(synth.RMATOptions{Scale: scale, EdgeFactor: 8, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	csr := graph.RemoveSelfLoops(ds.Graph)
	const cols = 16
	for _, red := range []string{"sum", "mean"} {
		for _, form := range []string{"builtin", "composed", "edges"} {
			bld := ir.NewBuilder()
			x := bld.Input("x", cols)
			h := bld.MatMul(x, bld.Param("W", []int64{cols, cols}, "glorot"))
			g := bld.Graph("adj")
			var y int32
			if form == "builtin" {
				y = bld.Aggregate(g, h, red)
			} else {
				kind := ir.OpSegmentSum
				if red == "mean" {
					kind = ir.OpSegmentMean
				}
				e := bld.Table(ir.OpGatherSrc, g, h, 0)
				if form == "edges" {
					e = bld.Unary(ir.OpScale, e, 1)
				}
				y = bld.Table(kind, g, e, 0)
			}
			bld.Output(y)
			gr, err := bld.Finish()
			if err != nil {
				b.Fatal(err)
			}
			be := cpu.New(cpu.Options{})
			a, err := be.UploadGraph(csr, tensor.Host)
			if err != nil {
				b.Fatal(err)
			}
			eg := &Graph{Adj: a}
			if form == "builtin" {
				w := graph.MeanNorm(csr)
				eg.MeanNorm, _ = be.Alloc(tensor.Float32, []int{len(w)}, tensor.Host)
				if err := be.Upload(eg.MeanNorm, w); err != nil {
					b.Fatal(err)
				}
			} else if eg.Edges, err = BindEdgeIndex(be, csr, tensor.Float32, tensor.Host); err != nil {
				b.Fatal(err)
			}
			xin, _ := be.Alloc(tensor.Float32, []int{csr.NumRows, cols}, tensor.Host)
			if err := be.Fill(xin, 0.5); err != nil {
				b.Fatal(err)
			}
			p, err := Compile(gr, Env{Backend: be, DType: tensor.Float32, Tier: tensor.Host, Graphs: map[string]*Graph{"adj": eg}, Input: xin}, 1)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			for _, pass := range []string{"forward", "train"} {
				b.Run(fmt.Sprintf("%s/%s/%s/scale%d", red, form, pass, scale), func(b *testing.B) {
					for b.Loop() {
						if err := p.Forward(ctx, Mode{Train: pass == "train"}); err != nil {
							b.Fatal(err)
						}
						if pass == "train" {
							if err := be.Fill(p.OutputGrad(), 1); err != nil {
								b.Fatal(err)
							}
							if err := p.Backward(ctx); err != nil {
								b.Fatal(err)
							}
						}
					}
				})
			}
			p.Release()
		}
	}
}
