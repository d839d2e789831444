package backendtest

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

// Dense ops: GEMM, indexing, elementwise, reductions and the NN helpers.

// testGEMM covers the four transposes, alpha ≠ 1, beta 0 (c poisoned, so
// it must not be read) and beta ≠ 0, on square and non-square shapes.
func testGEMM(s *suite, t *testing.T) {
	shapes := [][3]int{{17, 23, 31}, {64, 64, 64}, {1, 40, 7}, {33, 1, 64}, {5, 9, 1}}
	scales := [][2]float64{{1, 0}, {-0.7, 0}, {1.3, 0.5}}
	for _, dt := range floats {
		for _, sh := range shapes {
			for tr := range 4 {
				ta, tb := tr&2 != 0, tr&1 != 0
				for _, ab := range scales {
					name := fmt.Sprintf("%s/m=%d,n=%d,k=%d/%s/alpha=%g,beta=%g", dt.Short(), sh[0], sh[1], sh[2], transName(ta, tb), ab[0], ab[1])
					s.each(t, "GEMM", name, func(c *tc) {
						m, n, k := sh[0], sh[1], sh[2]
						as, bs := []int{m, k}, []int{k, n}
						if ta {
							as = []int{k, m}
						}
						if tb {
							bs = []int{n, k}
						}
						a, b := c.rand(dt, -1, 1, as...), c.rand(dt, -1, 1, bs...)
						var y *pair
						if ab[1] == 0 {
							y = c.out(dt, m, n)
						} else {
							y = c.rand(dt, -1, 1, m, n)
						}
						c.call("GEMM", func(be backend.Backend, sd side) error {
							return be.GEMM(ta, tb, ab[0], sd.T(a), sd.T(b), ab[1], sd.T(y))
						})
						c.near("c", y, ref.GEMM(arithOf(dt), ta, tb, m, n, k, ab[0], a.h, b.h, ab[1], y.h))
					})
				}
			}
		}
	}
}

func transName(ta, tb bool) string {
	n := map[bool]string{false: "N", true: "T"}
	return n[ta] + n[tb]
}

// indices returns n indices in [0, hi) with repeats: the first few are
// forced duplicates, the rest uniform.
func (c *tc) indices(n, hi int) []float64 {
	v := c.ints(n, 0, hi)
	for i := 1; i < n && i < 4; i++ {
		v[i] = v[0]
	}
	c.rng.Shuffle(n, func(i, j int) { v[i], v[j] = v[j], v[i] })
	return v
}

// values returns n random values for dtype dt: uniform in [-1, 1) for
// floats, integers in [-1000, 1000) otherwise.
func (c *tc) values(dt tensor.DType, n int) []float64 {
	if dt.IsFloat() {
		return c.uniform(n, -1, 1)
	}
	return c.ints(n, -1000, 1000)
}

// testGather gathers rows of every dtype with Int32 and Int64 indices
// (repeated, in random order); a copy must be exact.
func testGather(s *suite, t *testing.T) {
	for _, dt := range allTypes {
		for _, it := range indexTypes {
			s.each(t, "Gather", dt.Short()+"/idx="+it.Short(), func(c *tc) {
				const rows, cols, n = 50, 13, 70
				x := c.put(dt, c.values(dt, rows*cols), rows, cols)
				idx := c.put(it, c.indices(n, rows), n)
				y := c.out(dt, n, cols)
				c.call("Gather", func(b backend.Backend, sd side) error { return b.Gather(sd.T(x), sd.T(idx), sd.T(y)) })
				c.exact("y", y)
			})
		}
	}
}

// testScatterAdd accumulates into a non-zero y through repeated indices.
func testScatterAdd(s *suite, t *testing.T) {
	for _, dt := range floats {
		for _, it := range indexTypes {
			for _, cols := range []int{1, 13} {
				s.each(t, "ScatterAdd", fmt.Sprintf("%s/idx=%s/cols=%d", dt.Short(), it.Short(), cols), func(c *tc) {
					const rows, n = 40, 90
					x := c.rand(dt, -1, 1, n, cols)
					idx := c.put(it, c.indices(n, rows), n)
					y := c.rand(dt, -1, 1, rows, cols)
					c.call("ScatterAdd", func(b backend.Backend, sd side) error { return b.ScatterAdd(sd.T(x), sd.T(idx), sd.T(y)) })
					c.near("y", y, ref.Scatter(arithOf(dt), x.h, func(i, _ int) int { return int(idx.h[i]) }, n, cols, y.h))
				})
			}
		}
	}
}

