package steprun

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/sampling"
	"strata/core/train"
)

// TestBlockWeights: a block's entries take the graph's weights of their
// edges (by global ids); a sum's values are those times the sampler's;
// adj_self adds each destination's loop of weight 1; an entry that is
// not an edge of the graph is an error naming it.
func TestBlockWeights(t *testing.T) {
	// 4 nodes, rows = destinations: 0 <- 1 (2), 0 <- 2 (3), 1 <- 0 (5),
	// 1 <- 3 (7), 2 <- 0 (11), 3 <- 1 (13).
	g := &graph.CSR{NumRows: 4, NumCols: 4, Indptr: []int64{0, 2, 4, 5, 6}, Idx32: []int32{1, 2, 0, 3, 0, 1},
		Values: []float32{2, 3, 5, 7, 11, 13}}
	r := &Runner{Env: Env{Adjs: &train.Adjacencies{Adj: g}}}
	// Destinations 1 and 0 (local 0, 1), sources 1 0 3 2: local row 0 (node
	// 1) holds nodes 3 and 0, row 1 (node 0) holds node 2.
	b := sampling.Block{Dst: []int32{1, 0}, Src: []int32{1, 0, 3, 2},
		Adj: &graph.CSR{NumRows: 2, NumCols: 4, Indptr: []int64{0, 2, 3}, Idx32: []int32{2, 1, 3}, Values: []float32{0.5, 0.25, 4}}}
	w, err := r.blockWeights(b)
	if err != nil {
		t.Fatal(err)
	}
	if want := []float32{7, 5, 3}; !slices.Equal(w, want) {
		t.Fatalf("block weights %v, want %v", w, want)
	}
	for _, c := range []struct {
		name, want string
	}{
		{"adj", "[[2 1] [3]] values [3.5 1.25 12] weights [7 5 3]"},
		{"adj_self", "[[0 1 2] [1 3]] values [1 5 7 1 3] weights [1 5 7 1 3]"},
	} {
		adj, ew := blockGraph(b, c.name, w)
		var rows [][]int64
		for i := range adj.NumRows {
			var row []int64
			for k := adj.Indptr[i]; k < adj.Indptr[i+1]; k++ {
				row = append(row, adj.Col(k))
			}
			rows = append(rows, row)
		}
		if got := fmt.Sprint(rows, " values ", adj.Values, " weights ", ew); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	bad := b
	bad.Src = []int32{1, 0, 2, 3} // row 0 now claims 2 -> 1, which the graph lacks
	if _, err := r.blockWeights(bad); err == nil || !strings.Contains(err.Error(), "edge 2 -> 1 is not an edge of the graph") {
		t.Errorf("error %v, want one naming the edge 2 -> 1", err)
	}
	// Unweighted: nothing changes.
	r.Env.Adjs.Adj = g.Unweighted()
	if w, err := r.blockWeights(b); w != nil || err != nil {
		t.Errorf("unweighted graph: weights %v, %v", w, err)
	}
	if adj, ew := blockGraph(b, "adj", nil); adj != b.Adj || ew != nil {
		t.Error("unweighted adj is not the block's own")
	}
}
