package graph

import (
	"math"
	"slices"
	"testing"
)

func TestRandomNodes(t *testing.T) {
	cases := []struct {
		n    int
		frac float64
	}{{0, 0.5}, {1000, 0}, {1000, 1}, {100000, 0.1}, {100000, 0.5}}
	for _, c := range cases {
		got := RandomNodes(c.n, c.frac, 7)
		if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Errorf("n=%d frac=%v: ids not ascending and distinct", c.n, c.frac)
		}
		if want := float64(c.n) * c.frac; math.Abs(float64(len(got))-want) > 4*math.Sqrt(want+1) {
			t.Errorf("n=%d frac=%v: %d nodes, want about %.0f", c.n, c.frac, len(got), want)
		}
		if !slices.Equal(got, RandomNodes(c.n, c.frac, 7)) {
			t.Errorf("n=%d frac=%v: not deterministic", c.n, c.frac)
		}
	}
	if slices.Equal(RandomNodes(1000, 0.5, 1), RandomNodes(1000, 0.5, 2)) {
		t.Error("two seeds drew the same nodes")
	}
}