// testCopyCols copies column ranges with offsets into a non-zero dst,
// whose other columns must survive.
func testCopyCols(s *suite, t *testing.T) {
	cases := []struct{ dstCols, dstOff, srcCols, srcOff, n int }{
		{10, 5, 7, 2, 4},
		{10, 3, 7, 0, 7},
		{6, 0, 6, 0, 6},
		{9, 8, 3, 2, 1},
	}
	for _, dt := range allTypes {
		for _, cc := range cases {
			name := fmt.Sprintf("%s/dst=%d+%d/src=%d+%d/n=%d", dt.Short(), cc.dstCols, cc.dstOff, cc.srcCols, cc.srcOff, cc.n)
			s.each(t, "CopyCols", name, func(c *tc) {
				const rows = 31
				dst := c.put(dt, c.values(dt, rows*cc.dstCols), rows, cc.dstCols)
				src := c.put(dt, c.values(dt, rows*cc.srcCols), rows, cc.srcCols)
				c.call("CopyCols", func(b backend.Backend, sd side) error {
					return b.CopyCols(sd.T(dst), cc.dstOff, sd.T(src), cc.srcOff, cc.n)
				})
				c.exact("dst", dst)
			})
		}
	}
}

// unaries are every Unary of the op table (ir.Ops) with its name, the
// alpha the tests give it and the interval its inputs are drawn from.
var unaries = func() []unaryCase {
	var out []unaryCase
	for _, s := range ir.Ops {
		if s.Class != ir.ClassUnary {
			continue
		}
		u := unaryCase{f: backend.Unary(s.Code), name: s.Name, alpha: unaryAlpha, lo: -2.5, hi: 2.5, spec: s}
		if s.Attr != "" && s.Kind != ir.OpLeakyReLU && s.Kind != ir.OpELU {
			u.alpha = s.CheckAlpha
		}
		if s.DomainLo != 0 || s.DomainHi != 0 {
			u.lo, u.hi = s.DomainLo, s.DomainHi
		}
		out = append(out, u)
	}
	return out
}()

type unaryCase struct {
	f      backend.Unary
	name   string
	alpha  float64
	lo, hi float64
	spec   ir.OpSpec
}

// unaryAlpha is the alpha of the unary tests (LeakyReLU slope, ELU scale).
const unaryAlpha = 0.2

// testApply runs every Unary into a separate y and in place (x == y),
// on a matrix and on a vector.
func testApply(s *suite, t *testing.T) {
	for _, dt := range floats {
		for _, u := range unaries {
			for _, inPlace := range []bool{false, true} {
				name := dt.Short() + "/" + u.name + map[bool]string{false: "/out", true: "/inplace"}[inPlace]
				s.each(t, "Apply", name, func(c *tc) {
					shape := []int{37, 11}
					if inPlace {
						shape = []int{129}
					}
					x := c.rand(dt, u.lo, u.hi, shape...)
					y := x
					if !inPlace {
						y = c.out(dt, shape...)
					}
					c.call("Apply", func(b backend.Backend, sd side) error { return b.Apply(u.f, u.alpha, sd.T(x), sd.T(y)) })
					m := c.model(u.spec)
					want := make([]ref.Val, len(x.h))
					for i, v := range x.h {
						want[i] = m.Fwd(arithOf(dt), floattol.In(v), u.alpha)
					}
					c.near("y", y, want)
				})
			}
		}
	}
}

