package cpu

import (
	"fmt"
	"math"
	"testing"

	"strata/core/backend"
	"strata/core/backend/backendtest/ref"
	"strata/core/ir"
	"strata/core/tensor"
	"strata/internal/floattol"
)

func TestGEMM(t *testing.T) {
	for _, s := range [][3]int{{5, 7, 3}, {33, 17, 9}, {1, 1, 1}, {64, 128, 40}, {4, 0, 3}, {600, 33, 300}, {5, 9000, 6}} {
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			for _, beta := range []float64{0, 0.5} {
				t.Run(fmt.Sprintf("%v/%v/%v", s, tr, beta), func(t *testing.T) {
					forAll(t, func(c *tc) []float64 {
						m, k, n := s[0], s[1], s[2]
						ash, bsh := []int{m, k}, []int{k, n}
						if tr[0] {
							ash = []int{k, m}
						}
						if tr[1] {
							bsh = []int{n, k}
						}
						a, av := c.rand(ash...)
						b, bv := c.rand(bsh...)
						y, yv := c.rand(m, n)
						c.ok(c.be.GEMM(tr[0], tr[1], 1.5, a, b, beta, y))
						c.near("GEMM", get(y), ref.GEMM(c.ar(), tr[0], tr[1], m, n, k, 1.5, av, bv, beta, yv))
						return get(y)
					})
				})
			}
		}
	}
}

func TestGatherScatterCopyCols(t *testing.T) {
	for _, idt := range []tensor.DType{tensor.Int32, tensor.Int64} {
		for _, f := range []int{1, 3, 16, 37, 128} {
			t.Run(fmt.Sprintf("%v/f=%d", idt, f), func(t *testing.T) {
				forAll(t, func(c *tc) []float64 {
					m, n := 23, 61
					iv := make([]int64, n)
					for i := range iv {
						iv[i] = int64(c.rng.IntN(m)) // repeats
					}
					idx := c.ints(idt, iv)
					x, xv := c.rand(m, f)
					y := c.zeros(n, f)
					c.ok(c.be.Gather(x, idx, y))
					want := make([]float64, n*f)
					for i, r := range iv {
						copy(want[i*f:(i+1)*f], xv[int(r)*f:int(r+1)*f])
					}
					c.same("Gather", get(y), want)

					src, sv := c.rand(n, f)
					dst, dv := c.rand(m, f)
					c.ok(c.be.ScatterAdd(src, idx, dst))
					c.near("ScatterAdd", get(dst), ref.Scatter(c.ar(), sv, func(i, _ int) int { return int(iv[i]) }, n, f, dv))

					wide, wv := c.rand(n, f+5)
					c.ok(c.be.CopyCols(wide, 2, src, 0, f))
					for i := range n {
						copy(wv[i*(f+5)+2:i*(f+5)+2+f], sv[i*f:(i+1)*f])
					}
					c.same("CopyCols", get(wide), wv)
					return append(append(get(y), get(dst)...), get(wide)...)
				})
			})
		}
	}
}

func TestHeadDot(t *testing.T) {
	for _, hc := range [][2]int{{1, 1}, {1, 16}, {2, 7}, {4, 33}, {8, 8}} {
		t.Run(fmt.Sprint(hc), func(t *testing.T) {
			forAll(t, func(c *tc) []float64 {
				h, cc, n := hc[0], hc[1], 53
				f := h * cc
				x, xv := c.rand(n, f)
				a, av := c.rand(h, cc)
				y := c.zeros(n, h)
				c.ok(c.be.HeadDot(x, a, y))
				c.near("HeadDot", get(y), ref.HeadDot(c.ar(), xv, av, n, h, cc))
				dy, dyv := c.rand(n, h)
				dx, dxv := c.rand(n, f)
				da, dav := c.rand(h, cc)
				c.ok(c.be.HeadDotBackward(x, a, dy, dx, da))
				wdx, wda := ref.HeadDotBackward(c.ar(), xv, av, dyv, dxv, dav, n, h, cc)
				c.near("HeadDotBackward dx", get(dx), wdx)
				c.near("HeadDotBackward da", get(da), wda)
				return append(append(get(y), get(dx)...), get(da)...)
			})
		})
	}
}

