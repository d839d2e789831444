// Loader test helpers: files, OGB fixtures and comparisons of graphs and
// datasets for the tests of core/graph and its dataset formats
// (core/graph/formats, core/graph/numpy).

package graphtest

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/safefile"
)

// SharedData returns the shared benchmark data directory (STRATA_SHARED_DATA,
// or ../shared/data beside the repository root), skipping the test when it
// is absent.
func SharedData(tb testing.TB) string {
	tb.Helper()
	if d := os.Getenv("STRATA_SHARED_DATA"); d != "" {
		if graph.IsDir(d) {
			return d
		}
		tb.Skipf("STRATA_SHARED_DATA=%s is not a directory", d)
	}
	wd, err := os.Getwd()
	if err != nil {
		tb.Skip(err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if graph.FileExists(filepath.Join(dir, "go.mod")) {
			d := filepath.Join(dir, "..", "shared", "data")
			if !graph.IsDir(d) {
				tb.Skipf("shared data not found at %s (set STRATA_SHARED_DATA)", d)
			}
			return d
		}
		if filepath.Dir(dir) == dir {
			tb.Skip("repository root not found")
		}
	}
}

// SharedDataset returns the path of one shared dataset, skipping if absent.
func SharedDataset(tb testing.TB, name string) string {
	tb.Helper()
	p := filepath.Join(SharedData(tb), name)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("%s not present", p)
	}
	return p
}

// Gz compresses s.
func Gz(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

// WriteFile writes data to dir/rel, creating directories.
func WriteFile(t *testing.T, dir, rel string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := safefile.WriteFile(p, data); err != nil {
		t.Fatal(err)
	}
	return p
}

// TinyOGB is a valid 5-node dataset in the OGB raw layout: relative path
// (without .gz) -> content.
func TinyOGB() map[string]string {
	return map[string]string{
		"raw/edge.csv":          "0,1\n1,2\n2,3\n3,4\n",
		"raw/num-edge-list.csv": "4\n",
		"raw/num-node-list.csv": "5\n",
		"raw/node-label.csv":    "0\n1\n0\n1\n-1\n",
		"raw/node-feat.csv":     "1,0\n0,1\n0.5,2\n0,0\n1e-3,-3\n",
		"split/s/train.csv":     "1\n0\n",
		"split/s/valid.csv":     "2\n",
		"split/s/test.csv":      "3\n",
	}
}

// WriteOGB writes files (gzip-compressed, as .csv.gz) into a new temp dir.
// A value of "\x00missing" leaves the file out; raw bytes can be given with
// the "\x00raw:" prefix.
func WriteOGB(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ds")
	for rel, content := range files {
		if content == "\x00missing" {
			continue
		}
		if raw, ok := strings.CutPrefix(content, "\x00raw:"); ok {
			WriteFile(t, dir, rel+".gz", []byte(raw))
			continue
		}
		WriteFile(t, dir, rel+".gz", Gz(content))
	}
	return dir
}

// WantErr checks that err wraps kind and mentions every fragment.
func WantErr(t *testing.T, err error, kind error, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v", kind)
	}
	if kind != nil && !errors.Is(err, kind) {
		t.Errorf("error %q does not wrap %v", err, kind)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not mention %q", err, f)
		}
	}
}

// SameCSR reports whether two CSRs hold the same structure and values.
func SameCSR(a, b *graph.CSR) bool {
	if a.NumRows != b.NumRows || a.NumCols != b.NumCols || a.NNZ() != b.NNZ() {
		return false
	}
	for i := range a.Indptr {
		if a.Indptr[i] != b.Indptr[i] {
			return false
		}
	}
	for e := int64(0); e < a.NNZ(); e++ {
		if a.Col(e) != b.Col(e) {
			return false
		}
	}
	if (a.Values == nil) != (b.Values == nil) {
		return false
	}
	for e := range a.Values {
		if a.Values[e] != b.Values[e] {
			return false
		}
	}
	return true
}

// RowsOf returns the rows of g as slices of int64 column ids.
func RowsOf(g *graph.CSR) [][]int64 {
	out := make([][]int64, g.NumRows)
	for r := range out {
		out[r] = []int64{}
		for e := g.Indptr[r]; e < g.Indptr[r+1]; e++ {
			out[r] = append(out[r], g.Col(e))
		}
	}
	return out
}

// RandEdges returns m random (src, dst) pairs over ids [0, n-isolated): the
// last isolated ids are never used. About a tenth of the pairs are self
// loops and about a tenth repeat an earlier pair.
func RandEdges(seed uint64, n, isolated, m int) [][2]int64 {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	k := n - isolated
	if k <= 0 {
		return nil
	}
	edges := make([][2]int64, 0, m)
	for len(edges) < m {
		switch x := r.IntN(10); {
		case x == 0:
			v := int64(r.IntN(k))
			edges = append(edges, [2]int64{v, v})
		case x == 1 && len(edges) > 0:
			edges = append(edges, edges[r.IntN(len(edges))])
		default:
			edges = append(edges, [2]int64{int64(r.IntN(k)), int64(r.IntN(k))})
		}
	}
	return edges
}

