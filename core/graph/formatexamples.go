package graph

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// writeExample writes body to dir/name and returns the path.
func writeExample(dir, name string, body []byte) (string, error) {
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", err
	}
	return p, os.WriteFile(p, body, 0o644)
}

// edgeLines writes one line per edge of g (src, dst as line formats
// them), in the order of its rows.
func edgeLines(g *CSR, line func(src, dst int64) string) string {
	var b strings.Builder
	for r := 0; r < g.NumRows; r++ {
		for e := g.Indptr[r]; e < g.Indptr[r+1]; e++ {
			b.WriteString(line(g.Col(e), int64(r)))
		}
	}
	return b.String()
}

// valueLines writes one line per row of values (a feature matrix, a
// label column) as comma-separated text.
func valueLines[T int32 | float32](vals []T, width int) string {
	var b strings.Builder
	for i := 0; i+width <= len(vals); i += width {
		for j, v := range vals[i : i+width] {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprint(&b, v)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Examples of the formats of this package (see Exampler).

func (*embeddedFormat) Examples(string) ([]Example, error) {
	return []Example{{Name: "cora", Spec: "embedded:cora"},
		{Name: "unknown", Spec: "embedded:nope", Kind: ErrMissing, Err: []string{"embedded:nope", "available: cora"}}}, nil
}

func (*rmatFormat) Examples(string) ([]Example, error) {
	return []Example{{Name: "small", Spec: "rmat-5-2-3-2-7"},
		{Name: "bad scale", Spec: "rmat-0", Kind: ErrRange, Err: []string{"rmat-0", "scale 0"}},
		{Name: "huge", Spec: "rmat-20-16-64-8-0", Kind: ErrRange, Err: []string{"rmat-20", "memory budget"}, Huge: true}}, nil
}

func (*binaryFormat) Examples(dir string) ([]Example, error) {
	d := TinyDataset(12, 3)
	p := filepath.Join(dir, "tiny.strata")
	if err := WriteBinary(p, d); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	cut, err := writeExample(dir, "cut.strata", b[:len(b)-9])
	return []Example{{Name: "tiny", Spec: p, Want: d},
		{Name: "truncated", Spec: cut, Kind: ErrFormat, Err: []string{cut}}}, err
}

func (*snapFormat) Examples(dir string) ([]Example, error) {
	d := TinyDataset(12, 0)
	p, err := writeExample(dir, "tiny.txt", []byte("# Nodes: 12\n"+edgeLines(d.Graph, func(s, t int64) string { return fmt.Sprintf("%d %d\n", s, t) })))
	if err != nil {
		return nil, err
	}
	bad, err := writeExample(dir, "bad.csv", []byte("0,1\n1\n"))
	return []Example{{Name: "tiny", Spec: p, Want: GraphOnly(d, "tiny", p)},
		{Name: "one column", Spec: bad, Kind: ErrFormat, Err: []string{bad + ":2:", "1 column"}}}, err
}

func (*mtxFormat) Examples(dir string) ([]Example, error) {
	d := TinyDataset(12, 0)
	body := fmt.Sprintf("%%%%MatrixMarket matrix coordinate integer general\n12 12 %d\n", d.Graph.NNZ()) +
		edgeLines(d.Graph, func(s, t int64) string { return fmt.Sprintf("%d %d 1\n", s+1, t+1) })
	p, err := writeExample(dir, "tiny.mtx", []byte(body))
	if err != nil {
		return nil, err
	}
	bad, err := writeExample(dir, "bad.mtx", []byte("%%MatrixMarket matrix coordinate pattern general\n3 3 1\n4 1\n"))
	if err != nil {
		return nil, err
	}
	huge, err := writeExample(dir, "huge.mtx", []byte("%%MatrixMarket matrix coordinate pattern general\n2000000000 2000000000 4000000000\n1 1\n"))
	return []Example{{Name: "tiny", Spec: p, Want: GraphOnly(d, "tiny", p)},
		{Name: "index out of range", Spec: bad, Kind: ErrRange, Err: []string{bad + ":3: column 1:", "1-based"}},
		{Name: "huge", Spec: huge, Kind: ErrRange, Err: []string{huge, "memory budget"}, Huge: true}}, err
}

func (*npyFormat) Examples(dir string) ([]Example, error) {
	d := TinyDataset(12, 3)
	good := filepath.Join(dir, "tiny")
	if _, err := WriteNPYDir(good, d); err != nil {
		return nil, err
	}
	bad := filepath.Join(dir, "bad")
	if _, err := WriteNPYDir(bad, d); err != nil {
		return nil, err
	}
	y := filepath.Join(bad, "y.npy")
	b, err := os.ReadFile(y)
	if err != nil {
		return nil, err
	}
	return []Example{{Name: "tiny", Spec: good, Want: d},
		{Name: "labels cut", Spec: bad, Kind: ErrTruncated, Err: []string{y, "truncated"}}}, os.WriteFile(y, b[:len(b)-3], 0o644)
}

func (*ogbFormat) Examples(dir string) ([]Example, error) {
	d := TinyDataset(12, 3)
	d.Labels[11] = 0 // OGB's node-label.csv labels every node
	files := map[string]string{
		"raw/edge.csv":          edgeLines(d.Graph, func(s, t int64) string { return fmt.Sprintf("%d,%d\n", s, t) }),
		"raw/num-node-list.csv": "12\n", "raw/num-edge-list.csv": fmt.Sprintf("%d\n", d.Graph.NNZ()),
		"raw/node-label.csv": valueLines(d.Labels, 1), "raw/node-feat.csv": valueLines(d.Features, 3),
		"split/s/train.csv": valueLines(d.Train, 1), "split/s/valid.csv": valueLines(d.Valid, 1), "split/s/test.csv": valueLines(d.Test, 1),
	}
	for _, root := range []string{"tiny", "bad"} {
		for name, body := range files {
			if root == "bad" && name == "raw/edge.csv" {
				body = "0,1\n1,x\n"
			}
			if _, err := writeExample(filepath.Join(dir, root), name, []byte(body)); err != nil {
				return nil, err
			}
		}
	}
	return []Example{{Name: "tiny", Spec: filepath.Join(dir, "tiny"), Want: d},
		{Name: "bad edge", Spec: filepath.Join(dir, "bad"), Kind: ErrFormat, Err: []string{filepath.Join(dir, "bad", "raw", "edge.csv") + ":2:"}}}, nil
}

func (*npzFormat) Examples(dir string) ([]Example, error) {
	d := TinyDataset(12, 3)
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
		"attr_matrix": d.Features, "labels": convertIdx[int32, int64](d.Labels),
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
	want.Graph = FromEdges(n, edgePairs(adj))
	return []Example{{Name: "tiny", Spec: p, Want: &want},
		{Name: "labels short", Spec: bad, Kind: ErrCount, Err: []string{bad, `array "labels"`, "want (12,)"}}}, writeNPZArrays(bad, arrays, map[string][]int{"attr_matrix": {n, 3}})
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
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