var unaries = []backend.Unary{backend.Identity, backend.ReLU, backend.LeakyReLU, backend.ELU, backend.Sigmoid, backend.Tanh, backend.Exp, backend.Neg}

func TestApply(t *testing.T) {
	for _, f := range unaries {
		t.Run(fmt.Sprint(f), func(t *testing.T) {
			forAll(t, func(c *tc) []float64 {
				x, xv := c.rand(31, 7)
				for i := range xv {
					xv[i] = round(c.dt, 4*xv[i])
				}
				x = c.put([]int{31, 7}, xv)
				y := c.zeros(31, 7)
				c.ok(c.be.Apply(f, 0.2, x, y))
				yv := get(y)
				dy, dyv := c.rand(31, 7)
				dx := c.zeros(31, 7)
				c.ok(c.be.ApplyBackward(f, 0.2, x, y, dy, dx))
				// The gradient from x, the computed y and dy, as the kernel.
				m := c.model(f)
				wy, wd := make([]ref.Val, len(xv)), make([]ref.Val, len(xv))
				for i, v := range xv {
					wy[i] = m.Fwd(c.ar(), floattol.In(v), 0.2)
					wd[i] = m.Bwd(c.ar(), floattol.In(v), floattol.In(yv[i]), floattol.In(dyv[i]), 0.2)
				}
				c.near("Apply", yv, wy)
				c.near("ApplyBackward", get(dx), wd)
				c.ok(c.be.Apply(f, 0.2, x, x)) // in place
				c.near("Apply in place", get(x), wy)
				return append(yv, get(dx)...)
			})
		})
	}
}

func TestElementwise(t *testing.T) {
	for _, op := range []backend.Binary{backend.Add, backend.Sub, backend.Mul, backend.Div} {
		for _, bshape := range [][]int{{19, 6}, {6}, {1}} {
			t.Run(fmt.Sprint(op, bshape), func(t *testing.T) {
				forAll(t, func(c *tc) []float64 {
					a, av := c.rand(19, 6)
					b, bv := c.rand(bshape...)
					y := c.zeros(19, 6)
					c.ok(c.be.Elementwise(op, a, b, y))
					want, err := ref.Binary(c.ar(), ir.BinarySpec(uint8(op)).Name, av, bv)
					c.ok(err)
					c.near("Elementwise", get(y), want)
					return get(y)
				})
			})
		}
	}
}

func TestAxpbyFillSumRows(t *testing.T) {
	forAll(t, func(c *tc) []float64 {
		var res []float64
		for _, beta := range []float64{0, 0.7} {
			x, xv := c.rand(40, 3)
			y, yv := c.rand(40, 3)
			c.ok(c.be.Axpby(1.3, x, beta, y))
			ar := c.ar()
			want := make([]ref.Val, len(yv))
			for i := range yv {
				want[i] = ar.Mul(ar.Param(1.3), floattol.In(xv[i]))
				if beta != 0 {
					want[i] = ar.Add(want[i], ar.Mul(ar.Param(beta), floattol.In(yv[i])))
				}
			}
			c.near("Axpby", get(y), want)
			res = append(res, get(y)...)
		}
		for _, dt := range []tensor.DType{c.dt, tensor.Int32, tensor.Int64} {
			z, err := c.be.Alloc(dt, []int{5, 5}, tensor.Host)
			c.ok(err)
			c.ok(c.be.Fill(z, 3))
			for _, v := range get(z) {
				if v != 3 {
					c.t.Fatalf("Fill %v: %v", dt, v)
				}
			}
		}
		for _, cols := range []int{1, 5, 300} {
			x, xv := c.rand(257, cols)
			y := c.zeros(cols)
			c.ok(c.be.SumRows(x, y))
			c.near("SumRows", get(y), ref.SumRows(c.ar(), xv, 257, cols))
			res = append(res, get(y)...)
		}
		return res
	})
}

