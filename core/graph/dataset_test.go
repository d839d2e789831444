package graph_test

import (
	"errors"
	"slices"
	"testing"

	"strata/core/graph"
	"strata/core/graph/graphtest"
)

// validDataset returns a small valid dataset: 6 nodes, 2 features,
// 3 classes, node 4 unlabeled, splits train {0, 3} valid {1} test {2, 5}.
func validDataset() *graph.Dataset {
	return &graph.Dataset{
		Name: "toy", NumNodes: 6,
		Graph:    graph.FromEdges(6, [][2]int64{{0, 1}, {1, 2}, {2, 0}, {5, 4}}),
		Features: make([]float32, 12), FeatDim: 2,
		Labels: []int32{0, 1, 2, 1, -1, 0}, NumClasses: 3,
		Train: []int32{0, 3}, Valid: []int32{1}, Test: []int32{2, 5},
	}
}

func TestValidate(t *testing.T) {
	if err := validDataset().Validate(); err != nil {
		t.Fatalf("valid dataset: %v", err)
	}
	ok := []struct {
		name string
		edit func(d *graph.Dataset)
	}{
		{"no features", func(d *graph.Dataset) { d.Features, d.FeatDim = nil, 0 }},
		{"no labels or splits", func(d *graph.Dataset) { d.Labels, d.NumClasses, d.Train, d.Valid, d.Test = nil, 0, nil, nil, nil }},
		{"empty splits", func(d *graph.Dataset) { d.Train, d.Valid, d.Test = []int32{}, nil, []int32{} }},
		{"wide ids", func(d *graph.Dataset) { d.Graph = graphtest.Widen(d.Graph) }},
		{"edge values", func(d *graph.Dataset) { d.Graph.Values = []float32{1, 2, 3, 4} }},
		{"more classes than used", func(d *graph.Dataset) { d.NumClasses = 10 }},
		{"empty dataset", func(d *graph.Dataset) { *d = graph.Dataset{Graph: graph.FromEdges(0, nil)} }},
	}
	for _, c := range ok {
		d := validDataset()
		c.edit(d)
		if err := d.Validate(); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}

	bad := []struct {
		name string
		edit func(d *graph.Dataset)
		kind error
		want []string
	}{
		{"negative node count", func(d *graph.Dataset) { d.NumNodes = -1 }, graph.ErrRange, []string{"negative node count -1"}},
		{"no graph", func(d *graph.Dataset) { d.Graph = nil }, graph.ErrFormat, []string{"no graph"}},
		{"graph too small", func(d *graph.Dataset) { d.Graph = graph.FromEdges(5, nil) }, graph.ErrFormat, []string{"graph is 5 x 5 but the dataset has 6 nodes"}},
		{"graph not square", func(d *graph.Dataset) { d.Graph.NumCols = 7 }, graph.ErrFormat, []string{"graph is 6 x 7"}},
		{"column out of range", func(d *graph.Dataset) { d.Graph.Idx32[1] = 6 }, graph.ErrFormat, []string{"column 6 outside [0,6)"}},
		{"negative column", func(d *graph.Dataset) { d.Graph.Idx32[0] = -1 }, graph.ErrFormat, []string{"column -1"}},
		{"no ids", func(d *graph.Dataset) { d.Graph.Idx32 = nil }, graph.ErrFormat, []string{"exactly one of Idx32 and Idx64"}},
		{"both ids", func(d *graph.Dataset) { d.Graph.Idx64 = graphtest.Widen(d.Graph).Idx64 }, graph.ErrFormat, []string{"exactly one of Idx32 and Idx64"}},
		{"short indptr", func(d *graph.Dataset) { d.Graph.Indptr = d.Graph.Indptr[:6] }, graph.ErrFormat, []string{"indptr has 6 entries, want 7"}},
		{"decreasing indptr", func(d *graph.Dataset) { d.Graph.Indptr[2] = 3; d.Graph.Indptr[3] = 2 }, graph.ErrFormat, []string{"indptr decreases at row 2"}},
		{"id count", func(d *graph.Dataset) { d.Graph.Idx32 = d.Graph.Idx32[:3] }, graph.ErrFormat, []string{"3 column ids for 4 entries"}},
		{"value count", func(d *graph.Dataset) { d.Graph.Values = []float32{1} }, graph.ErrFormat, []string{"1 values for 4 entries"}},
		{"feature size", func(d *graph.Dataset) { d.Features = d.Features[:11] }, graph.ErrFormat, []string{"11 feature values for 6 nodes x 2 features"}},
		{"feature dim", func(d *graph.Dataset) { d.FeatDim = 3 }, graph.ErrFormat, []string{"12 feature values for 6 nodes x 3 features"}},
		{"features without dim", func(d *graph.Dataset) { d.FeatDim = 0 }, graph.ErrFormat, []string{"12 feature values"}},
		{"negative feature dim", func(d *graph.Dataset) { d.FeatDim, d.Features = -1, nil }, graph.ErrFormat, []string{"feature values"}},
		{"label count", func(d *graph.Dataset) { d.Labels = d.Labels[:5] }, graph.ErrFormat, []string{"5 labels for 6 nodes"}},
		{"label too large", func(d *graph.Dataset) { d.Labels[3] = 3 }, graph.ErrRange, []string{"node 3 has label 3 outside [-1,3)"}},
		{"label below -1", func(d *graph.Dataset) { d.Labels[4] = -2 }, graph.ErrRange, []string{"node 4 has label -2"}},
		{"labels without classes", func(d *graph.Dataset) { d.NumClasses = 0 }, graph.ErrRange, []string{"node 0 has label 0 outside [-1,0)"}},
		{"split id too large", func(d *graph.Dataset) { d.Test = []int32{2, 6} }, graph.ErrRange, []string{"test split: node 6 outside [0,6)"}},
		{"split id negative", func(d *graph.Dataset) { d.Valid = []int32{-1} }, graph.ErrRange, []string{"valid split: node -1"}},
		{"unsorted split", func(d *graph.Dataset) { d.Train = []int32{3, 0} }, graph.ErrSplit, []string{"train split is not ascending at position 1 (0 after 3)"}},
		{"duplicate in split", func(d *graph.Dataset) { d.Test = []int32{2, 2, 5} }, graph.ErrSplit, []string{"test split: node 2 listed twice"}},
		{"overlapping splits", func(d *graph.Dataset) { d.Test = []int32{0, 2} }, graph.ErrSplit, []string{"node 0 is in both the train and the test split"}},
		{"overlap valid test", func(d *graph.Dataset) { d.Test = []int32{1} }, graph.ErrSplit, []string{"node 1 is in both the valid and the test split"}},
		{"unlabeled in split", func(d *graph.Dataset) { d.Valid = []int32{1, 4} }, graph.ErrSplit, []string{"valid split: node 4 has no label"}},
		{"split without labels", func(d *graph.Dataset) { d.Labels, d.NumClasses = nil, 0 }, graph.ErrSplit, []string{"train split: node 0 has no label"}},
		{"unnamed", func(d *graph.Dataset) { d.Name = ""; d.Labels[0] = 9 }, graph.ErrRange, []string{"dataset: node 0 has label 9"}},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			d := validDataset()
			c.edit(d)
			err := d.Validate()
			name := "toy: "
			if d.Name == "" {
				name = "dataset: "
			}
			graphtest.WantErr(t, err, c.kind, append([]string{name}, c.want...)...)
			for _, k := range []error{graph.ErrFormat, graph.ErrRange, graph.ErrSplit, graph.ErrMissing} {
				if k != c.kind && !(k == graph.ErrFormat && c.kind == graph.ErrSplit) && errors.Is(err, k) {
					t.Errorf("error %v also wraps %v", err, k)
				}
			}
		})
	}
}

