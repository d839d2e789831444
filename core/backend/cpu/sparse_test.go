package cpu

import (
	"context"
	"fmt"
	"math"
	"testing"

	"strata/core/backend"
	"strata/core/backend/backendtest/ref"
	"strata/core/graph"
	"strata/core/tensor"
)

var ctx = context.Background()

func TestSpMM(t *testing.T) {
	for _, gc := range graphCases {
		for _, trans := range []bool{false, true} {
			for _, wmode := range []string{"own", "E", "EH"} {
				for _, beta := range []float64{0, 1} {
					name := fmt.Sprintf("%s/trans=%v/w=%s/beta=%v", gc.name, trans, wmode, beta)
					t.Run(name, func(t *testing.T) {
						forAll(t, func(c *tc) []float64 { return spmmCase(c, gc, trans, wmode, beta) })
					})
				}
			}
		}
	}
}

func spmmCase(c *tc, gc graphCase, trans bool, wmode string, beta float64) []float64 {
	g := c.graph(gc)
	a, err := c.be.UploadGraph(g, tensor.Host)
	c.ok(err)
	dst, _ := edges(g)
	in, out := g.NumCols, g.NumRows
	if trans {
		in, out = out, in
	}
	var res []float64
	for _, hc := range [][2]int{{1, 1}, {1, 3}, {1, 8}, {1, 13}, {1, 40}, {1, 67}, {1, 128}, {2, 3}, {3, 8}, {4, 17}} {
		h, cc := hc[0], hc[1]
		if wmode != "EH" && h > 1 {
			continue
		}
		f := h * cc
		x, xv := c.rand(in, f)
		y, yv := c.rand(out, f)
		var w *tensor.Tensor
		var wv []float64 // nil: the adjacency's own values
		wh := 0
		switch wmode {
		case "E":
			w, wv = c.rand(len(dst))
		case "EH":
			w, wv = c.rand(len(dst), h)
			wh = h
		}
		want := ref.SpMM(c.ar(), g, trans, wv, wh, xv, h, cc, beta, yv)
		c.ok(c.be.SpMM(ctx, a, trans, w, x, beta, y))
		got := get(y)
		c.near(fmt.Sprintf("SpMM h=%d c=%d", h, cc), got, want)
		res = append(res, got...)
	}
	return res
}

func TestSpMMMaxAndScatterArgmax(t *testing.T) {
	for _, gc := range graphCases {
		for _, adt := range []tensor.DType{tensor.Int32, tensor.Int64} {
			t.Run(gc.name+"/"+adt.String(), func(t *testing.T) {
				forAll(t, func(c *tc) []float64 {
					g := c.graph(gc)
					a, err := c.be.UploadGraph(g, tensor.Host)
					c.ok(err)
					var res []float64
					for _, f := range []int{1, 5, 8, 19, 64} {
						x, xv := c.rand(g.NumCols, f)
						y := c.zeros(g.NumRows, f)
						am, err := c.be.Alloc(adt, []int{g.NumRows, f}, tensor.Host)
						c.ok(err)
						c.ok(c.be.SpMMMax(ctx, a, x, y, am))
						wantY := make([]float64, g.NumRows*f)
						wantA := make([]float64, g.NumRows*f)
						for i := range g.NumRows {
							for j := range f {
								best, arg := 0.0, -1
								for k := g.Indptr[i]; k < g.Indptr[i+1]; k++ {
									s := int(g.Col(k))
									if arg < 0 || xv[s*f+j] > best {
										best, arg = xv[s*f+j], s
									}
								}
								wantY[i*f+j], wantA[i*f+j] = best, float64(arg)
							}
						}
						c.same("SpMMMax y", get(y), wantY)
						c.same("SpMMMax argmax", get(am), wantA)
						// ScatterArgmax of the recorded argmax into a non-zero dx.
						dy, dyv := c.rand(g.NumRows, f)
						dx, dxv := c.rand(g.NumCols, f)
						c.ok(c.be.ScatterArgmax(am, dy, dx))
						to := func(i, j int) int { return int(wantA[i*f+j]) }
						c.near("ScatterArgmax", get(dx), ref.Scatter(c.ar(), dyv, to, g.NumRows, f, dxv))
						res = append(append(append(res, get(y)...), get(am)...), get(dx)...)
					}
					return res
				})
			})
		}
	}
}

