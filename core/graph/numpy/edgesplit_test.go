package numpy

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"strata/core/graph"
)

// coraSplit is a generated split of Cora's edges.
func coraSplit(t *testing.T) *graph.EdgeSplit {
	t.Helper()
	ds, err := graph.Open("embedded:cora")
	if err != nil {
		t.Fatal(err)
	}
	s, err := graph.SplitEdges(ds.Graph, graph.EdgeSplitSpec{Train: 85, Valid: 5, Test: 10, Seed: 1}, true)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestEdgeSplitLayouts writes a split as a directory of .npy files and as
// a .npz archive of the same arrays: both read back as the split's pairs,
// every part, in order.
func TestEdgeSplitLayouts(t *testing.T) {
	s := coraSplit(t)
	dir := filepath.Join(t.TempDir(), "split")
	files, err := WriteEdgeSplitDir(context.Background(), dir, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(graph.EdgeSplitParts) {
		t.Fatalf("wrote %v, want every part", files)
	}
	arrays, shapes := map[string]any{}, map[string][]int{}
	for i, p := range s.Parts() {
		ids := make([]int64, 0, 2*p.Len())
		for j := range p.Src {
			ids = append(ids, int64(p.Src[j]), int64(p.Dst[j]))
		}
		arrays[graph.EdgeSplitParts[i]], shapes[graph.EdgeSplitParts[i]] = ids, []int{p.Len(), 2}
	}
	npz := filepath.Join(t.TempDir(), "split.npz")
	if err := writeNPZArrays(npz, arrays, shapes); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{dir, npz} {
		sh, err := ReadEdgeSplit(path, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range s.Parts() {
			got := sh.Pairs[i]
			if sh.Files[i] == "" || !slices.Equal(got.Src, p.Src) || !slices.Equal(got.Dst, p.Dst) {
				t.Fatalf("%s: part %s (file %q) differs from the split's %d pairs", path, graph.EdgeSplitParts[i], sh.Files[i], p.Len())
			}
		}
	}
}

// TestEdgeSplitBadFiles: each malformed split file is an error naming the
// file and wrapping graph.ErrSplit.
func TestEdgeSplitBadFiles(t *testing.T) {
	train := npyOf([]int64{0, 1, 1, 2}, 2, 2)
	cases := []struct {
		name  string
		files map[string][]byte
		file  string // the file the error names
		want  string
	}{
		{"no train", map[string][]byte{"valid.npy": train}, "train.npy", "does not exist"},
		{"OGB torch files", map[string][]byte{"train.pt": []byte("x")}, "train.npy", "get_edge_split"},
		{"(2, E) array", map[string][]byte{"train.npy": npyOf([]int64{0, 1, 1, 2, 2, 3}, 2, 3)}, "train.npy", "want (E, 2) pairs"},
		{"1-d array", map[string][]byte{"train.npy": npyOf([]int64{0, 1}, 2)}, "train.npy", "want (E, 2) pairs"},
		{"float ids", map[string][]byte{"train.npy": npyOf([]float32{0, 1, 1, 2}, 2, 2)}, "train.npy", "want integer node ids"},
		{"negative id", map[string][]byte{"train.npy": train, "test.npy": npyOf([]int32{3, -1}, 1, 2)}, "test.npy", "outside [0,"},
		{"truncated", map[string][]byte{"train.npy": train[:len(train)-3]}, "train.npy", "truncated"},
		{"unknown part", map[string][]byte{"train.npy": train, "val.npy": train}, "val.npy", "no part of an edge split"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, b := range c.files {
				if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := ReadEdgeSplit(dir, 0)
			if !errors.Is(err, graph.ErrSplit) || !strings.Contains(err.Error(), filepath.Join(dir, c.file)) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v; want an ErrSplit naming %s and saying %q", err, c.file, c.want)
			}
		})
	}
	npz := filepath.Join(t.TempDir(), "s.npz")
	if err := writeNPZArrays(npz, map[string]any{"train": []int64{0, 1}, "valid_negs": []int64{2, 3}}, map[string][]int{"train": {1, 2}, "valid_negs": {1, 2}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadEdgeSplit(npz, 0); !errors.Is(err, graph.ErrSplit) || !strings.Contains(err.Error(), `array "valid_negs" is no part`) {
		t.Fatalf(".npz with a misnamed array: err = %v", err)
	}
}