// testApplyBackward gives every Unary x, y = f(x) (computed on the host)
// and a random dy.
func testApplyBackward(s *suite, t *testing.T) {
	for _, dt := range floats {
		for _, u := range unaries {
			s.each(t, "ApplyBackward", dt.Short()+"/"+u.name, func(c *tc) {
				const rows, cols = 37, 11
				xv := round(dt, c.uniform(rows*cols, u.lo, u.hi))
				yv := make([]float64, len(xv))
				for i, v := range xv {
					yv[i] = u.spec.F(v, u.alpha)
				}
				x, y := c.put(dt, xv, rows, cols), c.put(dt, yv, rows, cols)
				dy, dx := c.rand(dt, -1, 1, rows, cols), c.out(dt, rows, cols)
				c.call("ApplyBackward", func(b backend.Backend, sd side) error {
					return b.ApplyBackward(u.f, u.alpha, sd.T(x), sd.T(y), sd.T(dy), sd.T(dx))
				})
				m := c.model(u.spec)
				want := make([]ref.Val, len(x.h))
				for i := range want {
					want[i] = m.Bwd(arithOf(dt), floattol.In(x.h[i]), floattol.In(y.h[i]), floattol.In(dy.h[i]), u.alpha)
				}
				c.near("dx", dx, want)
			})
		}
	}
}

// testElementwise runs every Binary of the op table with b the same shape
// as a, a row vector [C] and a scalar [1]; divisors stay away from zero.
func testElementwise(s *suite, t *testing.T) {
	type binop struct {
		op   backend.Binary
		name string
	}
	var ops []binop
	for _, s := range ir.Ops {
		if s.Class == ir.ClassBinary {
			ops = append(ops, binop{backend.Binary(s.Code), s.Name})
		}
	}
	const rows, cols = 23, 9
	bcasts := []struct {
		name  string
		shape []int
	}{{"same", []int{rows, cols}}, {"row", []int{cols}}, {"scalar", []int{1}}}
	for _, dt := range floats {
		for _, o := range ops {
			for _, bc := range bcasts {
				s.each(t, "Elementwise", dt.Short()+"/"+o.name+"/"+bc.name, func(c *tc) {
					a := c.rand(dt, -2, 2, rows, cols)
					bv := c.uniform(numel(bc.shape), 0.5, 1.5)
					for i := range bv {
						if c.rng.IntN(2) == 0 {
							bv[i] = -bv[i]
						}
					}
					b := c.put(dt, bv, bc.shape...)
					y := c.out(dt, rows, cols)
					c.call("Elementwise", func(be backend.Backend, sd side) error { return be.Elementwise(o.op, sd.T(a), sd.T(b), sd.T(y)) })
					want, err := ref.Binary(arithOf(dt), o.name, a.h, b.h)
					if err != nil {
						c.Fatal(err)
					}
					c.near("y", y, want)
				})
			}
		}
	}
}

// testAxpby covers beta 0 (y poisoned, so it must not be read), alpha 1
// and general scales.
func testAxpby(s *suite, t *testing.T) {
	for _, dt := range floats {
		for _, ab := range [][2]float64{{1, 0}, {-0.5, 0}, {2, -0.5}, {0.3, 1}} {
			s.each(t, "Axpby", fmt.Sprintf("%s/alpha=%g,beta=%g", dt.Short(), ab[0], ab[1]), func(c *tc) {
				x := c.rand(dt, -1, 1, 41, 7)
				y := c.rand(dt, -1, 1, 41, 7)
				if ab[1] == 0 {
					y = c.out(dt, 41, 7)
				}
				y0 := y.h
				c.call("Axpby", func(b backend.Backend, sd side) error { return b.Axpby(ab[0], sd.T(x), ab[1], sd.T(y)) })
				ar := arithOf(dt)
				want := make([]ref.Val, len(x.h))
				for i, v := range x.h {
					want[i] = ar.Mul(ar.Param(ab[0]), floattol.In(v))
					if ab[1] != 0 {
						want[i] = ar.Add(want[i], ar.Mul(ar.Param(ab[1]), floattol.In(y0[i])))
					}
				}
				c.near("y", y, want)
			})
		}
	}
}

