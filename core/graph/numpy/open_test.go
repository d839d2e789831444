package numpy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/graph/formats"
	"strata/core/graph/graphtest"
	"strata/core/graph/synth"
)

// specFormFragments are the parts of the accepted-forms list an unknown
// spec's error must show.
var specFormFragments = []string{"embedded:<name>", "OGB raw layout", "<dir>@<split>", "edge_index.npy", "strata convert", "SNAP edge list", ".txt.gz", "rmat-<scale>"}

func TestOpenDispatch(t *testing.T) {
	root := t.TempDir()
	ogb := graphtest.WriteOGB(t, graphtest.TinyOGB())
	npy := npyDir(t, tinyNPY())
	// A directory with both layouts is read as OGB.
	both := graphtest.WriteOGB(t, graphtest.TinyOGB())
	graphtest.WriteFile(t, both, "edge_index.npy", tinyNPY()["edge_index.npy"])

	snapBody := "# c\n0 1\n1 2\n2 0\n"
	snapWant := graph.FromEdges(3, [][2]int64{{0, 1}, {1, 2}, {2, 0}})
	bin := graphtest.ReorderDataset(graph.FromEdges(8, graphtest.RandEdges(2, 8, 1, 20)))
	bin.Name = "bin"
	binPath := filepath.Join(root, "g.strata")
	if err := formats.WriteBinary(binPath, bin); err != nil {
		t.Fatal(err)
	}
	binData, err := os.ReadFile(binPath)
	if err != nil {
		t.Fatal(err)
	}
	ogbWant, err := formats.LoadOGB(ogb, "")
	if err != nil {
		t.Fatal(err)
	}
	npyWant, err := LoadNPYDir(npy)
	if err != nil {
		t.Fatal(err)
	}
	rmatWant, err := synth.RMAT(synth.RMATOptions{Scale: 5, EdgeFactor: 2, FeatDim: 3, NumClasses: 2, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name, spec string
		want       *graph.Dataset
		check      func(t *testing.T, d *graph.Dataset)
	}{
		{"embedded", "embedded:cora", nil, graphtest.CheckCora},
		{"ogb dir", ogb, ogbWant, nil},
		{"ogb dir with trailing slash", ogb + string(filepath.Separator), ogbWant, nil},
		{"ogb dir@split", ogb + "@s", ogbWant, nil},
		{"both layouts", both, ogbWant, nil},
		{"npy dir", npy, npyWant, nil},
		{"binary .strata", binPath, bin, nil},
		{"binary any name", graphtest.WriteFile(t, root, "graph.dat", binData), bin, nil},
		{"binary .txt name", graphtest.WriteFile(t, root, "graph.txt", binData), bin, nil},
		{"snap .txt", graphtest.WriteFile(t, root, "s.txt", []byte(snapBody)), nil, nil},
		{"snap .txt.gz", graphtest.WriteFile(t, root, "s.txt.gz", graphtest.Gz(snapBody)), nil, nil},
		{"snap .el", graphtest.WriteFile(t, root, "s.el", []byte(snapBody)), nil, nil},
		{"snap .edges", graphtest.WriteFile(t, root, "s.edges", []byte(snapBody)), nil, nil},
		{"snap .tsv", graphtest.WriteFile(t, root, "s.tsv", []byte(strings.ReplaceAll(snapBody, " ", "\t"))), nil, nil},
		{"snap .edgelist", graphtest.WriteFile(t, root, "s.edgelist", []byte(snapBody)), nil, nil},
		{"snap .TXT", graphtest.WriteFile(t, root, "S.TXT", []byte(snapBody)), nil, nil},
		{"snap .edges.gz", graphtest.WriteFile(t, root, "s.edges.gz", graphtest.Gz(snapBody)), nil, nil},
		{"rmat", "rmat-5-2-3-2-7", rmatWant, nil},
		{"rmat defaults", "rmat-4", nil, func(t *testing.T, d *graph.Dataset) {
			if d.NumNodes != 16 || d.Graph.NNZ() != 16*16 || d.FeatDim != 64 || d.NumClasses != 8 || d.Name != "rmat-4-16-64-8-0" {
				t.Errorf("rmat-4: n=%d nnz=%d dim=%d classes=%d name %q", d.NumNodes, d.Graph.NNZ(), d.FeatDim, d.NumClasses, d.Name)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := graph.Open(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Validate(); err != nil {
				t.Fatal(err)
			}
			switch {
			case c.check != nil:
				c.check(t, d)
			case c.want != nil:
				if diff := graphtest.SameDataset(d, c.want); diff != "" {
					t.Errorf("differs in %s from the direct loader", diff)
				}
			default: // SNAP
				if !graphtest.SameCSR(d.Graph, snapWant) || d.Source != c.spec {
					t.Errorf("rows %v source %q", graphtest.RowsOf(d.Graph), d.Source)
				}
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	root := t.TempDir()
	ogb := graphtest.WriteOGB(t, graphtest.TinyOGB())
	empty := filepath.Join(root, "emptydir")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	notBin := graphtest.WriteFile(t, root, "fake.strata", []byte("0 1\n"))
	csv := graphtest.WriteFile(t, root, "edges.xyz", []byte("0,1\n"))
	arr := graphtest.WriteFile(t, root, "a.npy", npyOf([]int64{1, 2}, 2))
	badSnap := graphtest.WriteFile(t, root, "bad.txt", []byte("0 1\n1\n"))
	missing := filepath.Join(root, "nope", "g.txt")
	cases := []struct {
		name, spec string
		kind       error
		want       []string
	}{
		{"empty spec", "", graph.ErrMissing, append([]string{"empty dataset spec"}, specFormFragments...)},
		{"unknown embedded", "embedded:nonexistent", graph.ErrMissing, []string{"embedded:nonexistent", "no such embedded dataset", "available: cora"}},
		{"empty embedded", "embedded:", graph.ErrMissing, []string{"no such embedded dataset"}},
		{"embedded path", "embedded:../cora", graph.ErrMissing, []string{"no such embedded dataset"}},
		{"missing file", missing, graph.ErrMissing, append([]string{missing, "no such file or directory"}, specFormFragments...)},
		{"unknown word", "cora", graph.ErrMissing, append([]string{"cora: no such file or directory"}, specFormFragments...)},
		{"missing dir with split", filepath.Join(root, "nope") + "@s", graph.ErrMissing, []string{"no such file or directory"}},
		{"empty split", ogb + "@", graph.ErrFormat, []string{"empty split name after '@'"}},
		{"unknown split", ogb + "@nope", graph.ErrMissing, []string{`split "nope" does not exist`, "available: s"}},
		{"dir without a dataset", empty, graph.ErrMissing, []string{filepath.Join(empty, "raw"), "edge_index.npy"}},
		{"not binary .strata", notBin, graph.ErrFormat, []string{notBin, "not a strata binary graph"}},
		{"unknown extension", csv, graph.ErrFormat, append([]string{csv, `unknown dataset file type ".xyz"`}, specFormFragments...)},
		{"single npy", arr, graph.ErrFormat, []string{arr, "not a dataset"}},
		{"bad snap", badSnap, graph.ErrFormat, []string{badSnap + ":2:", "1 column"}},
		{"rmat bad scale", "rmat-0", graph.ErrRange, []string{`rmat spec "rmat-0"`, "scale 0"}},
		{"rmat bad field", "rmat-x", graph.ErrFormat, []string{`scale "x"`}},
		{"rmat with a path", filepath.Join(root, "rmat-4"), graph.ErrMissing, []string{"no such file or directory"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := graph.Open(c.spec)
			if d != nil {
				t.Error("dataset returned with an error")
			}
			graphtest.WantErr(t, err, c.kind, c.want...)
		})
	}
}

// TestOpenFileBeforeRMAT checks that an existing file named like an R-MAT
// spec is opened as a file.
func TestOpenFileBeforeRMAT(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	d := &graph.Dataset{Name: "tiny", NumNodes: 2, Graph: graph.FromEdges(2, [][2]int64{{0, 1}})}
	if err := formats.WriteBinary("rmat-4", d); err != nil {
		t.Fatal(err)
	}
	got, err := graph.Open("rmat-4")
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "tiny" || got.NumNodes != 2 {
		t.Errorf("opened %q with %d nodes, want the file", got.Name, got.NumNodes)
	}
}
