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
					}{{1, false}, {2, false}, {3, false}, {3, true}} {
						threads := run.threads
						name := fmt.Sprintf("%v/%dx%dx%d/trans=%v/beta=%v/threads=%d/avx2only=%v", dt, cs.m, cs.n, cs.k, transX, beta, threads, run.avx2Only)
						t.Run(name, func(t *testing.T) {
							c := newTC(t, threads, dt, 11)
							c.be = New(Options{Threads: threads, AVX2Only: run.avx2Only})
							xs := []int{cs.m, cs.k}
							if transX {
								xs = []int{cs.k, cs.m}
							}
							x, _ := c.rand(xs...)
							b, _ := c.rand(cs.k, cs.n)
							c0, cv := c.rand(cs.m, cs.n)
							c1 := c.put([]int{cs.m, cs.n}, cv)
							y := c.zeros(xs...)
							c.ok(c.be.DropoutApply(99, 0.5, x, nil, y))
							c.ok(c.be.GEMM(transX, false, 1, y, b, beta, c0))
							scratch := c.zeros(max(backend.DropoutGEMMScratch(cs.m, cs.n, cs.k), 1))
							c.ok(c.be.DropoutGEMM(99, 0.5, transX, x, b, beta, c1, scratch, nil))
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
								c.ok(c.be.DropoutGEMM(99, 0.5, false, x, ones, 0, rec, c.zeros(max(backend.DropoutGEMMScratch(cs.k, 1, cs.m), 1)), keep))
							}
							c.ok(c.be.DropoutGEMM(99, 0.5, transX, x, b, beta, c2, scratch, keep))
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
	if err := c.be.DropoutGEMM(1, 0.5, false, x, b, 0, out, small, nil); err == nil {
		t.Fatal("a scratch one element short was accepted")
	}
}
