package numpy

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"strata/core/graph"
	"strata/core/safefile"
)

func (*npyFormat) Examples(dir string) ([]graph.Example, error) {
	d := graph.TinyDataset(12, 3)
	good := filepath.Join(dir, "tiny")
	if _, err := WriteNPYDir(good, d); err != nil {
		return nil, err
	}
	bad := filepath.Join(dir, "bad")
	if _, err := WriteNPYDir(bad, d); err != nil {
		return nil, err
	}
	y := filepath.Join(bad, "y.npy")
	b, err := safefile.ReadFile(y, 64<<20) // the example just written
	if err != nil {
		return nil, err
	}
	return []graph.Example{{Name: "tiny", Spec: good, Want: d},
		{Name: "labels cut", Spec: bad, Kind: graph.ErrTruncated, Err: []string{y, "truncated"}}}, safefile.WriteFile(y, b[:len(b)-3])
}

func (*npzFormat) Examples(dir string) ([]graph.Example, error) {
	d := graph.TinyDataset(12, 3)
	d.Train, d.Valid, d.Test = nil, nil, nil // Shchur files carry no split
	// Row i of the adjacency lists the targets of node i's edges.
	n := d.NumNodes
	indptr, idx := make([]int64, n+1), []int64(nil)
	adj := make([][]int64, n)
	for r := 0; r < n; r++ {
		for e := d.Graph.Indptr[r]; e < d.Graph.Indptr[r+1]; e++ {
			src := d.Graph.Col(e)
			adj[src] = append(adj[src], int64(r))
		}
	}
	for i, row := range adj {
		idx = append(idx, row...)
		indptr[i+1] = int64(len(idx))
	}
	arrays := map[string]any{
		"adj_data": make([]float32, len(idx)), "adj_indices": idx, "adj_indptr": indptr, "adj_shape": []int64{int64(n), int64(n)},
		"attr_matrix": d.Features, "labels": graph.ConvertIdx[int32, int64](d.Labels),
	}
	p := filepath.Join(dir, "tiny.npz")
	if err := writeNPZArrays(p, arrays, map[string][]int{"attr_matrix": {n, 3}}); err != nil {
		return nil, err
	}
	arrays["labels"] = []int64{0, 1}
	bad := filepath.Join(dir, "bad.npz")
	// The adjacency comes out transposed by the row grouping of its
	// loader: compare the graph the file describes, built the same way.
	want := *d
	want.Graph = graph.FromEdges(n, edgePairs(adj))
	return []graph.Example{{Name: "tiny", Spec: p, Want: &want},
		{Name: "labels short", Spec: bad, Kind: graph.ErrCount, Err: []string{bad, `array "labels"`, "want (12,)"}}}, writeNPZArrays(bad, arrays, map[string][]int{"attr_matrix": {n, 3}})
}

// edgePairs lists the edges (i, j) of adjacency rows adj, by row.
func edgePairs(adj [][]int64) [][2]int64 {
	var out [][2]int64
	for i, row := range adj {
		for _, j := range row {
			out = append(out, [2]int64{int64(i), j})
		}
	}
	return out
}

// writeNPZArrays writes arrays ([]float32 or []int64; 1-d unless shapes says
// otherwise) to a .npz archive at path.
func writeNPZArrays(path string, arrays map[string]any, shapes map[string][]int) error {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(arrays)) {
		descr, n := "<f4", 0
		switch v := arrays[name].(type) {
		case []float32:
			n = len(v)
		case []int64:
			descr, n = "<i8", len(v)
		default:
			return fmt.Errorf("writeNPZ: array %q of %T", name, v)
		}
		shape := shapes[name]
		if shape == nil {
			shape = []int{n}
		}
		w, err := zw.Create(name + ".npy")
		if err != nil {
			return err
		}
		if _, err := w.Write(npyHeaderBytes(shape, descr)); err != nil {
			return err
		}
		if err := binary.Write(w, binary.LittleEndian, arrays[name]); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return safefile.WriteFile(path, buf.Bytes())
}
