package cpu

import (
	"context"
	"fmt"
	"math"
	"testing"

	"strata/core/backend"
	"strata/core/tensor"
)

// TestSpMMBiasActMatchesUnfused checks the fused aggregation epilogue
// against its unfused sequence, SpMM then Elementwise(Add) of the bias
// then Apply, bit for bit: every graph case, with and without edge
// weights, several activations (the vector ReLU path and the generic
// one), over chunk boundaries (tiny grains), on 1 and 3 threads.
func TestSpMMBiasActMatchesUnfused(t *testing.T) {
	tinyGrains(t)
	ctx := context.Background()
	for _, dt := range dtypes {
		for _, gc := range graphCases {
			for _, act := range []backend.Unary{backend.Identity, backend.ReLU, backend.ELU, backend.LeakyReLU, backend.Tanh} {
				for _, weighted := range []bool{false, true} {
					for _, threads := range []int{1, 3} {
						t.Run(fmt.Sprintf("%v/%s/act=%d/w=%v/threads=%d", dt, gc.name, act, weighted, threads), func(t *testing.T) {
							c := newTC(t, threads, dt, 21)
							g := c.graph(gc)
							a, err := c.be.UploadGraph(g, tensor.Host)
							c.ok(err)
							defer c.be.ReleaseGraph(a)
							const f = 13
							x, _ := c.rand(gc.cols, f)
							bias, _ := c.rand(f)
							var w *tensor.Tensor
							if weighted {
								w, _ = c.rand(int(g.NNZ()))
							}
							want, got := c.zeros(gc.rows, f), c.zeros(gc.rows, f)
							c.ok(c.be.SpMM(ctx, a, false, w, x, 0, want))
							c.ok(c.be.Elementwise(backend.Add, want, bias, want))
							c.ok(c.be.Apply(act, 0.3, want, want))
							c.ok(c.be.SpMMBiasAct(ctx, a, w, x, bias, act, 0.3, got))
							wv, gv := get(want), get(got)
							for i := range wv {
								if math.Float64bits(wv[i]) != math.Float64bits(gv[i]) {
									t.Fatalf("y[%d] = %v, unfused %v", i, gv[i], wv[i])
								}
							}
						})
					}
				}
			}
		}
	}
}
