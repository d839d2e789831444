package numpy

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"strata/core/graph"
	"strata/core/graph/graphtest"
)

// tinyWeights are weights for tinyNPYEdges, edge by edge (the duplicate
// 1->2 edges differ, so the order of the copies shows).
var tinyWeights = []float32{0.5, 2, 1, 3, 0, 7}

// edgeWeightsOf returns, per "src->dst", the weights of g's entries in
// CSR order.
func edgeWeightsOf(g *graph.CSR) map[string][]float32 {
	out := map[string][]float32{}
	for r := range g.NumRows {
		for e := g.Indptr[r]; e < g.Indptr[r+1]; e++ {
			k := fmt.Sprintf("%d->%d", g.Col(e), r)
			out[k] = append(out[k], g.Values[e])
		}
	}
	return out
}

func TestNPYEdgeWeights(t *testing.T) {
	want := map[string][]float32{}
	for e, uv := range tinyNPYEdges {
		k := fmt.Sprintf("%d->%d", uv[0], uv[1])
		want[k] = append(want[k], tinyWeights[e])
	}
	wide := make([]float64, len(tinyWeights))
	ints := make([]int64, len(tinyWeights))
	for e, w := range tinyWeights {
		wide[e] = float64(w)
		ints[e] = int64(w * 2)
	}
	intWant := map[string][]float32{}
	for k, ws := range want {
		for _, w := range ws {
			intWant[k] = append(intWant[k], float32(int64(w*2)))
		}
	}
	for _, c := range []struct {
		name string
		file []byte
		want map[string][]float32
	}{
		{"float32 (E,)", npyOf(tinyWeights, 6), want},
		{"float64 (E, 1)", npyOf(wide, 6, 1), want},
		{"float64 (E, 1) Fortran order", npyFile(1, "<f8", true, []int{6, 1}, leBytes(wide)), want},
		{"int64", npyOf(ints, 6), intWant},
	} {
		t.Run(c.name, func(t *testing.T) {
			files := tinyNPY()
			files["edge_weight.npy"] = c.file
			d, err := graph.Open(npyDir(t, files))
			if err != nil {
				t.Fatal(err)
			}
			if got := edgeWeightsOf(d.Graph); !mapsEqual(got, c.want) {
				t.Errorf("weights %v, want %v", got, c.want)
			}
			plain, err := graph.Open(npyDir(t, tinyNPY()))
			if err != nil {
				t.Fatal(err)
			}
			bare := graphtest.Clone(d.Graph)
			bare.Values = nil
			if !graphtest.SameCSR(bare, plain.Graph) {
				t.Error("the weighted graph's edges differ from the unweighted load's")
			}
		})
	}
}

func mapsEqual(a, b map[string][]float32) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func TestNPYEdgeWeightsRefused(t *testing.T) {
	nan := slices.Clone(tinyWeights)
	nan[1] = float32(math.NaN())
	neg := slices.Clone(tinyWeights)
	neg[4] = -1
	for _, c := range []struct {
		name  string
		edits map[string][]byte
		kind  error
		want  []string
	}{
		{"too few", map[string][]byte{"edge_weight.npy": npyOf(tinyWeights[:5], 5)}, graph.ErrCount, []string{"edge_weight.npy", "shape': [5], want (6,): one weight per edge of edge_index.npy (6 edges)"}},
		// A header declaring 2^40 weights over 24 bytes of data: refused by
		// its shape before anything is allocated.
		{"huge shape", map[string][]byte{"edge_weight.npy": npyFile(1, "<f4", false, []int{1 << 40}, leBytes(tinyWeights))}, graph.ErrCount, []string{"want (6,)"}},
		{"two columns", map[string][]byte{"edge_weight.npy": npyOf(append(slices.Clone(tinyWeights), tinyWeights...), 6, 2)}, graph.ErrCount, []string{"[6 2], want (6,)"}},
		{"NaN", map[string][]byte{"edge_weight.npy": npyOf(nan, 6)}, graph.ErrRange, []string{"edge_weight.npy", "edge 1 has weight NaN", "finite and >= 0"}},
		{"negative", map[string][]byte{"edge_weight.npy": npyOf(neg, 6)}, graph.ErrRange, []string{"edge 4 has weight -1"}},
		{"beyond float32", map[string][]byte{"edge_weight.npy": npyOf([]float64{1, 1, 1e300, 1, 1, 1}, 6)}, graph.ErrRange, []string{"edge 2 has weight 1e+300, beyond float32's range"}},
		{"bool", map[string][]byte{"edge_weight.npy": npyOf([]bool{true, true, false, true, true, true}, 6)}, graph.ErrFormat, []string{"bool data, want edge weights of a float or integer dtype"}},
		{"with edges.csv", map[string][]byte{"edge_index.npy": nil, "edges.csv": []byte("0,1\n1,2\n2,0\n3,3\n5,4\n1,2\n"), "edge_weight.npy": npyOf(tinyWeights, 6)}, graph.ErrFormat, []string{"the edges are in edges.csv", "edge_index.npy"}},
		{"edge features", map[string][]byte{"edge_attr.npy": npyOf(wideOf(tinyWeights), 6, 1)}, graph.ErrFormat, []string{"edge_attr.npy: per-edge features, which no layer reads yet", "edge_weight.npy"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			files := tinyNPY()
			for k, v := range c.edits {
				files[k] = v
			}
			_, err := graph.Open(npyDir(t, files))
			graphtest.WantErr(t, err, c.kind, c.want...)
		})
	}
}

func wideOf(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// TestNPYEdgeWeightsRoundTrip writes a weighted dataset as PyG's arrays
// (edge_weight.npy beside edge_index.npy) and reads it back; the
// both-directions graph of convert --to npy keeps every weight, its self
// loop's too.
func TestNPYEdgeWeightsRoundTrip(t *testing.T) {
	files := tinyNPY()
	files["edge_weight.npy"] = npyOf(tinyWeights, 6)
	d, err := graph.Open(npyDir(t, files))
	if err != nil {
		t.Fatal(err)
	}
	both, loops := BothDirections(d.Graph)
	if loops != 1 {
		t.Fatalf("%d loops kept, want 1", loops)
	}
	// 0-1, 1-2 (twice), 2-0, 4-5 both ways: each direction the mean of its
	// contributions; the loop 3->3 keeps its 3.
	want := map[string][]float32{"0->1": {0.5}, "1->0": {0.5}, "1->2": {4.5}, "2->1": {4.5}, "2->0": {1}, "0->2": {1},
		"5->4": {0}, "4->5": {0}, "3->3": {3}}
	if got := edgeWeightsOf(both); !mapsEqual(got, want) {
		t.Errorf("both directions: %v, want %v", got, want)
	}
	for _, g := range []*graph.CSR{d.Graph, both} {
		out := filepath.Join(t.TempDir(), "out")
		w := *d
		w.Graph = g
		if _, err := WriteNPYDir(out, &w); err != nil {
			t.Fatal(err)
		}
		back, err := graph.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		if !graphtest.SameCSR(back.Graph, g) {
			t.Errorf("read back %v %v, wrote %v %v", graphtest.RowsOf(back.Graph), back.Graph.Values, graphtest.RowsOf(g), g.Values)
		}
	}
}