func TestEdgeOps(t *testing.T) {
	for _, gc := range graphCases {
		t.Run(gc.name, func(t *testing.T) {
			forAll(t, func(c *tc) []float64 {
				g := c.graph(gc)
				a, err := c.be.UploadGraph(g, tensor.Host)
				c.ok(err)
				dst, _ := edges(g)
				e := len(dst)
				var res []float64
				for _, hc := range [][2]int{{1, 1}, {1, 7}, {1, 16}, {1, 45}, {2, 8}, {3, 5}, {4, 33}} {
					h, cc := hc[0], hc[1]
					f := h * cc
					// SDDMM
					x, xv := c.rand(g.NumRows, f)
					y, yv := c.rand(g.NumCols, f)
					out := c.zeros(e, h)
					c.ok(c.be.SDDMM(ctx, a, x, y, out))
					c.near("SDDMM", get(out), ref.SDDMM(c.ar(), g, xv, yv, h, cc))
					res = append(res, get(out)...)
					if cc > 1 {
						continue
					}
					// h-wide edge ops, with H = f here.
					h = f
					u, uv := c.rand(g.NumCols, h)
					v, vv := c.rand(g.NumRows, h)
					ev := c.zeros(e, h)
					c.ok(c.be.UAddV(ctx, a, u, v, ev))
					c.near("UAddV", get(ev), ref.UAddV(c.ar(), g, uv, vv, h))
					res = append(res, get(ev)...)

					sc, scv := c.rand(e, h)
					for _, toSrc := range []bool{false, true} {
						n := g.NumRows
						if toSrc {
							n = g.NumCols
						}
						o := c.zeros(n, h)
						c.ok(c.be.EdgeReduce(ctx, a, toSrc, sc, o))
						c.near(fmt.Sprintf("EdgeReduce toSrc=%v", toSrc), get(o), ref.EdgeReduce(c.ar(), g, toSrc, scv, h))
						res = append(res, get(o)...)
					}

					// EdgeSoftmax and its backward.
					for i := range scv {
						scv[i] *= 30 // wide range: the max shift matters
					}
					sc = c.put([]int{e, h}, roundAll(c.dt, scv))
					scv = get(sc)
					sm := c.zeros(e, h)
					c.ok(c.be.EdgeSoftmax(ctx, a, sc, sm))
					c.near("EdgeSoftmax", get(sm), ref.EdgeSoftmax(c.ar(), g, scv, h))
					smv := get(sm)
					dout, dv := c.rand(e, h)
					ds := c.zeros(e, h)
					c.ok(c.be.EdgeSoftmaxBackward(ctx, a, sm, dout, ds))
					c.near("EdgeSoftmaxBackward", get(ds), ref.EdgeSoftmaxBackward(c.ar(), g, smv, dv, h))
					res = append(append(res, get(sm)...), get(ds)...)
				}
				return res
			})
		})
	}
}

func roundAll(dt tensor.DType, v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = round(dt, x)
	}
	return out
}

func TestGraphCancel(t *testing.T) {
	c := newTC(t, 2, tensor.Float32, 1)
	g := randGraph(c.rng, 50, 50, false, false)
	a, err := c.be.UploadGraph(g, tensor.Host)
	c.ok(err)
	x, _ := c.rand(50, 4)
	y := c.zeros(50, 4)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.be.SpMM(cctx, a, false, nil, x, 0, y); err != context.Canceled {
		t.Fatalf("SpMM with a cancelled context: %v, want context.Canceled", err)
	}
}

