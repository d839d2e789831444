package numpy

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"strata/core/graph"
	"strata/core/graph/graphtest"
)

// scipyFixture is a file of testdata/scipy (made by make.py there with
// numpy 1.24 and scipy 1.10).
func scipyFixture(t *testing.T, name string) string {
	p, err := filepath.Abs(filepath.Join("testdata", "scipy", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestNPZScipy loads pickled CSR and CSC matrices (protocols 3 and 4,
// sparse and dense attributes) through Open and compares them with the
// same graph saved as plain CSR parts (format.npz).
func TestNPZScipy(t *testing.T) {
	parts, err := graph.Open(scipyFixture(t, "parts.npz"))
	if err != nil {
		t.Fatal(err)
	}
	adj := graph.FromEdges(4, [][2]int64{{0, 1}, {1, 0}, {1, 2}, {2, 3}, {3, 0}})
	if !graphtest.SameCSR(parts.Graph, adj) {
		t.Fatalf("parts.npz rows %v", graphtest.RowsOf(parts.Graph))
	}
	for _, c := range []struct {
		file  string
		feats bool
	}{{"csr.npz", true}, {"csc.npz", true}, {"dense-attr.npz", true}, {"csr-proto4.npz", false}} {
		t.Run(c.file, func(t *testing.T) {
			spec := scipyFixture(t, c.file)
			f, _, err := graph.Detect(spec)
			if err != nil || f == nil || graph.FormatID(f) != "format.npz-scipy" {
				t.Fatalf("detected %v, %v; want format.npz-scipy", f, err)
			}
			d, err := graph.Open(spec)
			if err != nil {
				t.Fatal(err)
			}
			want := *parts
			want.Name, want.Source = d.Name, d.Source
			if !c.feats {
				want.Features, want.FeatDim = nil, 0
			}
			if diff := graphtest.SameDataset(d, &want); diff != "" {
				t.Errorf("differs in %s from parts.npz", diff)
			}
		})
	}
}

// TestNPZScipyRefuses checks the errors of .npz files whose adj_matrix is
// not a pickled sparse matrix, and that a pickle naming any other global
// is refused by name without running it: each evil fixture makes Python
// create pwned-by-pickle in the working directory.
func TestNPZScipyRefuses(t *testing.T) {
	cases := []struct {
		file string
		kind error
		want []string
	}{
		{"dense-adj.npz", graph.ErrFormat, []string{"dense-adj.npz", `array "adj_matrix"`, "a dense [4 4] adjacency of dtype <f4 is not supported", "scipy.sparse.csr_matrix(A)"}},
		{"not-sparse.npz", graph.ErrFormat, []string{"not-sparse.npz", `array "adj_matrix"`, "not one scipy.sparse CSR/CSC matrix"}},
		{"os-system.npz", graph.ErrFormat, []string{"os-system.npz", `array "adj_matrix"`, "refusing to load os.system"}},
		{"builtins-eval.npz", graph.ErrFormat, []string{"builtins-eval.npz", "refusing to load builtins.eval"}},
		{"nested-system.npz", graph.ErrFormat, []string{"nested-system.npz", "refusing to load posix.system"}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			spec := scipyFixture(t, c.file)
			dir := t.TempDir()
			t.Chdir(dir)
			d, err := graph.Open(spec)
			if d != nil {
				t.Error("dataset returned with an error")
			}
			graphtest.WantErr(t, err, c.kind, c.want...)
			if _, err := os.Stat(filepath.Join(dir, "pwned-by-pickle")); !os.IsNotExist(err) {
				t.Fatalf("the pickle ran: pwned-by-pickle exists (%v)", err)
			}
		})
	}
}

// TestUnpickleTruncated cuts a valid pickle at every byte: each prefix is
// an error, never a panic or a value.
func TestUnpickleTruncated(t *testing.T) {
	z, err := openNPZ(scipyFixture(t, "csr-proto4.npz"))
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	if _, err := z.sparse("adj_matrix"); err != nil {
		t.Fatal(err)
	}
	b := pickleOf(t, z, "adj_matrix")
	for n := range len(b) {
		if v, err := unpickle(b[:n], 1<<20); err == nil {
			t.Fatalf("a pickle cut at %d of %d bytes gave %v", n, len(b), v)
		}
	}
	if _, err := unpickle(b, 8); err == nil {
		t.Error("a budget of 8 bytes decoded the arrays")
	}
}

// pickleOf returns the pickle of array name of z (after its .npy header).
func pickleOf(t *testing.T, z *npzFile, name string) []byte {
	_, rc, _, err := z.member(name)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