// testFill overwrites a non-zero tensor of every dtype.
func testFill(s *suite, t *testing.T) {
	for _, dt := range allTypes {
		vals := []float64{0, 3.25, -0.5}
		if !dt.IsFloat() {
			vals = []float64{0, 7, -3}
		}
		for _, v := range vals {
			s.each(t, "Fill", fmt.Sprintf("%s/v=%g", dt.Short(), v), func(c *tc) {
				x := c.put(dt, c.ints(33*5, 1, 100), 33, 5)
				c.call("Fill", func(b backend.Backend, sd side) error { return b.Fill(sd.T(x), v) })
				c.exact("t", x)
			})
		}
	}
}

// testSumRows reduces tall, wide and single-row matrices.
func testSumRows(s *suite, t *testing.T) {
	for _, dt := range floats {
		for _, sh := range [][2]int{{1, 7}, {300, 13}, {64, 24}, {17, 1}} {
			s.each(t, "SumRows", fmt.Sprintf("%s/%dx%d", dt.Short(), sh[0], sh[1]), func(c *tc) {
				x := c.rand(dt, -1, 1, sh[0], sh[1])
				y := c.out(dt, sh[1])
				c.call("SumRows", func(b backend.Backend, sd side) error { return b.SumRows(sd.T(x), sd.T(y)) })
				c.near("y", y, ref.SumRows(arithOf(dt), x.h, sh[0], sh[1]))
			})
		}
	}
}

// headShapes are the (H, C) of the head tests.
var headShapes = [][2]int{{1, 8}, {3, 5}, {4, 6}}

// testHeadDot computes per-head dot products.
func testHeadDot(s *suite, t *testing.T) {
	for _, dt := range floats {
		for _, hc := range headShapes {
			s.each(t, "HeadDot", fmt.Sprintf("%s/H=%d,C=%d", dt.Short(), hc[0], hc[1]), func(c *tc) {
				const n = 50
				x, a := c.rand(dt, -1, 1, n, hc[0]*hc[1]), c.rand(dt, -1, 1, hc[0], hc[1])
				y := c.out(dt, n, hc[0])
				c.call("HeadDot", func(b backend.Backend, sd side) error { return b.HeadDot(sd.T(x), sd.T(a), sd.T(y)) })
				c.near("y", y, ref.HeadDot(arithOf(dt), x.h, a.h, n, hc[0], hc[1]))
			})
		}
	}
}

// testHeadDotBackward accumulates into non-zero dx and da.
func testHeadDotBackward(s *suite, t *testing.T) {
	for _, dt := range floats {
		for _, hc := range headShapes {
			s.each(t, "HeadDotBackward", fmt.Sprintf("%s/H=%d,C=%d", dt.Short(), hc[0], hc[1]), func(c *tc) {
				const n = 50
				h, cc := hc[0], hc[1]
				x, a, dy := c.rand(dt, -1, 1, n, h*cc), c.rand(dt, -1, 1, h, cc), c.rand(dt, -1, 1, n, h)
				dx, da := c.rand(dt, -1, 1, n, h*cc), c.rand(dt, -1, 1, h, cc)
				c.call("HeadDotBackward", func(b backend.Backend, sd side) error {
					return b.HeadDotBackward(sd.T(x), sd.T(a), sd.T(dy), sd.T(dx), sd.T(da))
				})
				wdx, wda := ref.HeadDotBackward(arithOf(dt), x.h, a.h, dy.h, dx.h, da.h, n, h, cc)
				c.near("dx", dx, wdx)
				c.near("da", da, wda)
			})
		}
	}
}

// testDropoutMask compares masks exactly: the stream is a function of
// (seed, row key, column) alone. Rows are keyed by their position (nil
// keys), by the identity, by distinct keys below the rows of a larger
// mask, and by 64-bit keys of any value (a hashed edge's).
func testDropoutMask(s *suite, t *testing.T) {
	for _, dt := range floats {
		for _, p := range []float64{0, 0.1, 0.5, 0.9, 1} {
			for _, seed := range []uint64{0, 7, 0xDEADBEEFCAFEBABE} {
				for _, shape := range [][]int{{37, 13}, {1000}} {
					for _, keys := range dropoutKeyKinds {
						name := fmt.Sprintf("%s/p=%g/seed=%d/%s/keys=%s", dt.Short(), p, seed, shapeName(shape), keys)
						s.each(t, "DropoutMask", name, func(c *tc) {
							mask, rows := c.out(dt, shape...), c.dropoutKeys(keys, shape[0])
							c.call("DropoutMask", func(b backend.Backend, sd side) error { return b.DropoutMask(seed, sd.T(rows), p, sd.T(mask)) })
							c.exact("mask", mask)
						})
					}
				}
			}
		}
	}
}

