package wasm

import (
	"context"
	"math"
	"testing"

	"strata/internal/floattol"
)

// TestHongTuCostByHand checks the HongTu cost model
// (models/costmodels/hongtu) against answers worked out by hand: Eq. 4's
// deduplicated communication cost (op 0) and §4.2's choice among caching,
// recomputing and splitting a layer's intermediates (op 1), ties included
// (recompute, then split, then cache).
func TestHongTuCostByHand(t *testing.T) {
	m := loadGuest(t, "models/costmodels/hongtu")
	c, err := m.CostModel(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// Each output is a sum of at most 3 quotients: at most 6 roundings
	// from the exact value (γ_6 relative), and the GB/s → B/s products.
	near := func(got, want float64) bool {
		if math.IsInf(want, 1) { // no split price: the layer does not split
			return math.IsInf(got, 1)
		}
		return math.Abs(got-want) <= floattol.Gamma(8, floattol.UFloat64)*math.Abs(want)
	}
	const gb = 1e9
	inf := math.Inf(1)
	cases := []struct {
		name string
		op   int32
		in   []float64
		want [4]float64
	}{
		// HongTu's Fig. 6(b) example, one row = 1 GB: 19 loads without
		// deduplication, 11 after p2p sharing, 8 after reuse. T_hd 10,
		// T_dd 50, T_ru 1000 GB/s: C = 8/10 + (19−11)/50 + (11−8)/1000 =
		// 0.8 + 0.16 + 0.003.
		{"Eq. 4, Fig. 6b", 0, []float64{10, 50, 1000, 19 * gb, 11 * gb, 8 * gb}, [4]float64{0.963, 0.8, 0.16, 0.003}},
		// No peer link: the 8 GB of duplicates cross the host twice, 1.6 s.
		{"Eq. 4, no peer link", 0, []float64{10, 0, 1000, 19 * gb, 11 * gb, 8 * gb}, [4]float64{2.403, 0.8, 1.6, 0.003}},
		// Nothing to deduplicate: every byte crosses from the host once.
		{"Eq. 4, no duplicates", 0, []float64{16, 50, 2000, 4 * gb, 4 * gb, 4 * gb}, [4]float64{0.25, 0.25, 0, 0}},
		// §4.2: saved 4 GB, rows 2 GB read again by the backward, forward
		// 0.5 s at T_hd 10: cache = (2·4 + 2)/10 = 1.0, recompute = 2/10 +
		// 0.5 = 0.7: recompute is cheaper (out[2] = 0); the layer does
		// not split (in[5..8] absent): no split price.
		{"§4.2, recompute wins", 1, []float64{10, 4 * gb, 2 * gb, 0.5, 1}, [4]float64{1.0, 0.7, 0, inf}},
		// A forward of 1 s: recompute = 1.2 > cache = 1.0.
		{"§4.2, cache wins", 1, []float64{10, 4 * gb, 2 * gb, 1, 1}, [4]float64{1.0, 1.2, 1, inf}},
		// The backward does not read the rows: cache = 2·4/10 = 0.8.
		{"§4.2, rows not read", 1, []float64{10, 4 * gb, 2 * gb, 0.5, 0}, [4]float64{0.8, 0.7, 0, inf}},
		// Fig. 4c, an aggregation before the weight: cache = 2·4/10 =
		// 0.8, recompute = 2/10 + 0.5 = 0.7; the split keeps 1 GB, loads
		// no input row and reruns 0.1 s: split = 2·1/10 + 0.1 = 0.3 wins.
		{"split wins", 1, []float64{10, 4 * gb, 2 * gb, 0.5, 0, 1 * gb, 0, 0.1, 1}, [4]float64{0.8, 0.7, 2, 0.3}},
		// A root term: the split also loads 0.5 GB of destination rows,
		// split = (2·1 + 0.5)/10 + 0.1 = 0.35, still the cheapest.
		{"split wins, destination rows", 1, []float64{10, 4 * gb, 2 * gb, 0.5, 0, 1 * gb, 0.5 * gb, 0.1, 1}, [4]float64{0.8, 0.7, 2, 0.35}},
		// Small intermediates, wide input rows: cache = 2·1/10 = 0.2,
		// recompute = 4/10 + 1 = 1.4, split (it reloads the 4 GB) =
		// (2·1 + 4)/10 + 0.05 = 0.65: cache wins.
		{"cache wins against split", 1, []float64{10, 1 * gb, 4 * gb, 1, 0, 1 * gb, 4 * gb, 0.05, 1}, [4]float64{0.2, 1.4, 1, 0.65}},
		// Narrow input rows, a short forward: cache = (2·4 + 1)/10 = 0.9,
		// recompute = 1/10 + 0.1 = 0.2, split = (2·1 + 1)/10 + 0.05 =
		// 0.35: recompute wins.
		{"recompute wins against split", 1, []float64{10, 4 * gb, 1 * gb, 0.1, 1, 1 * gb, 1 * gb, 0.05, 1}, [4]float64{0.9, 0.2, 0, 0.35}},
		// A GAT-like layer (in[8] = 0) never splits, even when its split
		// inputs would price it at 0: recompute 0.7 against cache 1.0.
		{"no split for attention", 1, []float64{10, 4 * gb, 2 * gb, 0.5, 1, 0, 0, 0, 0}, [4]float64{1.0, 0.7, 0, inf}},
		// Ties, priced by the same expression (2 GB/T_hd + 0.3 s, or
		// 2 GB/T_hd): recompute before split, split before cache.
		{"tie, recompute and split", 1, []float64{10, 4 * gb, 2 * gb, 0.3, 0, 1 * gb, 0, 0.3, 1}, [4]float64{0.8, 0.5, 0, 0.5}},
		{"tie, split and cache", 1, []float64{10, 1 * gb, 2 * gb, 0.5, 0, 1 * gb, 0, 0, 1}, [4]float64{0.2, 0.7, 2, 0.2}},
		{"tie, all three", 1, []float64{10, 1 * gb, 2 * gb, 0, 0, 1 * gb, 0, 0, 1}, [4]float64{0.2, 0.2, 0, 0.2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := c.Predict(tc.op, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range tc.want {
				if i == 2 && out[i] != want || i != 2 && !near(out[i], want) {
					t.Errorf("out[%d] = %.17g, want %g (all: %v)", i, out[i], want, out)
				}
			}
		})
	}
	for _, in := range [][]float64{
		{10, 50, 1000, 11 * gb, 19 * gb, 8 * gb}, // V_+p2p > V_ori
		{10, 50, 1000, 19 * gb, 8 * gb, 11 * gb}, // V_+ru > V_+p2p
		{0, 50, 1000, 19 * gb, 11 * gb, 8 * gb},  // no host link
	} {
		if out, err := c.Predict(0, in); err == nil {
			t.Errorf("Eq. 4 of %v = %v, want an error", in, out)
		}
	}
	for _, in := range [][]float64{
		{10, 4 * gb, 2 * gb, 0.5, 0, -1, 0, 0.1, 1}, // negative kept bytes
		{10, 4 * gb, 2 * gb, 0.5, 0, 1, -1, 0.1, 1}, // negative reload
		{10, 4 * gb, 2 * gb, 0.5, 0, 1, 0, -0.1, 1}, // negative rerun
	} {
		if out, err := c.Predict(1, in); err == nil {
			t.Errorf("intermediates of %v = %v, want an error", in, out)
		}
	}
}
