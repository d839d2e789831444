package cpu

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"strata/core/backend"
	"strata/core/tensor"
)

// TestDropoutGEMMMatchesUnfused checks the fused dropout-matmul against
// its unfused sequence, DropoutApply into a buffer then GEMM, bit for bit:
// shapes with one tile, several row tiles, several column tiles and a
// split inner dimension, transposed (the weight gradient) or not (the
// forward), with beta 0 and not, on 1, 2 and 3 threads (a worker masks
// 4, 2 or 1 neighbouring regions at once), and with the AVX2
// dropout kernels or (where the CPU has them) the AVX-512 ones.
func TestDropoutGEMMMatchesUnfused(t *testing.T) {
	cases := []struct{ m, n, k int }{
		{5, 3, 7},      // one tile
		{700, 17, 40},  // row tiles (mb = 256): 3 regions in one group
		{1300, 9, 33},  // 6 regions: two groups of slots
		{300, 300, 12}, // row and column tiles
		{20, 5, 8200},  // split inner dimension (kb = 2048): 5 slices
		{9, 260, 9000}, // split, two column tiles' worth of n
		{0, 4, 6},      // empty
		{4, 6, 0},      // no inner dimension: c = beta·c
	}
	for _, dt := range dtypes {
		for _, cs := range cases {
			for _, transX := range []bool{false, true} {
				for _, beta := range []float64{0, 0.5} {
					for _, run := range []struct {
						threads  int
						avx2Only bool
						keyed    bool // rows keyed by random 64-bit keys
					}{{1, false, false}, {2, false, false}, {3, false, false}, {3, true, false}, {3, false, true}, {3, true, true}} {
						threads := run.threads
						name := fmt.Sprintf("%v/%dx%dx%d/trans=%v/beta=%v/threads=%d/avx2only=%v/keyed=%v", dt, cs.m, cs.n, cs.k, transX, beta, threads, run.avx2Only, run.keyed)
						t.Run(name, func(t *testing.T) {
							c := newTC(t, threads, dt, 11)
							c.be = New(Options{Threads: threads, AVX2Only: run.avx2Only})
							xs := []int{cs.m, cs.k}
							if transX {
								xs = []int{cs.k, cs.m}
							}
							var rows *tensor.Tensor
							if run.keyed {
								rows = c.randKeys(xs[0])
							}
							x, _ := c.rand(xs...)
							b, _ := c.rand(cs.k, cs.n)
							c0, cv := c.rand(cs.m, cs.n)
							c1 := c.put([]int{cs.m, cs.n}, cv)
							y := c.zeros(xs...)
							c.ok(c.be.DropoutApply(99, rows, 0.5, x, nil, y))
							c.ok(c.be.GEMM(transX, false, 1, y, b, beta, c0))
							scratch := c.zeros(max(backend.DropoutGEMMScratch(cs.m, cs.n, cs.k), 1))
							c.ok(c.be.DropoutGEMM(99, rows, 0.5, transX, x, b, beta, c1, scratch, nil))
							want := get(c0)
							same := func(what string, got []float64) {
								for i := range want {
									if math.Float64bits(want[i]) != math.Float64bits(got[i]) {
										t.Fatalf("%s: c[%d] = %v, unfused %v", what, i, got[i], want[i])
									}
								}
							}
							same("drawn", get(c1))
							// With keep bits: a forward call records them (for transX
							// one over x by a column of ones), the transposed call
							// reads them.
							ks := backend.DropoutKeepWords(xs[0], xs[1])
							keep, err := c.be.Alloc(tensor.Int32, ks, tensor.Host)
							c.ok(err)
							c2 := c.put([]int{cs.m, cs.n}, cv)
							if transX {
								ones := c.put([]int{cs.m, 1}, slices.Repeat([]float64{1}, cs.m))
								rec := c.zeros(cs.k, 1)
								c.ok(c.be.DropoutGEMM(99, rows, 0.5, false, x, ones, 0, rec, c.zeros(max(backend.DropoutGEMMScratch(cs.k, 1, cs.m), 1)), keep))
							}
							c.ok(c.be.DropoutGEMM(99, rows, 0.5, transX, x, b, beta, c2, scratch, keep))
							same("with keep bits", get(c2))
						})
					}
				}
			}
		}
	}
}