// RandValues returns n random edge values.
func RandValues(seed uint64, n int64) []float32 {
	r := rand.New(rand.NewPCG(seed, 0x7a1))
	v := make([]float32, n)
	for i := range v {
		v[i] = r.Float32()
	}
	return v
}

// Widen returns a copy of g that stores its column ids in 64 bits.
func Widen(g *graph.CSR) *graph.CSR {
	w := &graph.CSR{NumRows: g.NumRows, NumCols: g.NumCols, Indptr: slices.Clone(g.Indptr),
		Idx64: make([]int64, g.NNZ()), Values: slices.Clone(g.Values)}
	for e := range w.Idx64 {
		w.Idx64[e] = g.Col(int64(e))
	}
	return w
}

// Dense returns the multiplicity matrix of g: m[r][c] counts the entries
// (r, c).
func Dense(g *graph.CSR) [][]int {
	m := make([][]int, g.NumRows)
	for r := range m {
		m[r] = make([]int, g.NumCols)
		for e := g.Indptr[r]; e < g.Indptr[r+1]; e++ {
			m[r][g.Col(e)]++
		}
	}
	return m
}

// SameDataset reports the first difference between two datasets' content
// (the source excepted), or "".
func SameDataset(a, b *graph.Dataset) string {
	switch {
	case a.Name != b.Name:
		return "name"
	case a.Citation != b.Citation:
		return "citation"
	case a.NumNodes != b.NumNodes || a.FeatDim != b.FeatDim || a.NumClasses != b.NumClasses:
		return "sizes"
	case (a.Graph == nil) != (b.Graph == nil):
		return "graph presence"
	case a.Graph != nil && (!SameCSR(a.Graph, b.Graph) || a.Graph.Wide() != b.Graph.Wide()):
		return "graph"
	case !slices.Equal(a.Features, b.Features):
		return "features"
	case (a.Labels == nil) != (b.Labels == nil) || !slices.Equal(a.Labels, b.Labels):
		return "labels"
	case !slices.Equal(a.Train, b.Train) || !slices.Equal(a.Valid, b.Valid) || !slices.Equal(a.Test, b.Test):
		return "splits"
	}
	return ""
}

// ReorderDataset returns a dataset around g with features, labels and
// splits derived from the node ids.
func ReorderDataset(g *graph.CSR) *graph.Dataset {
	n := g.NumRows
	d := &graph.Dataset{Name: "r", NumNodes: n, Graph: g, FeatDim: 2, Features: make([]float32, 2*n), Labels: make([]int32, n), NumClasses: 3}
	for i := 0; i < n; i++ {
		d.Features[2*i], d.Features[2*i+1] = float32(i), float32(-i)
		d.Labels[i] = int32(i % 3)
		if i%5 == 4 {
			d.Labels[i] = -1
		}
		switch {
		case d.Labels[i] < 0:
		case i%4 == 0:
			d.Train = append(d.Train, int32(i))
		case i%4 == 1:
			d.Valid = append(d.Valid, int32(i))
		case i%4 == 2:
			d.Test = append(d.Test, int32(i))
		}
	}
	return d
}

// CheckCora compares a loaded Cora with the published numbers.
func CheckCora(t *testing.T, d *graph.Dataset) {
	t.Helper()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if d.Name != "cora" || d.NumNodes != 2708 || d.Graph.NNZ() != 5278 || d.FeatDim != 1433 || d.NumClasses != 7 {
		t.Fatalf("cora: name %q n=%d nnz=%d dim=%d classes=%d", d.Name, d.NumNodes, d.Graph.NNZ(), d.FeatDim, d.NumClasses)
	}
	if len(d.Train) != 140 || len(d.Valid) != 500 || len(d.Test) != 1000 {
		t.Errorf("splits %d/%d/%d", len(d.Train), len(d.Valid), len(d.Test))
	}
	nz := 0
	for _, v := range d.Features {
		if v != 0 {
			nz++
			if v != 1 {
				t.Fatalf("non-binary feature %v", v)
			}
		}
	}
	if nz != 49216 {
		t.Errorf("feature non-zeros %d, want 49216", nz)
	}
	counts := make([]int, 7)
	for _, l := range d.Labels {
		counts[l]++
	}
	if fmt.Sprint(counts) != "[351 217 418 818 426 298 180]" {
		t.Errorf("label counts %v", counts)
	}
	s := graph.Symmetrize(d.Graph)
	if s.NNZ() != 10556 {
		t.Errorf("symmetrized nnz %d, want 10556", s.NNZ())
	}
	if a := graph.AddSelfLoops(s); a.NNZ() != 13264 {
		t.Errorf("with self loops nnz %d, want 13264", a.NNZ())
	}
	for i := 0; i < 140; i++ {
		if d.Train[i] != int32(i) {
			t.Fatalf("train[%d] = %d", i, d.Train[i])
		}
	}
}

// SortedRows reports whether the columns of every row are ascending
// (strictly when strict).
func SortedRows(g *graph.CSR, strict bool) bool {
	for r := 0; r < g.NumRows; r++ {
		for e := g.Indptr[r] + 1; e < g.Indptr[r+1]; e++ {
			if a, b := g.Col(e-1), g.Col(e); a > b || strict && a == b {
				return false
			}
		}
	}
	return true
}
