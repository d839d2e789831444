package graph

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// specFormFragments are the parts of the accepted-forms list an unknown
// spec's error must show.
var specFormFragments = []string{"embedded:<name>", "OGB raw layout", "<dir>@<split>", "edge_index.npy", "strata convert", "SNAP edge list", ".txt.gz", "rmat-<scale>"}

func TestOpenDispatch(t *testing.T) {
	root := t.TempDir()
	ogb := writeOGB(t, tinyOGB())
	npy := npyDir(t, tinyNPY())
	// A directory with both layouts is read as OGB.
	both := writeOGB(t, tinyOGB())
	writeFile(t, both, "edge_index.npy", tinyNPY()["edge_index.npy"])

	snapBody := "# c\n0 1\n1 2\n2 0\n"
	snapWant := FromEdges(3, [][2]int64{{0, 1}, {1, 2}, {2, 0}})
	bin := reorderDataset(FromEdges(8, randEdges(2, 8, 1, 20)))
	bin.Name = "bin"
	binPath := filepath.Join(root, "g.strata")
	if err := WriteBinary(binPath, bin); err != nil {
		t.Fatal(err)
	}
	binData, err := os.ReadFile(binPath)
	if err != nil {
		t.Fatal(err)
	}
	ogbWant, err := LoadOGB(ogb, "")
	if err != nil {
		t.Fatal(err)
	}
	npyWant, err := LoadNPYDir(npy)
	if err != nil {
		t.Fatal(err)
	}
	rmatWant, err := RMAT(RMATOptions{Scale: 5, EdgeFactor: 2, FeatDim: 3, NumClasses: 2, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name, spec string
		want       *Dataset
		check      func(t *testing.T, d *Dataset)
	}{
		{"embedded", "embedded:cora", nil, checkCora},
		{"ogb dir", ogb, ogbWant, nil},
		{"ogb dir with trailing slash", ogb + string(filepath.Separator), ogbWant, nil},
		{"ogb dir@split", ogb + "@s", ogbWant, nil},
		{"both layouts", both, ogbWant, nil},
		{"npy dir", npy, npyWant, nil},
		{"binary .strata", binPath, bin, nil},
		{"binary any name", writeFile(t, root, "graph.dat", binData), bin, nil},
		{"binary .txt name", writeFile(t, root, "graph.txt", binData), bin, nil},
		{"snap .txt", writeFile(t, root, "s.txt", []byte(snapBody)), nil, nil},
		{"snap .txt.gz", writeFile(t, root, "s.txt.gz", gz(snapBody)), nil, nil},
		{"snap .el", writeFile(t, root, "s.el", []byte(snapBody)), nil, nil},
		{"snap .edges", writeFile(t, root, "s.edges", []byte(snapBody)), nil, nil},
		{"snap .tsv", writeFile(t, root, "s.tsv", []byte(strings.ReplaceAll(snapBody, " ", "\t"))), nil, nil},
		{"snap .edgelist", writeFile(t, root, "s.edgelist", []byte(snapBody)), nil, nil},
		{"snap .TXT", writeFile(t, root, "S.TXT", []byte(snapBody)), nil, nil},
		{"snap .edges.gz", writeFile(t, root, "s.edges.gz", gz(snapBody)), nil, nil},
		{"rmat", "rmat-5-2-3-2-7", rmatWant, nil},
		{"rmat defaults", "rmat-4", nil, func(t *testing.T, d *Dataset) {
			if d.NumNodes != 16 || d.Graph.NNZ() != 16*16 || d.FeatDim != 64 || d.NumClasses != 8 || d.Name != "rmat-4-16-64-8-0" {
				t.Errorf("rmat-4: n=%d nnz=%d dim=%d classes=%d name %q", d.NumNodes, d.Graph.NNZ(), d.FeatDim, d.NumClasses, d.Name)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := Open(c.spec)
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
				if diff := sameDataset(d, c.want); diff != "" {
					t.Errorf("differs in %s from the direct loader", diff)
				}
			default: // SNAP
				if !csrEqual(d.Graph, snapWant) || d.Source != c.spec {
					t.Errorf("rows %v source %q", rowsOf(d.Graph), d.Source)
				}
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	root := t.TempDir()
	ogb := writeOGB(t, tinyOGB())
	empty := filepath.Join(root, "emptydir")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	notBin := writeFile(t, root, "fake.strata", []byte("0 1\n"))
	csv := writeFile(t, root, "edges.xyz", []byte("0,1\n"))
	arr := writeFile(t, root, "a.npy", npyOf([]int64{1, 2}, 2))
	badSnap := writeFile(t, root, "bad.txt", []byte("0 1\n1\n"))
	missing := filepath.Join(root, "nope", "g.txt")
	cases := []struct {
		name, spec string
		kind       error
		want       []string
	}{
		{"empty spec", "", ErrMissing, append([]string{"empty dataset spec"}, specFormFragments...)},
		{"unknown embedded", "embedded:nonexistent", ErrMissing, []string{"embedded:nonexistent", "no such embedded dataset", "available: cora"}},
		{"empty embedded", "embedded:", ErrMissing, []string{"no such embedded dataset"}},
		{"embedded path", "embedded:../cora", ErrMissing, []string{"no such embedded dataset"}},
		{"missing file", missing, ErrMissing, append([]string{missing, "no such file or directory"}, specFormFragments...)},
		{"unknown word", "cora", ErrMissing, append([]string{"cora: no such file or directory"}, specFormFragments...)},
		{"missing dir with split", filepath.Join(root, "nope") + "@s", ErrMissing, []string{"no such file or directory"}},
		{"empty split", ogb + "@", ErrFormat, []string{"empty split name after '@'"}},
		{"unknown split", ogb + "@nope", ErrMissing, []string{`split "nope" does not exist`, "available: s"}},
		{"dir without a dataset", empty, ErrMissing, []string{filepath.Join(empty, "raw"), "edge_index.npy"}},
		{"not binary .strata", notBin, ErrFormat, []string{notBin, "not a strata binary graph"}},
		{"unknown extension", csv, ErrFormat, append([]string{csv, `unknown dataset file type ".xyz"`}, specFormFragments...)},
		{"single npy", arr, ErrFormat, []string{arr, "not a dataset"}},
		{"bad snap", badSnap, ErrFormat, []string{badSnap + ":2:", "1 column"}},
		{"rmat bad scale", "rmat-0", ErrRange, []string{`rmat spec "rmat-0"`, "scale 0"}},
		{"rmat bad field", "rmat-x", ErrFormat, []string{`scale "x"`}},
		{"rmat with a path", filepath.Join(root, "rmat-4"), ErrMissing, []string{"no such file or directory"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := Open(c.spec)
			if d != nil {
				t.Error("dataset returned with an error")
			}
			wantErr(t, err, c.kind, c.want...)
		})
	}
}

// TestOpenFileBeforeRMAT checks that an existing file named like an R-MAT
// spec is opened as a file.
func TestOpenFileBeforeRMAT(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	d := &Dataset{Name: "tiny", NumNodes: 2, Graph: FromEdges(2, [][2]int64{{0, 1}})}
	if err := WriteBinary("rmat-4", d); err != nil {
		t.Fatal(err)
	}
	got, err := Open("rmat-4")
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "tiny" || got.NumNodes != 2 {
		t.Errorf("opened %q with %d nodes, want the file", got.Name, got.NumNodes)
	}
}
