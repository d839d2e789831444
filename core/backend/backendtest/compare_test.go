package backendtest

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestCompare checks that Compare reports deliberately perturbed data, at
// the right index, and accepts data within the tolerance.
func TestCompare(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	base := []float32{0.5, -2, 1000, 3, 0, -7.25}
	perturbed := func(i int, d float32) []float32 {
		v := append([]float32(nil), base...)
		v[i] += d
		return v
	}
	cases := []struct {
		name      string
		want, got any
		tol       float64
		wantIdx   int
		wantRel   float64 // to 1% (float32 rounding) when finite and > 0
	}{
		{"equal", base, perturbed(0, 0), 0, -1, 0},
		{"small absolute", base, perturbed(3, 1e-3), 1e-5, 3, 1e-3 / 3},
		{"relative to large value", base, perturbed(2, 0.5), 1e-5, 2, 0.5 / 1000},
		{"absolute below one", base, perturbed(0, 2e-6), 1e-5, -1, float64(perturbed(0, 2e-6)[0]) - 0.5},
		{"within tol", base, perturbed(5, 1e-5), 1e-5, -1, 1e-5 / 7.25},
		{"largest wins", []float64{1, 2, 3, 4}, []float64{1.1, 2, 3, 4.8}, 1e-10, 3, 0.2},
		{"exact f64", []float64{1, 2}, []float64{1, math.Nextafter(2, 3)}, 0, 1, (math.Nextafter(2, 3) - 2) / 2},
		{"nan got", []float64{1, 2}, []float64{1, nan}, 1e-5, 1, inf},
		{"nan want", []float64{nan, 2}, []float64{1, 2}, 1e-5, 0, inf},
		{"nan both", []float64{nan, 2}, []float64{nan, 2}, 0, -1, 0},
		{"inf both", []float64{inf, 2}, []float64{inf, 2}, 0, -1, 0},
		{"inf sign", []float64{inf, 2}, []float64{-inf, 2}, 1e-5, 0, inf},
		{"int32 exact", []int32{4, -1, 9}, []int32{4, 2, 9}, 0, 1, 3},
		{"int32 equal", []int32{4, -1, 9}, []int32{4, -1, 9}, 0, -1, 0},
		{"int64 beyond float64", []int64{1 << 62}, []int64{1<<62 + 1}, 0, 0, inf},
		{"type mismatch", []float32{1}, []float64{1}, 1, 0, inf},
		{"length mismatch", []int32{1, 2}, []int32{1}, 1, 0, inf},
		{"unsupported type", []int{1}, []int{1}, 1, 0, inf},
		{"empty", []float32{}, []float32{}, 0, -1, 0},
	}
	for _, c := range cases {
		rel, idx := Compare(c.want, c.got, c.tol)
		if idx != c.wantIdx {
			t.Errorf("%s: Compare index %d (max rel err %g), want %d", c.name, idx, rel, c.wantIdx)
		}
		switch {
		case math.IsInf(c.wantRel, 1):
			if !math.IsInf(rel, 1) {
				t.Errorf("%s: max rel err %g, want +Inf", c.name, rel)
			}
		case c.wantRel == 0:
			if rel != 0 {
				t.Errorf("%s: max rel err %g, want 0", c.name, rel)
			}
		case math.Abs(rel-c.wantRel) > 1e-2*c.wantRel:
			t.Errorf("%s: max rel err %g, want %g", c.name, rel, c.wantRel)
		}
	}
}

// TestCompareRandomPerturbation perturbs one random element of random
// data by ten times the tolerance and checks that Compare finds it.
func TestCompareRandomPerturbation(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		n := 1 + rng.IntN(500)
		w := make([]float32, n)
		for i := range w {
			w[i] = float32(rng.NormFloat64() * 100)
		}
		g := append([]float32(nil), w...)
		i := rng.IntN(n)
		g[i] = float32(float64(g[i]) + 1e-4*max(1, math.Abs(float64(g[i]))))
		if rel, idx := Compare(w, g, 1e-5); idx != i || rel < 5e-5 {
			t.Fatalf("perturbed element %d of %d: Compare gave (%g, %d)", i, n, rel, idx)
		}
	}
}

// TestRandCSR checks the generated graphs have the features the suite
// relies on: empty rows, duplicate edges, self loops, an unused source in
// the rectangular graph, and sizes the CUDA mock can afford.
func TestRandCSR(t *testing.T) {
	s := &suite{opts: Options{}.withDefaults()}
	for _, specs := range [][]graphSpec{graphSpecs, lstmSpecs} {
		for _, sp := range specs {
			s.each(t, "graph", sp.name, func(c *tc) {
				g := c.randCSR(sp)
				if err := g.Validate(); err != nil {
					t.Fatal(err)
				}
				if g.NumRows > 300 || g.NumCols > 300 || g.NNZ() > 3000 {
					t.Errorf("%d×%d with %d edges is too big for the mock", g.NumRows, g.NumCols, g.NNZ())
				}
				if (g.Values != nil) != sp.values {
					t.Errorf("values set %v, want %v", g.Values != nil, sp.values)
				}
				if sp.maxDeg == 0 {
					if g.NNZ() != 0 {
						t.Errorf("%d edges, want none", g.NNZ())
					}
					return
				}
				empty, dups, loops, unsorted, maxDeg := 0, 0, 0, 0, int64(0)
				used := make([]bool, g.NumCols)
				for i := range g.NumRows {
					k0, k1 := g.Indptr[i], g.Indptr[i+1]
					maxDeg = max(maxDeg, k1-k0)
					if k0 == k1 {
						empty++
					}
					seen := map[int32]bool{}
					for k := k0; k < k1; k++ {
						j := g.Idx32[k]
						used[j] = true
						if seen[j] {
							dups++
						}
						seen[j] = true
						if int(j) == i {
							loops++
						}
						if k > k0 && j < g.Idx32[k-1] {
							unsorted++
						}
					}
				}
				if empty == 0 || dups == 0 || loops == 0 {
					t.Errorf("%d empty rows, %d duplicate edges, %d self loops: want some of each", empty, dups, loops)
				}
				if maxDeg > int64(sp.maxDeg) {
					t.Errorf("max degree %d, want ≤ %d", maxDeg, sp.maxDeg)
				}
				if sp.sorted != (unsorted == 0) {
					t.Errorf("%d unsorted entries with sorted = %v", unsorted, sp.sorted)
				}
				if sp.rows != sp.cols && used[g.NumCols-1] {
					t.Errorf("the last source of a rectangular graph has edges")
				}
			})
		}
	}
}