func TestMemoryFootprint(t *testing.T) {
	d := validDataset()
	d.Graph.Values = []float32{1, 2, 3, 4}
	got := d.MemoryFootprint()
	want := []graph.Component{
		{"graph.indptr", 7 * 8}, {"graph.indices", 4 * 4}, {"graph.values", 4 * 4},
		{"features", 12 * 4}, {"labels", 6 * 4}, {"splits", 5 * 4},
	}
	if !slices.Equal(got, want) {
		t.Errorf("footprint %v, want %v", got, want)
	}
	if tot := graph.TotalBytes(got); tot != 56+16+16+48+24+20 {
		t.Errorf("total %d", tot)
	}
	d.Graph = graphtest.Widen(d.Graph)
	d.Graph.Values = nil
	d.Features, d.FeatDim = nil, 0
	got = d.MemoryFootprint()
	want = []graph.Component{{"graph.indptr", 56}, {"graph.indices", 4 * 8}, {"features", 0}, {"labels", 24}, {"splits", 20}}
	if !slices.Equal(got, want) {
		t.Errorf("wide footprint %v, want %v", got, want)
	}
	got = (&graph.Dataset{NumNodes: 3}).MemoryFootprint()
	if want := []graph.Component{{"features", 0}, {"labels", 0}, {"splits", 0}}; !slices.Equal(got, want) || graph.TotalBytes(got) != 0 {
		t.Errorf("no graph: %v", got)
	}
}
