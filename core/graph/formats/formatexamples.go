package formats

import (
	"fmt"
	"path/filepath"
	"strings"

	"strata/core/graph"
	"strata/core/safefile"
)

// edgeLines writes one line per edge of g (src, dst as line formats
// them), in the order of its rows.
func edgeLines(g *graph.CSR, line func(src, dst int64) string) string {
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

// Examples of the formats of this package (see graph.Exampler).

func (*embeddedFormat) Examples(string) ([]graph.Example, error) {
	return []graph.Example{{Name: "cora", Spec: "embedded:cora"},
		{Name: "unknown", Spec: "embedded:nope", Kind: graph.ErrMissing, Err: []string{"embedded:nope", "available: cora"}}}, nil
}

func (*binaryFormat) Examples(dir string) ([]graph.Example, error) {
	d := graph.TinyDataset(12, 3)
	p := filepath.Join(dir, "tiny.strata")
	if err := WriteBinary(p, d); err != nil {
		return nil, err
	}
	b, err := safefile.ReadFile(p, 64<<20) // the tiny example just written
	if err != nil {
		return nil, err
	}
	cut, err := graph.WriteExample(dir, "cut.strata", b[:len(b)-9])
	return []graph.Example{{Name: "tiny", Spec: p, Want: d},
		{Name: "truncated", Spec: cut, Kind: graph.ErrFormat, Err: []string{cut}}}, err
}

func (*snapFormat) Examples(dir string) ([]graph.Example, error) {
	d := graph.TinyDataset(12, 0)
	p, err := graph.WriteExample(dir, "tiny.txt", []byte("# Nodes: 12\n"+edgeLines(d.Graph, func(s, t int64) string { return fmt.Sprintf("%d %d\n", s, t) })))
	if err != nil {
		return nil, err
	}
	bad, err := graph.WriteExample(dir, "bad.csv", []byte("0,1\n1\n"))
	return []graph.Example{{Name: "tiny", Spec: p, Want: graph.GraphOnly(d, "tiny", p)},
		{Name: "one column", Spec: bad, Kind: graph.ErrFormat, Err: []string{bad + ":2:", "1 column"}}}, err
}

func (*mtxFormat) Examples(dir string) ([]graph.Example, error) {
	d := graph.TinyDataset(12, 0)
	body := fmt.Sprintf("%%%%MatrixMarket matrix coordinate integer general\n12 12 %d\n", d.Graph.NNZ()) +
		edgeLines(d.Graph, func(s, t int64) string { return fmt.Sprintf("%d %d 1\n", s+1, t+1) })
	p, err := graph.WriteExample(dir, "tiny.mtx", []byte(body))
	if err != nil {
		return nil, err
	}
	bad, err := graph.WriteExample(dir, "bad.mtx", []byte("%%MatrixMarket matrix coordinate pattern general\n3 3 1\n4 1\n"))
	if err != nil {
		return nil, err
	}
	huge, err := graph.WriteExample(dir, "huge.mtx", []byte("%%MatrixMarket matrix coordinate pattern general\n2000000000 2000000000 4000000000\n1 1\n"))
	return []graph.Example{{Name: "tiny", Spec: p, Want: graph.GraphOnly(d, "tiny", p)},
		{Name: "index out of range", Spec: bad, Kind: graph.ErrRange, Err: []string{bad + ":3: column 1:", "1-based"}},
		{Name: "huge", Spec: huge, Kind: graph.ErrRange, Err: []string{huge, "memory budget"}, Huge: true}}, err
}

func (*ogbFormat) Examples(dir string) ([]graph.Example, error) {
	d := graph.TinyDataset(12, 3)
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
			if _, err := graph.WriteExample(filepath.Join(dir, root), name, []byte(body)); err != nil {
				return nil, err
			}
		}
	}
	return []graph.Example{{Name: "tiny", Spec: filepath.Join(dir, "tiny"), Want: d},
		{Name: "bad edge", Spec: filepath.Join(dir, "bad"), Kind: graph.ErrFormat, Err: []string{filepath.Join(dir, "bad", "raw", "edge.csv") + ":2:"}}}, nil
}