// TestDropoutGEMMScratchChecked refuses a scratch smaller than the
// product needs.
func TestDropoutGEMMScratchChecked(t *testing.T) {
	c := newTC(t, 2, dtypes[0], 1)
	x, _ := c.rand(700, 40)
	b, _ := c.rand(40, 8)
	out := c.zeros(700, 8)
	small := c.zeros(backend.DropoutGEMMScratch(700, 8, 40) - 1)
	if err := c.be.DropoutGEMM(1, nil, 0.5, false, x, b, 0, out, small, nil); err == nil {
		t.Fatal("a scratch one element short was accepted")
	}
}

// TestDropoutGEMMsMatchesUnfused checks DropoutGEMMs, several products of
// one dropout of x over one masking pass, against the unfused sequence of
// each product (DropoutApply into a buffer, then GEMM) bit for bit: two
// products of different widths and betas, forward and transposed, row
// tiles, column tiles and a split inner dimension, with and without keep
// bits (the forward call records them once for both products), on 1, 2
// and 3 threads; a 16-bit x against DropoutGEMM once per product (which
// TestDropoutGEMMHalfMatchesWidened compares with the widened input); and
// products that split the inner dimension differently (one masking pass
// each). Its mutants: one product's tiles skipped, the mask drawn with
// another seed for the second product.
func TestDropoutGEMMsMatchesUnfused(t *testing.T) {
	cases := []struct{ m, k int }{
		{5, 7},     // one tile
		{1300, 33}, // 6 row regions: two groups of slots
		{300, 12},  // row and column tiles (n = 300)
		{20, 8200}, // split inner dimension
		{0, 6},     // empty
		{4, 0},     // no inner dimension: c = beta·c
	}
	same := func(t *testing.T, what string, got, want []float64) {
		t.Helper()
		for i := range want {
			if math.Float64bits(want[i]) != math.Float64bits(got[i]) {
				t.Fatalf("%s: c[%d] = %v, unfused %v", what, i, got[i], want[i])
			}
		}
	}
	for _, dt := range dtypes {
		for _, cs := range cases {
			for _, transX := range []bool{false, true} {
				for _, threads := range []int{1, 2, 3} {
					t.Run(fmt.Sprintf("%v/%dx%d/trans=%v/threads=%d", dt, cs.m, cs.k, transX, threads), func(t *testing.T) {
						c := newTC(t, threads, dt, 13)
						xs := []int{cs.m, cs.k}
						if transX {
							xs = []int{cs.k, cs.m}
						}
						x, _ := c.rand(xs...)
						widths, betas := []int{17, 300}, []float64{0.5, 0}
						y := c.zeros(xs...)
						c.ok(c.be.DropoutApply(99, nil, 0.5, x, nil, y))
						need := 0
						var prods, keeps []backend.DropoutProduct
						var want [][]float64
						for j, n := range widths {
							b, _ := c.rand(cs.k, n)
							c0, cv := c.rand(cs.m, n)
							c.ok(c.be.GEMM(transX, false, 1, y, b, betas[j], c0))
							want = append(want, get(c0))
							prods = append(prods, backend.DropoutProduct{B: b, Beta: betas[j], C: c.put([]int{cs.m, n}, cv)})
							keeps = append(keeps, backend.DropoutProduct{B: b, Beta: betas[j], C: c.put([]int{cs.m, n}, cv)})
							need = max(need, backend.DropoutGEMMScratch(cs.m, n, cs.k))
						}
						scratch := c.zeros(max(need, 1))
						c.ok(c.be.DropoutGEMMs(99, nil, 0.5, transX, x, prods, scratch, nil))
						for j := range prods {
							same(t, fmt.Sprintf("product %d, drawn", j), get(prods[j].C), want[j])
						}
						// Keep bits: recorded by a forward call (for transX one
						// over x by a column of ones), read by the transposed one.
						keep, err := c.be.Alloc(tensor.Int32, backend.DropoutKeepWords(xs[0], xs[1]), tensor.Host)
						c.ok(err)
						if transX {
							ones := c.put([]int{cs.m, 1}, slices.Repeat([]float64{1}, cs.m))
							rec := c.zeros(cs.k, 1)
							c.ok(c.be.DropoutGEMM(99, nil, 0.5, false, x, ones, 0, rec, c.zeros(max(backend.DropoutGEMMScratch(cs.k, 1, cs.m), 1)), keep))
						}
						c.ok(c.be.DropoutGEMMs(99, nil, 0.5, transX, x, keeps, scratch, keep))
						for j := range keeps {
							same(t, fmt.Sprintf("product %d, keep bits", j), get(keeps[j].C), want[j])
						}
					})
				}
			}
		}
	}
	t.Run("half", func(t *testing.T) {
		be := New(Options{Threads: 2})
		c := newTC(t, 2, tensor.Float32, 5)
		for _, hd := range []tensor.DType{tensor.Float16, tensor.BFloat16} {
			for _, transX := range []bool{false, true} {
				for _, p := range []float64{0, 0.5} {
					m, k := 1300, 40
					xs := []int{m, k}
					if transX {
						xs = []int{k, m}
					}
					_, xv := c.rand(xs...)
					x, _ := halfTensor(t, be, hd, xs, xv)
					scratch := c.zeros(backend.DropoutGEMMScratch(m, 300, k))
					var prods []backend.DropoutProduct
					var want [][]float64
					for j, n := range []int{9, 300} {
						b, _ := c.rand(k, n)
						c0, cv := c.rand(m, n)
						c.ok(be.DropoutGEMM(3, nil, p, transX, x, b, float64(j), c0, scratch, nil))
						want = append(want, get(c0))
						prods = append(prods, backend.DropoutProduct{B: b, Beta: float64(j), C: c.put([]int{m, n}, cv)})
					}
					c.ok(be.DropoutGEMMs(3, nil, p, transX, x, prods, scratch, nil))
					for j := range prods {
						same(t, fmt.Sprintf("%v trans=%v p=%v product %d", hd, transX, p, j), get(prods[j].C), want[j])
					}
				}
			}
		}
	})
	// Two products whose tilings split the inner dimension differently
	// (n = 5: one tile, split; n = 1,793: 8 column tiles, not split): each
	// is the unfused sequence's (float32, one size: the operand is large).
	t.Run("splits", func(t *testing.T) {
		c := newTC(t, 2, tensor.Float32, 7)
		m, k := 9, 8192
		x, _ := c.rand(m, k)
		y := c.zeros(m, k)
		c.ok(c.be.DropoutApply(5, nil, 0.5, x, nil, y))
		var prods []backend.DropoutProduct
		var want [][]float64
		need := 0
		for _, n := range []int{5, 1793} {
			b, _ := c.rand(k, n)
			c0 := c.zeros(m, n)
			c.ok(c.be.GEMM(false, false, 1, y, b, 0, c0))
			want = append(want, get(c0))
			prods = append(prods, backend.DropoutProduct{B: b, C: c.zeros(m, n)})
			need = max(need, backend.DropoutGEMMScratch(m, n, k))
		}
		if _, _, kb0 := backend.GEMMTiles(m, 5, k); kb0 == k {
			t.Fatalf("n = 5 does not split k = %d", k)
		}
		if _, _, kb1 := backend.GEMMTiles(m, 1793, k); kb1 != k {
			t.Fatalf("n = 1793 splits k = %d", k)
		}
		c.ok(c.be.DropoutGEMMs(5, nil, 0.5, false, x, prods, c.zeros(need), nil))
		for j := range prods {
			same(t, fmt.Sprintf("product %d", j), get(prods[j].C), want[j])
		}
	})
}

