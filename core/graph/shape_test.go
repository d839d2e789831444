package graph_test

import (
	"testing"

	"strata/core/graph"
)

// TestShape checks the degree shape against shares counted by hand: a
// ring (every node in- plus out-degree 2), a star (the hub holds half of
// the endpoints) and a graph without edges.
func TestShape(t *testing.T) {
	ring := make([][2]int64, 100)
	star := make([][2]int64, 99)
	for i := range ring {
		ring[i] = [2]int64{int64(i), int64(i+1) % 100}
	}
	for i := range star {
		star[i] = [2]int64{0, int64(i + 1)}
	}
	for _, c := range []struct {
		name string
		g    *graph.CSR
		want graph.DegreeShape
	}{
		{"ring", graph.FromEdges(100, ring), graph.DegreeShape{Top1: 2.0 / 200, Top10: 20.0 / 200}},
		// 198 endpoints: the hub's 99, then one per leaf.
		{"star", graph.FromEdges(100, star), graph.DegreeShape{Top1: 99.0 / 198, Top10: (99.0 + 9) / 198}},
		{"no edges", graph.FromEdges(5, nil), graph.DegreeShape{}},
	} {
		if got := c.g.Shape(); got != c.want {
			t.Errorf("%s: Shape() = %+v, want %+v", c.name, got, c.want)
		}
	}
}