func TestBatchNorm(t *testing.T) {
	forAll(t, func(c *tc) []float64 {
		n, k, eps := 70, 9, 1e-5
		x, xv := c.rand(n, k)
		gamma, gv := c.rand(k)
		beta, bv := c.rand(k)
		y, mean, inv := c.zeros(n, k), c.zeros(k), c.zeros(k)
		c.ok(c.be.BatchNorm(x, gamma, beta, y, mean, inv, eps))
		wy, wm, wi := ref.BatchNorm(c.ar(), xv, gv, bv, n, k, eps)
		c.near("BatchNorm mean", get(mean), wm)
		c.near("BatchNorm invStd", get(inv), wi)
		c.near("BatchNorm y", get(y), wy)

		// The backward from the statistics the forward stored.
		dy, dyv := c.rand(n, k)
		dx, dg, db := c.zeros(n, k), c.zeros(k), c.zeros(k)
		c.ok(c.be.BatchNormBackward(x, gamma, dy, mean, inv, dx, dg, db))
		wdx, wdg, wdb := ref.BatchNormBackward(c.ar(), xv, gv, dyv, get(mean), get(inv), n, k)
		c.near("BatchNormBackward dbeta", get(db), wdb)
		c.near("BatchNormBackward dgamma", get(dg), wdg)
		c.near("BatchNormBackward dx", get(dx), wdx)

		vr, vv := c.rand(k)
		for i := range vv {
			vv[i] = round(c.dt, vv[i]+1.5)
		}
		vr = c.put([]int{k}, vv)
		yi := c.zeros(n, k)
		c.ok(c.be.BatchNormInfer(x, gamma, beta, mean, vr, yi, eps))
		c.near("BatchNormInfer", get(yi), ref.BatchNormInfer(c.ar(), xv, gv, bv, get(mean), vv, n, k, eps))
		return append(append(append(get(y), get(dx)...), get(dg)...), get(yi)...)
	})
}

func TestSoftmaxCrossEntropy(t *testing.T) {
	for _, idt := range []tensor.DType{tensor.Int32, tensor.Int64} {
		t.Run(idt.String(), func(t *testing.T) {
			forAll(t, func(c *tc) []float64 {
				n, k := 40, 7
				z, zv := c.rand(n, k)
				lv := make([]int64, n)
				for i := range lv {
					lv[i] = int64(c.rng.IntN(k))
				}
				lv[3] = -1 // unlabelled, not in idx
				iv := []int64{0, 5, 9, 9, 12, 39, 1, 2, 20, 21, 22, 23, 30}
				labels, idx := c.ints(tensor.Int32, lv), c.ints(idt, iv)
				dz, _ := c.rand(n, k)
				loss, err := c.be.SoftmaxCrossEntropy(z, labels, idx, dz)
				c.ok(err)
				want, wdz := ref.SoftmaxCE(c.ar(), zv, toInts(lv), toInts(iv), k)
				c.near("loss", []float64{loss}, []ref.Val{want})
				c.near("dlogits", get(dz), wdz)
				loss2, err := c.be.SoftmaxCrossEntropy(z, labels, idx, nil)
				c.ok(err)
				if loss2 != loss {
					t.Fatalf("loss without gradient %v, with %v", loss2, loss)
				}
				am, err := c.be.Alloc(tensor.Int32, []int{n}, tensor.Host)
				c.ok(err)
				c.ok(c.be.ArgmaxRows(z, am))
				for i := range n {
					best := 0
					for j := range k {
						if zv[i*k+j] > zv[i*k+best] {
							best = j
						}
					}
					if I32(am)[i] != int32(best) {
						t.Fatalf("ArgmaxRows row %d: %d, want %d", i, I32(am)[i], best)
					}
				}
				return append(get(dz), loss)
			})
		})
	}
}