// TestDropoutGEMMsChecked refuses products whose results share a buffer,
// a scratch too small for the largest product, and no products.
func TestDropoutGEMMsChecked(t *testing.T) {
	c := newTC(t, 2, dtypes[0], 1)
	x, _ := c.rand(700, 40)
	b, _ := c.rand(40, 8)
	out := c.zeros(700, 8)
	wide, _ := c.rand(40, 300)
	outWide := c.zeros(700, 300)
	scratch := c.zeros(backend.DropoutGEMMScratch(700, 300, 40))
	for name, ps := range map[string][]backend.DropoutProduct{
		"shared c": {{B: b, C: out}, {B: b, C: out}},
		"none":     nil,
	} {
		if err := c.be.DropoutGEMMs(1, nil, 0.5, false, x, ps, scratch, nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	small := c.zeros(backend.DropoutGEMMScratch(700, 300, 40) - 1)
	if err := c.be.DropoutGEMMs(1, nil, 0.5, false, x, []backend.DropoutProduct{{B: b, C: out}, {B: wide, C: outWide}}, small, nil); err == nil {
		t.Error("a scratch one element short of the larger product was accepted")
	}
}

// TestDropoutGEMMSparseWrapped checks the fused dropout-matmul over a
// sparse wrapped x, masked from its index of non-zero elements
// (sparserows.go), against the unfused sequence bit for bit: the shapes
// of TestDropoutGEMMMatchesUnfused, forward and transposed, drawn and
// with keep bits, on 1 and 3 threads, with negative elements and -0
// among the listed ones (a dropped -0 stays -0). The keep bits start
// full of ones, so a bit the forward call leaves stale would show. A
// matrix denser than the index allows is masked densely, as before.
func TestDropoutGEMMSparseWrapped(t *testing.T) {
	cases := []struct{ m, n, k int }{
		{5, 3, 7}, {700, 17, 40}, {1300, 9, 33}, {300, 300, 12}, {20, 5, 8200}, {9, 260, 9000},
	}
	for _, cs := range cases {
		for _, transX := range []bool{false, true} {
			for _, threads := range []int{1, 3} {
				t.Run(fmt.Sprintf("%dx%dx%d/trans=%v/threads=%d", cs.m, cs.n, cs.k, transX, threads), func(t *testing.T) {
					c := newTC(t, threads, tensor.Float32, 5)
					xs := []int{cs.m, cs.k}
					if transX {
						xs = []int{cs.k, cs.m}
					}
					v := make([]float32, xs[0]*xs[1])
					for i := range v {
						switch r := c.rng.IntN(200); {
						case r == 0:
							v[i] = float32(math.Copysign(0, -1))
						case r == 1:
							v[i] = -float32(c.rng.Float64())
						case r == 2:
							v[i] = float32(c.rng.Float64())
						}
					}
					x, err := c.be.WrapHost(v, xs)
					c.ok(err)
					b, _ := c.rand(cs.k, cs.n)
					c0, cv := c.rand(cs.m, cs.n)
					y := c.zeros(xs...)
					c.ok(c.be.DropoutApply(7, nil, 0.4, x, nil, y))
					c.ok(c.be.GEMM(transX, false, 1, y, b, 0.5, c0))
					want := get(c0)
					same := func(what string, got []float64) {
						t.Helper()
						for i := range want {
							if math.Float64bits(want[i]) != math.Float64bits(got[i]) {
								t.Fatalf("%s: c[%d] = %v, unfused %v", what, i, got[i], want[i])
							}
						}
					}
					scratch := c.zeros(max(backend.DropoutGEMMScratch(cs.m, cs.n, cs.k), 1))
					c1 := c.put([]int{cs.m, cs.n}, cv)
					c.ok(c.be.DropoutGEMM(7, nil, 0.4, transX, x, b, 0.5, c1, scratch, nil))
					if hostBuf(x).nz == nil {
						t.Fatal("no index for a matrix 1.5% non-zero")
					}
					same("drawn", get(c1))
					ks := backend.DropoutKeepWords(xs[0], xs[1])
					keep32, err := c.be.Alloc(tensor.Int32, ks, tensor.Host)
					c.ok(err)
					for i := range I32(keep32) {
						I32(keep32)[i] = -1
					}
					if transX {
						ones := c.put([]int{cs.m, 1}, slices.Repeat([]float64{1}, cs.m))
						c.ok(c.be.DropoutGEMM(7, nil, 0.4, false, x, ones, 0, c.zeros(cs.k, 1), c.zeros(max(backend.DropoutGEMMScratch(cs.k, 1, cs.m), 1)), keep32))
					}
					c2 := c.put([]int{cs.m, cs.n}, cv)
					c.ok(c.be.DropoutGEMM(7, nil, 0.4, transX, x, b, 0.5, c2, scratch, keep32))
					same("with keep bits", get(c2))
				})
			}
		}
	}
	t.Run("dense", func(t *testing.T) {
		c := newTC(t, 2, tensor.Float32, 5)
		v := make([]float32, 64*64)
		for i := range v {
			if i%16 == 0 { // 1/16 non-zero: above the index's 1/32
				v[i] = 1
			}
		}
		x, err := c.be.WrapHost(v, []int{64, 64})
		c.ok(err)
		b, _ := c.rand(64, 4)
		c.ok(c.be.DropoutGEMM(7, nil, 0.4, false, x, b, 0, c.zeros(64, 4), c.zeros(backend.DropoutGEMMScratch(64, 4, 64)), nil))
		if hostBuf(x).nz != nil {
			t.Fatal("a matrix 1/16 non-zero was indexed")
		}
	})
}

// TestSparseRowsMask checks the index's masking of regions against
// DropoutApply bit for bit, -0 included (the GEMM hides a -0 in most
// sums): whole rows and column ranges, one after another in one buffer,
// drawn (mode 0), drawn and recorded (mode 1), then read from the bits
// (mode 2).
func TestSparseRowsMask(t *testing.T) {
	const rows, cols, p = 40, 100, 0.3
	c := newTC(t, 2, tensor.Float32, 3)
	v := make([]float32, rows*cols)
	for i := range v {
		switch c.rng.IntN(80) {
		case 0:
			v[i] = float32(math.Copysign(0, -1))
		case 1:
			v[i] = float32(c.rng.NormFloat64())
		}
	}
	x, err := c.be.WrapHost(v, []int{rows, cols})
	c.ok(err)
	for _, keyed := range []bool{false, true} {
		var keys *tensor.Tensor
		if keyed {
			keys = c.randKeys(rows)
		}
		sparseRowsMask(t, c, x, keys, p)
	}
}

// sparseRowsMask is TestSparseRowsMask with x's rows keyed by keys (nil:
// by their positions).
func sparseRowsMask(t *testing.T, c *tc, x, keys *tensor.Tensor, p float64) {
	rows, cols := x.Rows(), x.Cols()
	y := c.zeros(rows, cols)
	c.ok(c.be.DropoutApply(11, keys, p, x, nil, y))
	want := F32(y)
	sp := c.be.sparseIndex(hostBuf(x), rows, cols)
	if sp == nil {
		t.Fatal("no index")
	}
	bits := make([]int32, rows*4)
	base, thr := backend.Mix64(11), backend.DropoutThreshold(p)
	for _, mode := range []int{0, 1, 2} {
		// One masker and one buffer for all regions, as a worker's slot:
		// garbage before the first (cleared), then each region over the
		// last one's elements (zeroed again), larger or smaller.
		mask := sp.masker(base, thr, rowKeys(keys), float32(1/(1-p)), bits, 4, mode)
		buf := slices.Repeat([]float32{9}, rows*cols)
		for _, r := range [][4]int{{3, 17, 32, 64}, {0, rows, 0, cols}, {5, 6, 96, 100}, {0, rows, 64, 100}, {1, 30, 0, 50}} {
			w := r[3] - r[2]
			mask(r[0], r[1], r[2], r[3], buf)
			for i := r[0]; i < r[1]; i++ {
				for j := r[2]; j < r[3]; j++ {
					g, w := buf[(i-r[0])*w+j-r[2]], want[i*cols+j]
					if math.Float32bits(g) != math.Float32bits(w) {
						t.Fatalf("mode %d region %v: (%d,%d) = %v, DropoutApply %v", mode, r, i, j, g, w)
					}
				}
			}
		}
	}
}