// dropoutKeyKinds are the row keys the dropout tests draw masks with.
var dropoutKeyKinds = []string{"none", "identity", "subset", "wide"}

// dropoutKeys makes the row keys of a kind for n rows: nil for "none";
// 0..n-1; n distinct keys below 3n in random order; or n random 64-bit
// keys, negative ones among them (the kernels read them unsigned).
func (c *tc) dropoutKeys(kind string, n int) *pair {
	c.Helper()
	keys := make([]int64, n)
	switch kind {
	case "none":
		return nil
	case "identity":
		for i := range keys {
			keys[i] = int64(i)
		}
	case "subset":
		for i, k := range c.rng.Perm(3 * n)[:n] {
			keys[i] = int64(k)
		}
	case "wide":
		for i := range keys {
			keys[i] = int64(c.rng.Uint64())
		}
	default:
		c.Fatalf("unknown key kind %q", kind)
	}
	p := c.alloc(tensor.Int64, n)
	c.call("Upload", func(b backend.Backend, sd side) error { return b.Upload(sd.T(p), keys) })
	return p
}

// testDropoutSplit is the property every strategy relies on: a mask
// drawn over some rows, keyed by their global ids, is those rows of the
// mask drawn over all of them, on the candidate alone (DropoutMask, and
// DropoutGEMM's products where the candidate has it).
func testDropoutSplit(s *suite, t *testing.T) {
	const all, cols = 90, 13
	for _, dt := range floats {
		s.each(t, "DropoutSplit", dt.Short(), func(c *tc) {
			whole := c.out(dt, all, cols)
			c.call("DropoutMask", func(b backend.Backend, sd side) error { return b.DropoutMask(5, nil, 0.5, sd.T(whole)) })
			ids := c.rng.Perm(all)[:all/3]
			keys := make([]int64, len(ids))
			for i, id := range ids {
				keys[i] = int64(id)
			}
			rows := c.alloc(tensor.Int64, len(ids))
			c.call("Upload", func(b backend.Backend, sd side) error { return b.Upload(sd.T(rows), keys) })
			part := c.out(dt, len(ids), cols)
			c.call("DropoutMask", func(b backend.Backend, sd side) error { return b.DropoutMask(5, sd.T(rows), 0.5, sd.T(part)) })
			w, err := fetch(c.s.got, whole.g)
			if err != nil {
				c.Fatal(err)
			}
			g, err := fetch(c.s.got, part.g)
			if err != nil {
				c.Fatal(err)
			}
			wf, gf := toFloat64s(w), toFloat64s(g)
			for r, id := range ids {
				for col := range cols {
					if gf[r*cols+col] != wf[id*cols+col] {
						c.Fatalf("row %d keyed %d, column %d: %v, but row %d of the whole mask has %v", r, id, col, gf[r*cols+col], id, wf[id*cols+col])
					}
				}
			}
		})
	}
}

