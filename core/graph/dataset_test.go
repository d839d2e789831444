package graph

import (
	"errors"
	"slices"
	"testing"
)

// validDataset returns a small valid dataset: 6 nodes, 2 features,
// 3 classes, node 4 unlabeled, splits train {0, 3} valid {1} test {2, 5}.
func validDataset() *Dataset {
	return &Dataset{
		Name: "toy", NumNodes: 6,
		Graph:    FromEdges(6, [][2]int64{{0, 1}, {1, 2}, {2, 0}, {5, 4}}),
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
		edit func(d *Dataset)
	}{
		{"no features", func(d *Dataset) { d.Features, d.FeatDim = nil, 0 }},
		{"no labels or splits", func(d *Dataset) { d.Labels, d.NumClasses, d.Train, d.Valid, d.Test = nil, 0, nil, nil, nil }},
		{"empty splits", func(d *Dataset) { d.Train, d.Valid, d.Test = []int32{}, nil, []int32{} }},
		{"wide ids", func(d *Dataset) { d.Graph = widen(d.Graph) }},
		{"edge values", func(d *Dataset) { d.Graph.Values = []float32{1, 2, 3, 4} }},
		{"more classes than used", func(d *Dataset) { d.NumClasses = 10 }},
		{"empty dataset", func(d *Dataset) { *d = Dataset{Graph: FromEdges(0, nil)} }},
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
		edit func(d *Dataset)
		kind error
		want []string
	}{
		{"negative node count", func(d *Dataset) { d.NumNodes = -1 }, ErrRange, []string{"negative node count -1"}},
		{"no graph", func(d *Dataset) { d.Graph = nil }, ErrFormat, []string{"no graph"}},
		{"graph too small", func(d *Dataset) { d.Graph = FromEdges(5, nil) }, ErrFormat, []string{"graph is 5 x 5 but the dataset has 6 nodes"}},
		{"graph not square", func(d *Dataset) { d.Graph.NumCols = 7 }, ErrFormat, []string{"graph is 6 x 7"}},
		{"column out of range", func(d *Dataset) { d.Graph.Idx32[1] = 6 }, ErrFormat, []string{"column 6 outside [0,6)"}},
		{"negative column", func(d *Dataset) { d.Graph.Idx32[0] = -1 }, ErrFormat, []string{"column -1"}},
		{"no ids", func(d *Dataset) { d.Graph.Idx32 = nil }, ErrFormat, []string{"exactly one of Idx32 and Idx64"}},
		{"both ids", func(d *Dataset) { d.Graph.Idx64 = widen(d.Graph).Idx64 }, ErrFormat, []string{"exactly one of Idx32 and Idx64"}},
		{"short indptr", func(d *Dataset) { d.Graph.Indptr = d.Graph.Indptr[:6] }, ErrFormat, []string{"indptr has 6 entries, want 7"}},
		{"decreasing indptr", func(d *Dataset) { d.Graph.Indptr[2] = 3; d.Graph.Indptr[3] = 2 }, ErrFormat, []string{"indptr decreases at row 2"}},
		{"id count", func(d *Dataset) { d.Graph.Idx32 = d.Graph.Idx32[:3] }, ErrFormat, []string{"3 column ids for 4 entries"}},
		{"value count", func(d *Dataset) { d.Graph.Values = []float32{1} }, ErrFormat, []string{"1 values for 4 entries"}},
		{"feature size", func(d *Dataset) { d.Features = d.Features[:11] }, ErrFormat, []string{"11 feature values for 6 nodes x 2 features"}},
		{"feature dim", func(d *Dataset) { d.FeatDim = 3 }, ErrFormat, []string{"12 feature values for 6 nodes x 3 features"}},
		{"features without dim", func(d *Dataset) { d.FeatDim = 0 }, ErrFormat, []string{"12 feature values"}},
		{"negative feature dim", func(d *Dataset) { d.FeatDim, d.Features = -1, nil }, ErrFormat, []string{"feature values"}},
		{"label count", func(d *Dataset) { d.Labels = d.Labels[:5] }, ErrFormat, []string{"5 labels for 6 nodes"}},
		{"label too large", func(d *Dataset) { d.Labels[3] = 3 }, ErrRange, []string{"node 3 has label 3 outside [-1,3)"}},
		{"label below -1", func(d *Dataset) { d.Labels[4] = -2 }, ErrRange, []string{"node 4 has label -2"}},
		{"labels without classes", func(d *Dataset) { d.NumClasses = 0 }, ErrRange, []string{"node 0 has label 0 outside [-1,0)"}},
		{"split id too large", func(d *Dataset) { d.Test = []int32{2, 6} }, ErrRange, []string{"test split: node 6 outside [0,6)"}},
		{"split id negative", func(d *Dataset) { d.Valid = []int32{-1} }, ErrRange, []string{"valid split: node -1"}},
		{"unsorted split", func(d *Dataset) { d.Train = []int32{3, 0} }, ErrSplit, []string{"train split is not ascending at position 1 (0 after 3)"}},
		{"duplicate in split", func(d *Dataset) { d.Test = []int32{2, 2, 5} }, ErrSplit, []string{"test split: node 2 listed twice"}},
		{"overlapping splits", func(d *Dataset) { d.Test = []int32{0, 2} }, ErrSplit, []string{"node 0 is in both the train and the test split"}},
		{"overlap valid test", func(d *Dataset) { d.Test = []int32{1} }, ErrSplit, []string{"node 1 is in both the valid and the test split"}},
		{"unlabeled in split", func(d *Dataset) { d.Valid = []int32{1, 4} }, ErrSplit, []string{"valid split: node 4 has no label"}},
		{"split without labels", func(d *Dataset) { d.Labels, d.NumClasses = nil, 0 }, ErrSplit, []string{"train split: node 0 has no label"}},
		{"unnamed", func(d *Dataset) { d.Name = ""; d.Labels[0] = 9 }, ErrRange, []string{"dataset: node 0 has label 9"}},
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
			wantErr(t, err, c.kind, append([]string{name}, c.want...)...)
			for _, k := range []error{ErrFormat, ErrRange, ErrSplit, ErrMissing} {
				if k != c.kind && !(k == ErrFormat && c.kind == ErrSplit) && errors.Is(err, k) {
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
	want := []Component{
		{"graph.indptr", 7 * 8}, {"graph.indices", 4 * 4}, {"graph.values", 4 * 4},
		{"features", 12 * 4}, {"labels", 6 * 4}, {"splits", 5 * 4},
	}
	if !slices.Equal(got, want) {
		t.Errorf("footprint %v, want %v", got, want)
	}
	if tot := TotalBytes(got); tot != 56+16+16+48+24+20 {
		t.Errorf("total %d", tot)
	}
	d.Graph = widen(d.Graph)
	d.Graph.Values = nil
	d.Features, d.FeatDim = nil, 0
	got = d.MemoryFootprint()
	want = []Component{{"graph.indptr", 56}, {"graph.indices", 4 * 8}, {"features", 0}, {"labels", 24}, {"splits", 20}}
	if !slices.Equal(got, want) {
		t.Errorf("wide footprint %v, want %v", got, want)
	}
	got = (&Dataset{NumNodes: 3}).MemoryFootprint()
	if want := []Component{{"features", 0}, {"labels", 0}, {"splits", 0}}; !slices.Equal(got, want) || TotalBytes(got) != 0 {
		t.Errorf("no graph: %v", got)
	}
}
