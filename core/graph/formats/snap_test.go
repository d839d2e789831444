package formats

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/graph/graphtest"
)

func TestLoadSNAPGood(t *testing.T) {
	// Edges 0->1, 1->2, 2->3, 3->0, 3->3: row dst lists src.
	const body = "0\t1\n1 2\n  2   3 \n% other comment\n\n3\t \t0\r\n3 3\n"
	cases := []struct {
		name, file string
		data       []byte
		n          int
		wantName   string
	}{
		{"tabs and spaces", "g.txt", []byte("# Directed graph\n# FromNodeId\tToNodeId\n" + body), 4, "g"},
		{"no trailing newline", "g.el", []byte(strings.TrimSuffix(body, "\n")), 4, "g"},
		{"header node count larger", "web.edges", []byte("# Nodes: 6 Edges: 5\n" + body), 6, "web"},
		{"header node count smaller", "g.tsv", []byte("# Nodes: 2 Edges: 5\n" + body), 4, "g"},
		{"gzip", "g.txt.gz", graphtest.Gz("# c\n" + body), 4, "g"},
		{"gzip without suffix", "g.edgelist", graphtest.Gz(body), 4, "g.edgelist"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := graphtest.WriteFile(t, t.TempDir(), c.file, c.data)
			d, err := LoadSNAP(p)
			if err != nil {
				t.Fatal(err)
			}
			if d.NumNodes != c.n || d.Graph.NumRows != c.n || d.Graph.NNZ() != 5 {
				t.Fatalf("n=%d nnz=%d, want n=%d nnz=5", d.NumNodes, d.Graph.NNZ(), c.n)
			}
			want := "[[3] [0] [1] [2 3]" + strings.Repeat(" []", c.n-4) + "]"
			if got := fmt.Sprint(graphtest.RowsOf(d.Graph)); got != want {
				t.Errorf("rows %s, want %s", got, want)
			}
			if d.Name != c.wantName || d.Source != p {
				t.Errorf("name %q source %q", d.Name, d.Source)
			}
			if d.Features != nil || d.Labels != nil || d.Train != nil || d.FeatDim != 0 || d.NumClasses != 0 {
				t.Error("a SNAP dataset has no features, labels or splits")
			}
			if err := d.Validate(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestLoadSNAPManyChunks loads a file larger than one parse chunk and
// compares it with FromEdges on the same pairs, in file order.
func TestLoadSNAPManyChunks(t *testing.T) {
	edges := graphtest.RandEdges(7, 5000, 10, 130000)
	var b strings.Builder
	b.WriteString("# big\n")
	for i, e := range edges {
		sep := " "
		if i%3 == 0 {
			sep = "\t"
		}
		fmt.Fprintf(&b, "%d%s%d\n", e[0], sep, e[1])
	}
	for _, name := range []string{"big.txt", "big.txt.gz"} {
		data := []byte(b.String())
		if strings.HasSuffix(name, ".gz") {
			data = graphtest.Gz(b.String())
		}
		p := graphtest.WriteFile(t, t.TempDir(), name, data)
		d, err := LoadSNAP(p)
		if err != nil {
			t.Fatal(err)
		}
		// Node ids beyond the largest used one are not known to the file.
		var maxID int64
		for _, e := range edges {
			maxID = max(maxID, e[0], e[1])
		}
		if want := graph.FromEdges(int(maxID+1), edges); !graphtest.SameCSR(d.Graph, want) {
			t.Errorf("%s: graph differs from FromEdges", name)
		}
	}
	// An error far into the file has the right line number.
	lines := strings.Split(b.String(), "\n")
	lines[120001] = "12 x" // in the second 1 MiB chunk
	p := graphtest.WriteFile(t, t.TempDir(), "bad.txt", []byte(strings.Join(lines, "\n")))
	_, err := LoadSNAP(p)
	graphtest.WantErr(t, err, graph.ErrFormat, p+":120002: column 2:", `"x" is not an integer`)
}

func TestLoadSNAPMalformed(t *testing.T) {
	cases := []struct {
		name, file string
		data       []byte
		kind       error
		want       []string // fragments; "@" stands for the file path
	}{
		{"bad number", "g.txt", []byte("# c\n0 1\n1 2x\n"), graph.ErrFormat, []string{"@:3: column 2:", `"2x" is not an integer node id`}},
		{"float id", "g.txt", []byte("0 1.5\n"), graph.ErrFormat, []string{"@:1: column 2:", `"1.5"`}},
		{"three columns", "g.txt", []byte("0 1\n1 2\n2 3 1\n"), graph.ErrFormat, []string{"@:3:", "3 columns, expected 2"}},
		{"one column", "g.tsv", []byte("0\t1\n\t4\n"), graph.ErrFormat, []string{"@:2:", "1 column, expected 2"}},
		{"comma separated", "g.txt", []byte("0,1\n"), graph.ErrFormat, []string{"@:1:", "1 column, expected 2"}},
		{"negative id", "g.txt", []byte("0 1\n-3 2\n"), graph.ErrRange, []string{"@:2: column 1:", "negative node id -3"}},
		{"negative id gz", "g.txt.gz", graphtest.Gz("0 1\n\n1 -2\n"), graph.ErrRange, []string{"@:3: column 2:", "negative node id -2"}},
		{"bad number gz", "g.txt.gz", graphtest.Gz("# x\r\n0 a\r\n"), graph.ErrFormat, []string{"@:2: column 2:", `"a"`}},
		{"empty file", "g.txt", nil, graph.ErrFormat, []string{"@:", "empty file"}},
		{"empty gz file", "g.txt.gz", nil, graph.ErrFormat, []string{"@:", "empty file"}},
		{"not gzip", "g.txt.gz", []byte("0 1\n"), graph.ErrFormat, []string{"@:", "not a gzip file"}},
		{"huge id", "g.txt", []byte("0 1\n1 99999999999\n"), graph.ErrRange, []string{"@:", "node id 99999999999 (edge 2)", "renumber"}},
		{"huge header node count", "g.txt", []byte("# Nodes: 100000000 Edges: 1\n0 1\n"), graph.ErrRange, []string{"@:1:", `"# Nodes: 100000000" header`, "1 edges"}},
		{"header node count past MaxNodes", "g.txt", []byte("# c\n# Nodes: 1000000000000 Edges: 1\n0 1\n"), graph.ErrRange, []string{"@:2:", `"# Nodes: 1000000000000" header is outside [0, 68719476736]`, "fix or drop the header"}},
		{"negative header node count", "g.txt", []byte("# Nodes: -5\n0 1\n"), graph.ErrRange, []string{"@:1:", `"# Nodes: -5" header is outside`}},
		{"header node count not a number", "g.txt", []byte("0 1\n# Nodes: 1e3\n"), graph.ErrFormat, []string{"@:2:", `value "1e3" is not a node count`}},
		{"too large id", "g.txt", []byte("0 9223372036854775806\n"), graph.ErrRange, []string{"@:1: column 2:", "too large"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := graphtest.WriteFile(t, t.TempDir(), c.file, c.data)
			d, err := LoadSNAP(p)
			if d != nil {
				t.Error("dataset returned with an error")
			}
			want := make([]string, len(c.want))
			for i, f := range c.want {
				want[i] = strings.ReplaceAll(f, "@", p)
			}
			graphtest.WantErr(t, err, c.kind, want...)
			var fe *graph.FileError
			if !errors.As(err, &fe) || fe.File != p {
				t.Errorf("error %v is not a *FileError naming %s", err, p)
			}
		})
	}
	_, err := LoadSNAP(filepath.Join(t.TempDir(), "none.txt"))
	graphtest.WantErr(t, err, graph.ErrMissing, "none.txt", "does not exist")
}

func TestLoadSNAPOnlyComments(t *testing.T) {
	p := graphtest.WriteFile(t, t.TempDir(), "c.txt", []byte("# nothing here\n# Nodes: 3 Edges: 0\n"))
	d, err := LoadSNAP(p)
	if err != nil {
		t.Fatal(err)
	}
	if d.NumNodes != 3 || d.Graph.NNZ() != 0 {
		t.Errorf("n=%d nnz=%d, want 3 nodes and no edges", d.NumNodes, d.Graph.NNZ())
	}
}
