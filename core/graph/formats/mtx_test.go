package formats

import (
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/graph/graphtest"
)

// TestMTX loads coordinate files of each field and symmetry and compares
// them with the graph the entries give (entry (i, j) = edge i-1 -> j-1).
func TestMTX(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, body string
		edges      [][2]int64
	}{
		{"pattern-general", "%%MatrixMarket matrix coordinate pattern general\n% a comment\n\n3 3 3\n1 2\n2 3\n3 1\n",
			[][2]int64{{0, 1}, {1, 2}, {2, 0}}},
		{"real-symmetric", "%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n1 1 1.5\n2 1 2\n3 2 -1e3\n",
			[][2]int64{{0, 0}, {1, 0}, {0, 1}, {2, 1}, {1, 2}}},
		{"integer-general", "%%MatrixMarket matrix coordinate integer general\n2 2 2\n1 2 7\n2 1 -3\n",
			[][2]int64{{0, 1}, {1, 0}}},
		{"upper-case banner", "%%MatrixMarket MATRIX Coordinate Pattern General\n2 2 1\n2 1\n", [][2]int64{{1, 0}}},
		{"empty graph", "%%MatrixMarket matrix coordinate pattern general\n4 4 0\n", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := graphtest.WriteFile(t, dir, strings.ReplaceAll(c.name, " ", "-")+".mtx", []byte(c.body))
			d, err := graph.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			n := int(d.Graph.NumRows)
			if want := graph.FromEdges(n, c.edges); !graphtest.SameCSR(d.Graph, want) || d.Labels != nil || d.FeatDim != 0 {
				t.Errorf("rows %v, want %v", graphtest.RowsOf(d.Graph), graphtest.RowsOf(want))
			}
			gz := graphtest.WriteFile(t, dir, strings.ReplaceAll(c.name, " ", "-")+".mtx.gz", graphtest.Gz(c.body))
			if z, err := graph.Open(gz); err != nil || !graphtest.SameCSR(z.Graph, d.Graph) {
				t.Errorf("gzipped: %v", err)
			}
		})
	}
}

// TestMTXErrors checks that bad files name the file, the line and the fix,
// and that sizes are refused before anything is allocated.
func TestMTXErrors(t *testing.T) {
	dir := t.TempDir()
	const banner = "%%MatrixMarket matrix coordinate pattern general\n"
	cases := []struct {
		name, body string
		kind       error
		want       []string
	}{
		{"empty", "", graph.ErrFormat, []string{"empty file", "%%MatrixMarket"}},
		{"no banner", "3 3 1\n1 1\n", graph.ErrFormat, []string{":1:", "not a Matrix Market banner"}},
		{"array", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n", graph.ErrFormat, []string{":1: column 3:", `"array"`, "coo_matrix"}},
		{"complex", "%%MatrixMarket matrix coordinate complex general\n", graph.ErrFormat, []string{":1: column 4:", `"complex"`}},
		{"hermitian", "%%MatrixMarket matrix coordinate real hermitian\n", graph.ErrFormat, []string{":1: column 5:", `"hermitian"`}},
		{"no size line", banner + "% only comments\n", graph.ErrTruncated, []string{"size line"}},
		{"short size line", banner + "3 3\n", graph.ErrFormat, []string{":2:", "2 fields, want 3"}},
		{"bad size", banner + "3 x 1\n", graph.ErrFormat, []string{":2: column 2:", `"x"`}},
		{"not square", banner + "3 4 1\n1 1\n", graph.ErrFormat, []string{":2:", "3 x 4", "square"}},
		{"too many entries", banner + "2 2 5\n", graph.ErrRange, []string{":2: column 3:", "5 entries do not fit"}},
		{"huge", banner + "2000000000 2000000000 1000000000000\n", graph.ErrRange, []string{"1000000000000 entries", "memory budget"}},
		{"zero index", banner + "2 2 1\n0 1\n", graph.ErrRange, []string{":3: column 1:", "1-based"}},
		{"index too large", banner + "2 2 1\n1 3\n", graph.ErrRange, []string{":3: column 2:", "outside [1,2]"}},
		{"missing value", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2\n", graph.ErrFormat, []string{":3:", "2 fields, want 3"}},
		{"bad value", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 x\n", graph.ErrFormat, []string{":3: column 3:", "not a number"}},
		{"truncated", banner + "2 2 3\n1 2\n", graph.ErrTruncated, []string{"after 1 of the 3 entries"}},
		{"extra entries", banner + "2 2 1\n1 2\n2 1\n", graph.ErrCount, []string{":4:", "declares 1 entries"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := graphtest.WriteFile(t, dir, strings.ReplaceAll(c.name, " ", "-")+".mtx", []byte(c.body))
			d, err := graph.OpenContext(graph.WithMaxMemory(t.Context(), 1<<30), p)
			if d != nil {
				t.Error("dataset returned with an error")
			}
			graphtest.WantErr(t, err, c.kind, append([]string{p}, c.want...)...)
		})
	}
}
