package numpy

import (
	"math"
	"path/filepath"
	"slices"
	"testing"

	"strata/core/graph"
	"strata/core/graph/graphtest"
)

// TestLoadNPYTargets reads y shapes as class labels, multi-label or
// regression targets, by shape and the regression flag.
func TestLoadNPYTargets(t *testing.T) {
	nan := float32(math.NaN())
	cases := []struct {
		name       string
		y          []byte
		regression bool
		kind       graph.TargetKind
		cols       int
		targets    []float32
	}{
		{"labels (N,)", npyOf([]int64{0, 1, 2, 1, -1, 0}, 6), false, graph.Classes, 3, nil},
		{"multi-label int32", npyOf([]int32{1, 0, 0, 1, 1, 1, 0, 0, 1, 0, 0, 1}, 6, 2), false, graph.MultiLabel, 2,
			[]float32{1, 0, 0, 1, 1, 1, 0, 0, 1, 0, 0, 1}},
		{"multi-label float with a missing node", npyOf([]float32{1, 0, 0, 1, 1, 1, 0, 0, nan, 0, 0, 1}, 6, 2), false, graph.MultiLabel, 2,
			[]float32{1, 0, 0, 1, 1, 1, 0, 0, nan, 0, 0, 1}},
		{"regression (N,)", npyOf([]float64{0.5, -1, 2.25, 3, math.NaN(), 7}, 6), true, graph.Regression, 1,
			[]float32{0.5, -1, 2.25, 3, nan, 7}},
		{"regression (N, 2) int", npyOf([]int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, 6, 2), true, graph.Regression, 2,
			[]float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := tinyNPY()
			files["labels.npy"] = c.y
			d, err := loadNPYDir(npyDir(t, files), 0, c.regression)
			if err != nil {
				t.Fatal(err)
			}
			if d.Kind != c.kind || d.NumClasses != c.cols || d.NumNodes != 6 {
				t.Fatalf("kind %v, %d columns, %d nodes; want %v, %d, 6", d.Kind, d.NumClasses, d.NumNodes, c.kind, c.cols)
			}
			same := func(a, b float32) bool { return a == b || a != a && b != b }
			if !slices.EqualFunc(d.Targets, c.targets, same) || (c.kind != graph.Classes) != (d.Labels == nil) {
				t.Fatalf("targets %v (labels %v), want %v", d.Targets, d.Labels, c.targets)
			}
			if err := d.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestLoadNPYTargetsMalformed: every bad target file is refused, naming
// the file, the element and the fix.
func TestLoadNPYTargetsMalformed(t *testing.T) {
	nan := float32(math.NaN())
	cases := []struct {
		name       string
		change     map[string][]byte
		regression bool
		kind       error
		want       []string
	}{
		{"multi-label 2", map[string][]byte{"labels.npy": npyOf([]int64{0, 1, 2, 1, 0, 0, 1, 1, 0, 0, 1, 0}, 6, 2)}, false, graph.ErrRange,
			[]string{"element [1, 0]: multi-label target 2 is not 0 or 1"}},
		{"multi-label -1", map[string][]byte{"labels.npy": npyOf([]int32{0, 1, -1, 1, 0, 0, 1, 1, 0, 0, 1, 0}, 6, 2)}, false, graph.ErrRange,
			[]string{"element [1, 0]: multi-label target -1 is not 0 or 1"}},
		{"multi-label inf", map[string][]byte{"labels.npy": npyOf([]float32{0, 1, float32(math.Inf(1)), 1, 0, 0, 1, 1, 0, 0, 1, 0}, 6, 2)}, false, graph.ErrRange,
			[]string{"element [1, 0]", "+Inf is not finite"}},
		{"regression 3-D", map[string][]byte{"labels.npy": npyOf([]float32{1, 2, 3, 4, 5, 6}, 3, 1, 2)}, true, graph.ErrFormat,
			[]string{"want (N,) or (N, T) regression targets"}},
		{"regression bool", map[string][]byte{"labels.npy": npyOf(make([]bool, 6), 6)}, true, graph.ErrFormat,
			[]string{"bool data, want a numeric dtype"}},
		{"regression NaN in a split", map[string][]byte{"labels.npy": npyOf([]float32{nan, 1, 2, 3, 4, 5}, 6)}, true, graph.ErrSplit,
			[]string{"train_idx.npy", "node 0 has no label"}},
		{"multi-label NaN in a split", map[string][]byte{"labels.npy": npyOf([]float32{1, 0, 0, 1, 1, 1, 0, nan, 0, 0, 0, 1}, 6, 2)}, false, graph.ErrSplit,
			[]string{"train_idx.npy", "node 3 has no label"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := tinyNPY()
			for k, v := range c.change {
				files[k] = v
			}
			dir := npyDir(t, files)
			d, err := loadNPYDir(dir, 0, c.regression)
			if d != nil {
				t.Error("dataset returned with an error")
			}
			graphtest.WantErr(t, err, c.kind, c.want...)
			graphtest.WantErr(t, err, c.kind, filepath.Base(dir))
		})
	}
}