func TestAdamStep(t *testing.T) {
	forAll(t, func(c *tc) []float64 {
		p, pv := c.rand(13, 5)
		g, gv := c.rand(13, 5)
		m, mv := c.rand(13, 5)
		v, vv := c.rand(13, 5)
		for i := range vv {
			vv[i] = round(c.dt, math.Abs(vv[i]))
		}
		v = c.put([]int{13, 5}, vv)
		lr, b1, b2, eps, wd, step := 0.01, 0.9, 0.999, 1e-8, 0.1, 3
		c.ok(c.be.AdamStep(p, g, m, v, lr, b1, b2, eps, wd, step))
		want := ref.Adam{P: floattol.Ins(pv), M: floattol.Ins(mv), V: floattol.Ins(vv)}
		want.Step(c.ar(), gv, lr, b1, b2, eps, wd, step)
		c.near("Adam m", get(m), want.M)
		c.near("Adam v", get(v), want.V)
		c.near("Adam p", get(p), want.P)
		return get(p)
	})
}

func TestDropoutMask(t *testing.T) {
	forAll(t, func(c *tc) []float64 {
		mask := c.zeros(200, 100)
		p := 0.3
		c.ok(c.be.DropoutMask(77, nil, p, mask))
		kept := 0
		for i, v := range get(mask) {
			want := 0.0
			if Uniform(77, uint64(i)) >= p {
				want = round(c.dt, 1/(1-p))
				kept++
			}
			if v != want {
				t.Fatalf("mask[%d] = %v, want %v", i, v, want)
			}
		}
		// 20000 draws kept with probability 0.7: σ = √(0.7·0.3/20000) =
		// 0.0032, and 0.02 is 6σ (a chance of 2e-9 for a sound stream).
		if frac := float64(kept) / 20000; math.Abs(frac-0.7) > 0.02 {
			t.Fatalf("kept %.3f, want about 0.7", frac)
		}
		return get(mask)
	})
}

func TestMemory(t *testing.T) {
	be := New(Options{Threads: 2})
	a, err := be.Alloc(tensor.Float32, []int{10, 10}, tensor.Host)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := be.Alloc(tensor.Int64, []int{5}, tensor.Host)
	if s := be.Stats(); s.InUse[tensor.Host] != 440 || s.Peak[tensor.Host] != 440 {
		t.Fatalf("stats %+v", s)
	}
	be.Release(a)
	be.Release(a)
	if s := be.Stats(); s.InUse[tensor.Host] != 40 || s.Peak[tensor.Host] != 440 {
		t.Fatalf("stats after release %+v", s)
	}
	if err := be.Upload(b, []int64{1, 2, 3, 4, 5}); err != nil {
		t.Fatal(err)
	}
	c, _ := be.Alloc(tensor.Int64, []int{5}, tensor.Host)
	if err := be.Copy(c, b); err != nil {
		t.Fatal(err)
	}
	out := make([]int64, 5)
	if err := be.Download(c, out); err != nil || out[4] != 5 {
		t.Fatalf("download %v %v", out, err)
	}
	for _, shape := range [][]int{{}, {1, 2, 3}, {-1}, {1 << 30, 1 << 30}} {
		if _, err := be.Alloc(tensor.Float32, shape, tensor.Host); err == nil {
			t.Errorf("Alloc %v succeeded", shape)
		}
	}
	if err := be.Fill(a, 1); err == nil {
		t.Error("Fill of a released tensor succeeded")
	}
	if F32(a) != nil || F64(b) != nil || I64(b) == nil {
		t.Error("accessors")
	}
}

// toInts converts int64 indices to ints.
func toInts(v []int64) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

// model returns the error model of unary f (package ref).
func (c *tc) model(f backend.Unary) ref.Unary {
	c.t.Helper()
	m, err := ref.UnaryModel(*ir.UnarySpec(uint8(f)))
	c.ok(err)
	return m
}