// testDropoutGEMM covers the optional backend.DropoutGEMMer (skipped for
// a candidate without it): the forward product and the weight gradient
// (transX), with one region of the masked x and with more regions than
// the kernel holds at once, beta 0 and not.
func testDropoutGEMM(s *suite, t *testing.T) {
	if _, ok := s.got.(backend.DropoutGEMMer); !ok {
		t.Skipf("%s has no DropoutGEMM", s.got.Name())
	}
	for _, dt := range floats {
		for _, sh := range [][3]int{{17, 5, 31}, {1100, 3, 12}, {12, 4, 1100}} {
			for _, transX := range []bool{false, true} {
				for _, beta := range []float64{0, 0.5} {
					for _, keys := range []string{"none", "wide"} {
						name := fmt.Sprintf("%s/m=%d,n=%d,k=%d/trans=%v/beta=%g/keys=%s", dt.Short(), sh[0], sh[1], sh[2], transX, beta, keys)
						s.each(t, "DropoutGEMM", name, func(c *tc) {
							m, n, k := sh[0], sh[1], sh[2]
							xs := []int{m, k}
							if transX {
								xs = []int{k, m}
							}
							x, b := c.rand(dt, -1, 1, xs...), c.rand(dt, -1, 1, k, n)
							y, rows := c.rand(dt, -1, 1, m, n), c.dropoutKeys(keys, xs[0])
							scratch := c.out(dt, backend.DropoutGEMMScratch(m, n, k))
							c.call("DropoutGEMM", func(be backend.Backend, sd side) error {
								return be.(backend.DropoutGEMMer).DropoutGEMM(77, sd.T(rows), 0.4, transX, sd.T(x), sd.T(b), beta, sd.T(y), sd.T(scratch), nil)
							})
							c.agree("c", y, ref.DropoutGEMMBound(unit(dt), transX, m, n, k, 0.4, x.h, b.h, beta, y.h))
						})
					}
				}
			}
		}
	}
}

// bnShapes are the [N, C] of the batch norm tests.
var bnShapes = [][2]int{{64, 7}, {5, 24}, {2, 3}}

const bnEps = 1e-5

// testBatchNorm checks y and the saved mean and inverse std.
func testBatchNorm(s *suite, t *testing.T) {
	for _, dt := range floats {
		for _, sh := range bnShapes {
			s.each(t, "BatchNorm", fmt.Sprintf("%s/%dx%d", dt.Short(), sh[0], sh[1]), func(c *tc) {
				n, k := sh[0], sh[1]
				x := c.rand(dt, -2, 3, n, k)
				gamma, beta := c.rand(dt, 0.5, 1.5, k), c.rand(dt, -1, 1, k)
				y, mean, inv := c.out(dt, n, k), c.out(dt, k), c.out(dt, k)
				c.call("BatchNorm", func(b backend.Backend, sd side) error {
					return b.BatchNorm(sd.T(x), sd.T(gamma), sd.T(beta), sd.T(y), sd.T(mean), sd.T(inv), bnEps)
				})
				wy, wm, wi := ref.BatchNorm(arithOf(dt), x.h, gamma.h, beta.h, n, k, bnEps)
				c.near("y", y, wy)
				c.near("mean", mean, wm)
				c.near("invStd", inv, wi)
			})
		}
	}
}

// colStats returns the column means and inverse std devs of x [n,k].
func colStats(x []float64, n, k int, eps float64) (mean, inv []float64) {
	mean, inv = make([]float64, k), make([]float64, k)
	for i := range n {
		for j := range k {
			mean[j] += x[i*k+j] / float64(n)
		}
	}
	for j := range k {
		v := 0.0
		for i := range n {
			d := x[i*k+j] - mean[j]
			v += d * d
		}
		inv[j] = 1 / math.Sqrt(v/float64(n)+eps)
	}
	return mean, inv
}

// testBatchNormBackward gives both backends the same batch statistics
// (computed on the host) and checks dx, dgamma and dbeta.
func testBatchNormBackward(s *suite, t *testing.T) {
	for _, dt := range floats {
		for _, sh := range bnShapes {
			s.each(t, "BatchNormBackward", fmt.Sprintf("%s/%dx%d", dt.Short(), sh[0], sh[1]), func(c *tc) {
				n, k := sh[0], sh[1]
				xv := round(dt, c.uniform(n*k, -2, 3))
				mv, iv := colStats(xv, n, k, bnEps)
				x, mean, inv := c.put(dt, xv, n, k), c.put(dt, mv, k), c.put(dt, iv, k)
				gamma, dy := c.rand(dt, 0.5, 1.5, k), c.rand(dt, -1, 1, n, k)
				dx, dg, db := c.out(dt, n, k), c.out(dt, k), c.out(dt, k)
				c.call("BatchNormBackward", func(b backend.Backend, sd side) error {
					return b.BatchNormBackward(sd.T(x), sd.T(gamma), sd.T(dy), sd.T(mean), sd.T(inv), sd.T(dx), sd.T(dg), sd.T(db))
				})
				wdx, wdg, wdb := ref.BatchNormBackward(arithOf(dt), x.h, gamma.h, dy.h, mean.h, inv.h, n, k)
				c.near("dx", dx, wdx)
				c.near("dgamma", dg, wdg)
				c.near("dbeta", db, wdb)
			})
		}
	}
}