func TestUploadGraph(t *testing.T) {
	c := newTC(t, 3, tensor.Float32, 2)
	g := randGraph(c.rng, 300, 200, false, true)
	before := c.be.Stats().InUse[tensor.Host]
	a, err := c.be.UploadGraph(g, tensor.Host)
	c.ok(err)
	gr := a.(*Graph)
	if a.Rows() != 300 || a.Cols() != 200 || a.NNZ() != g.NNZ() || a.Tier() != tensor.Host {
		t.Fatalf("adjacency %d×%d nnz %d", a.Rows(), a.Cols(), a.NNZ())
	}
	// The transpose is built on first use, its memory reserved at the
	// upload; it lists, per source, its destinations in edge order.
	reserved := c.be.Stats().InUse[tensor.Host]
	if gr.bwd.indptr != nil {
		t.Fatal("the transpose was built at the upload")
	}
	bwd := gr.transposed()
	if got := c.be.Stats().InUse[tensor.Host]; got != reserved {
		t.Fatalf("in use %d after the transpose, %d before", got, reserved)
	}
	for j := range 200 {
		last := int64(-1)
		for p := bwd.indptr[j]; p < bwd.indptr[j+1]; p++ {
			e := bwd.perm[p]
			if e <= last || g.Col(e) != int64(j) || int64(bwd.idx32[p]) > 300 {
				t.Fatalf("transposed entry %d of row %d: edge %d", p, j, e)
			}
			last = e
			if gr.tvals32[p] != g.Values[e] {
				t.Fatalf("transposed value %d", p)
			}
		}
	}
	if c.be.Stats().InUse[tensor.Host] <= before {
		t.Fatal("graph memory not accounted")
	}
	c.be.ReleaseGraph(a)
	if got := c.be.Stats().InUse[tensor.Host]; got != before {
		t.Fatalf("in use %d after ReleaseGraph, want %d", got, before)
	}
	x, _ := c.rand(200, 2)
	y := c.zeros(300, 2)
	if err := c.be.SpMM(ctx, a, false, nil, x, 0, y); err == nil {
		t.Fatal("SpMM on a released graph succeeded")
	}
}

// TestErrors checks that malformed calls return errors naming the op.
func TestErrors(t *testing.T) {
	c := newTC(t, 2, tensor.Float32, 3)
	g := randGraph(c.rng, 10, 12, false, false)
	a, err := c.be.UploadGraph(g, tensor.Host)
	c.ok(err)
	x, _ := c.rand(10, 4)
	y := c.zeros(10, 4)
	x64, _ := (&tc{t: t, be: c.be, dt: tensor.Float64, rng: c.rng}).rand(12, 4)
	idx := c.ints(tensor.Int32, []int64{0, 11})
	released := c.zeros(3)
	c.be.Release(released)
	cases := []struct {
		op  string
		err error
	}{
		{"SpMM", c.be.SpMM(ctx, a, false, nil, x, 0, y)},
		{"SpMM", c.be.SpMM(ctx, a, false, nil, x64, 0, y)},
		{"SpMM", c.be.SpMM(ctx, nil, false, nil, x, 0, y)},
		{"SpMM", c.be.SpMM(ctx, a, true, c.zeros(3), x, 0, c.zeros(12, 4))},
		{"SpMMMax", c.be.SpMMMax(ctx, a, x, y, y)},
		{"SDDMM", c.be.SDDMM(ctx, a, x, x, c.zeros(int(a.NNZ()), 3))},
		{"UAddV", c.be.UAddV(ctx, a, x, x, y)},
		{"EdgeReduce", c.be.EdgeReduce(ctx, a, true, y, y)},
		{"EdgeSoftmax", c.be.EdgeSoftmax(ctx, a, y, y)},
		{"EdgeSoftmaxBackward", c.be.EdgeSoftmaxBackward(ctx, a, y, y, y)},
		{"Gather", c.be.Gather(x, idx, c.zeros(2, 4))},
		{"ScatterAdd", c.be.ScatterAdd(c.zeros(2, 4), idx, y)},
		{"ScatterArgmax", c.be.ScatterArgmax(y, y, y)},
		{"CopyCols", c.be.CopyCols(y, 2, x, 0, 3)},
		{"HeadDot", c.be.HeadDot(x, c.zeros(3, 3), c.zeros(10, 3))},
		{"HeadDotBackward", c.be.HeadDotBackward(x, c.zeros(2, 2), nil, nil, nil)},
		{"GEMM", c.be.GEMM(false, false, 1, x, x, 0, y)},
		{"GEMM", c.be.GEMM(false, false, 1, x, c.zeros(4, 4), 0, x)},
		{"Apply", c.be.Apply(backend.ReLU, 0, x, c.zeros(3))},
		{"Apply", c.be.Apply(backend.Unary(99), 0, x, y)},
		{"ApplyBackward", c.be.ApplyBackward(backend.Tanh, 0, x, nil, x, y)},
		{"Elementwise", c.be.Elementwise(backend.Add, x, c.zeros(3), y)},
		{"Axpby", c.be.Axpby(1, x, 1, released)},
		{"Fill", c.be.Fill(nil, 1)},
		{"SumRows", c.be.SumRows(x, c.zeros(5))},
		{"BatchNorm", c.be.BatchNorm(x, c.zeros(4), c.zeros(4), y, c.zeros(4), c.zeros(3), 1e-5)},
		{"BatchNormBackward", c.be.BatchNormBackward(x, c.zeros(4), y, c.zeros(4), c.zeros(4), x64, c.zeros(4), c.zeros(4))},
		{"BatchNormInfer", c.be.BatchNormInfer(x, c.zeros(4), c.zeros(4), c.zeros(4), c.zeros(4), c.zeros(9, 4), 1e-5)},
		{"ArgmaxRows", c.be.ArgmaxRows(x, c.zeros(10))},
		{"AdamStep", c.be.AdamStep(x, x, x, x, 1, 0.9, 0.99, 1e-8, 0, 0)},
		{"DropoutMask", c.be.DropoutMask(1, nil, 1.5, x)},
		{"Upload", c.be.Upload(x, []float32{1})},
		{"Download", c.be.Download(x, []float64{1})},
		{"Copy", c.be.Copy(x, x64)},
	}
	_, err = c.be.SoftmaxCrossEntropy(x, c.ints(tensor.Int32, make([]int64, 10)), idx, nil)
	cases = append(cases, struct {
		op  string
		err error
	}{"SoftmaxCrossEntropy", err})
	_, err = c.be.Alloc(tensor.Float32, []int{2}, "device0")
	cases = append(cases, struct {
		op  string
		err error
	}{"Alloc", err})
	_, err = c.be.UploadGraph(&graph.CSR{NumRows: 1, NumCols: 1, Indptr: []int64{-1, 0}}, tensor.Host)
	cases = append(cases, struct {
		op  string
		err error
	}{"UploadGraph", err})
	for i, tt := range cases {
		if tt.err == nil {
			t.Errorf("case %d (%s): no error", i, tt.op)
		} else if want := "cpu: " + tt.op + ": "; len(tt.err.Error()) < len(want) || tt.err.Error()[:len(want)] != want {
			t.Errorf("case %d: error %q does not start with %q", i, tt.err, want)
		}
	}
	if err := c.be.SpMM(ctx, a, false, nil, c.zeros(10, 4), 0, y); err == nil || err.Error() != "cpu: SpMM: x has 10 rows, adjacency has 12 columns" {
		t.Errorf("SpMM shape error: %v", err)
	}
}