// testBatchNormInfer normalises with given statistics.
func testBatchNormInfer(s *suite, t *testing.T) {
	for _, dt := range floats {
		for _, sh := range bnShapes {
			s.each(t, "BatchNormInfer", fmt.Sprintf("%s/%dx%d", dt.Short(), sh[0], sh[1]), func(c *tc) {
				n, k := sh[0], sh[1]
				x := c.rand(dt, -2, 3, n, k)
				gamma, beta := c.rand(dt, 0.5, 1.5, k), c.rand(dt, -1, 1, k)
				mean, vr := c.rand(dt, -1, 1, k), c.rand(dt, 0.2, 2, k)
				y := c.out(dt, n, k)
				c.call("BatchNormInfer", func(b backend.Backend, sd side) error {
					return b.BatchNormInfer(sd.T(x), sd.T(gamma), sd.T(beta), sd.T(mean), sd.T(vr), sd.T(y), bnEps)
				})
				c.near("y", y, ref.BatchNormInfer(arithOf(dt), x.h, gamma.h, beta.h, mean.h, vr.h, n, k, bnEps))
			})
		}
	}
}

// testSoftmaxCrossEntropy covers Int32 and Int64 idx, a subset of distinct
// rows and one that repeats rows, with and without dlogits.
func testSoftmaxCrossEntropy(s *suite, t *testing.T) {
	for _, dt := range floats {
		for _, it := range indexTypes {
			for _, rep := range []bool{false, true} {
				for _, grad := range []bool{true, false} {
					s.each(t, "SoftmaxCrossEntropy", lossCaseName(dt, it, rep, grad), func(c *tc) {
						const n, k = 40, 6
						logits := c.rand(dt, -3, 3, n, k)
						labels := c.put(tensor.Int32, c.ints(n, 0, k), n)
						idx, dl := c.lossRows(dt, it, rep, grad, n, k)
						var loss [2]float64
						c.call("SoftmaxCrossEntropy", func(b backend.Backend, sd side) (err error) {
							loss[map[bool]int{false: 0, true: 1}[sd.got]], err = b.SoftmaxCrossEntropy(sd.T(logits), sd.T(labels), sd.T(idx), sd.T(dl))
							return err
						})
						wl, wdl := ref.SoftmaxCE(arithOf(dt), logits.h, ints(labels.h), ints(idx.h), k)
						c.nearValues("loss", dt, loss[:1], loss[1:], []ref.Val{wl})
						if grad {
							c.near("dlogits", dl, wdl)
						}
					})
				}
			}
		}
	}
}

// lossCaseName names a loss case: dtype, idx dtype, rows, gradient.
func lossCaseName(dt, it tensor.DType, rep, grad bool) string {
	return fmt.Sprintf("%s/idx=%s/%s/%s", dt.Short(), it.Short(),
		map[bool]string{false: "distinct", true: "repeats"}[rep], map[bool]string{false: "no-grad", true: "grad"}[grad])
}

// lossRows returns a loss case's idx (of it: 30 rows of n with repeats,
// or 25 distinct) and, with grad, its gradient output [n,k].
func (c *tc) lossRows(dt, it tensor.DType, rep, grad bool, n, k int) (idx, dout *pair) {
	var rows []float64
	if rep {
		rows = c.indices(30, n)
	} else {
		for _, r := range c.rng.Perm(n)[:25] {
			rows = append(rows, float64(r))
		}
	}
	if grad {
		dout = c.out(dt, n, k)
	}
	return c.put(it, rows, len(rows)), dout
}

// testTargetLoss covers both losses, Int32 and Int64 idx, a subset of
// distinct rows and one that repeats rows, with and without dout; BCE
// targets are 0/1 and logits reach ±12 (the stable form's range).
func testTargetLoss(s *suite, t *testing.T) {
	for _, f := range []backend.Loss{backend.LossBCE, backend.LossMSE} {
		for _, dt := range floats {
			for _, it := range indexTypes {
				for _, rep := range []bool{false, true} {
					for _, grad := range []bool{true, false} {
						s.each(t, "TargetLoss", f.String()+"/"+lossCaseName(dt, it, rep, grad), func(c *tc) { targetLossCase(c, f, dt, it, rep, grad) })
					}
				}
			}
		}
	}
}

func targetLossCase(c *tc, f backend.Loss, dt, it tensor.DType, rep, grad bool) {
	const n, k = 40, 5
	out := c.rand(dt, -12, 12, n, k)
	targets := c.rand(dt, -3, 3, n, k)
	if f == backend.LossBCE {
		targets = c.put(dt, c.ints(n*k, 0, 2), n, k)
	}
	idx, dout := c.lossRows(dt, it, rep, grad, n, k)
	var loss [2]float64
	c.call("TargetLoss", func(b backend.Backend, sd side) (err error) {
		loss[map[bool]int{false: 0, true: 1}[sd.got]], err = b.TargetLoss(f, sd.T(out), sd.T(targets), sd.T(idx), sd.T(dout))
		return err
	})
	wl, wd := ref.TargetLoss(arithOf(dt), f == backend.LossMSE, out.h, targets.h, ints(idx.h), k)
	c.nearValues("loss", dt, loss[:1], loss[1:], []ref.Val{wl})
	if grad {
		c.near("dout", dout, wd)
	}
}

// testArgmaxRows uses rows without ties; the result must match exactly.
func testArgmaxRows(s *suite, t *testing.T) {
	for _, dt := range floats {
		for _, sh := range [][2]int{{50, 7}, {10, 1}, {3, 24}} {
			s.each(t, "ArgmaxRows", fmt.Sprintf("%s/%dx%d", dt.Short(), sh[0], sh[1]), func(c *tc) {
				x := c.put(dt, c.distinct(sh[0]*sh[1]), sh[0], sh[1])
				out := c.out(tensor.Int32, sh[0])
				c.call("ArgmaxRows", func(b backend.Backend, sd side) error { return b.ArgmaxRows(sd.T(x), sd.T(out)) })
				c.exact("out", out)
			})
		}
	}
}

// testAdamStep runs steps t = 1..3 with a fresh gradient each, checking
// p, m and v after every step.
func testAdamStep(s *suite, t *testing.T) {
	for _, dt := range floats {
		for _, wd := range []float64{0, 0.01} {
			s.each(t, "AdamStep", fmt.Sprintf("%s/wd=%g", dt.Short(), wd), func(c *tc) {
				const rows, cols = 37, 5
				p := c.rand(dt, -1, 1, rows, cols)
				m, v := c.alloc(dt, rows, cols), c.alloc(dt, rows, cols)
				host := ref.NewAdam(p.h)
				for step := 1; step <= 3; step++ {
					g := c.rand(dt, -1, 1, rows, cols)
					c.call("AdamStep", func(b backend.Backend, sd side) error {
						return b.AdamStep(sd.T(p), sd.T(g), sd.T(m), sd.T(v), 0.01, 0.9, 0.999, 1e-8, wd, step)
					})
					host.Step(arithOf(dt), g.h, 0.01, 0.9, 0.999, 1e-8, wd, step)
					c.near(fmt.Sprintf("p after step %d", step), p, host.P)
					c.near(fmt.Sprintf("m after step %d", step), m, host.M)
					c.near(fmt.Sprintf("v after step %d", step), v, host.V)
				}
			})
		}
	}
}

// ints converts host index values to ints.
func ints(v []float64) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

// model returns the error model of a unary op, failing the case when it
// has none.
func (c *tc) model(s ir.OpSpec) ref.Unary {
	c.Helper()
	m, err := ref.UnaryModel(s)
	if err != nil {
		c.Fatal(err)
	}
	return m
}