// TestSpMMScatterTranspose: Aᵀ·x by scattering A's entries
// (Graph.ScatterTranspose) equals, bit for bit, the product through the
// transposed CSR, for every graph case, dtype, head layout and weight
// mode, with 1 and 4 threads, and builds no transpose; with beta ≠ 0 it
// takes the transpose as before.
func TestSpMMScatterTranspose(t *testing.T) {
	for _, gc := range graphCases {
		for _, wmode := range []string{"own", "E", "EH"} {
			t.Run(gc.name+"/"+wmode, func(t *testing.T) {
				forAll(t, func(c *tc) []float64 {
					g := c.graph(gc)
					viaT, err := c.be.UploadGraph(g, tensor.Host)
					c.ok(err)
					scat, err := c.be.UploadGraph(g, tensor.Host)
					c.ok(err)
					scat.(*Graph).ScatterTranspose()
					var res []float64
					for _, hc := range [][2]int{{1, 1}, {1, 8}, {1, 13}, {1, 128}, {2, 3}, {4, 17}} {
						h, cc := hc[0], hc[1]
						if wmode != "EH" && h > 1 {
							continue
						}
						x, _ := c.rand(g.NumRows, h*cc)
						var w *tensor.Tensor
						switch wmode {
						case "E":
							w, _ = c.rand(int(g.NNZ()))
						case "EH":
							w, _ = c.rand(int(g.NNZ()), h)
						}
						want, _ := c.rand(g.NumCols, h*cc)
						got, _ := c.rand(g.NumCols, h*cc) // stale values: overwritten
						c.ok(c.be.SpMM(ctx, viaT, true, w, x, 0, want))
						c.ok(c.be.SpMM(ctx, scat, true, w, x, 0, got))
						gv, wv := get(got), get(want)
						for i := range wv {
							if math.Float64bits(gv[i]) != math.Float64bits(wv[i]) {
								t.Fatalf("h=%d c=%d: element %d scattered %v, through the transpose %v", h, cc, i, gv[i], wv[i])
							}
						}
						res = append(res, gv...)
					}
					if sg := scat.(*Graph); sg.bwd.indptr != nil && (wmode != "own" || c.dt == tensor.Float32 || sg.vals32 == nil) {
						t.Errorf("the scattering graph built its transpose")
					}
					return res
				})
			})
		}
	}
}
