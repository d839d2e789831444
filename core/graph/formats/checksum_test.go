package formats

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/graph/graphtest"
	_ "strata/core/graph/synth" // format.rmat, for Sources
)

func TestSources(t *testing.T) {
	files := graphtest.TinyOGB()
	files["split/t/train.csv"] = "0\n" // a second split
	dir := graphtest.WriteOGB(t, files)
	names := func(fs []SourceFile) string {
		var out []string
		for _, f := range fs {
			out = append(out, strings.TrimPrefix(f.Name, dir+string(filepath.Separator)))
		}
		return strings.Join(out, " ")
	}
	rawFiles := "raw/edge.csv.gz raw/node-feat.csv.gz raw/node-label.csv.gz raw/num-edge-list.csv.gz raw/num-node-list.csv.gz"
	tests := []struct {
		spec, want, gen string
		err             error
	}{
		{dir + "@s", rawFiles + " split/s/test.csv.gz split/s/train.csv.gz split/s/valid.csv.gz", "", nil},
		{dir + "@t", rawFiles + " split/t/train.csv.gz", "", nil},
		{dir, "", "", graph.ErrMissing}, // two splits: Open asks for one too
		{dir + "@u", "", "", graph.ErrMissing},
		{filepath.Join(dir, "raw", "edge.csv.gz"), "raw/edge.csv.gz", "", nil},
		{"embedded:cora", "embedded:cora/raw/edge.csv.gz embedded:cora/raw/node-feat.csv.gz embedded:cora/raw/node-label.csv.gz " +
			"embedded:cora/raw/num-edge-list.csv.gz embedded:cora/raw/num-node-list.csv.gz embedded:cora/split/public/test.csv.gz " +
			"embedded:cora/split/public/train.csv.gz embedded:cora/split/public/valid.csv.gz", "", nil},
		{"embedded:nope", "", "", graph.ErrMissing},
		{"rmat-10-4-8-2-7", "", "graph.RMAT(rmat-10-4-8-2-7): scale 10, edge factor 4, 8 features, 2 classes, seed 7", nil},
		{"rmat-10", "", "scale 10, edge factor 16, 64 features, 8 classes, seed 0", nil},
		{filepath.Join(dir, "nope"), "", "", graph.ErrMissing},
	}
	for _, tc := range tests {
		got, gen, err := Sources(tc.spec)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("Sources(%q): error %v, want %v", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Sources(%q): %v", tc.spec, err)
			continue
		}
		if names(got) != tc.want || !strings.Contains(gen, tc.gen) || (tc.gen == "") != (gen == "") {
			t.Errorf("Sources(%q) = %q, %q; want %q, %q", tc.spec, names(got), gen, tc.want, tc.gen)
		}
	}

	// The hash is that of the file's bytes.
	got, _, err := Sources(dir + "@s")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "raw", "edge.csv.gz"))
	if err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(b)
	sum, n, err := got[0].SHA256()
	if err != nil || sum != hex.EncodeToString(want[:]) || n != int64(len(b)) {
		t.Errorf("SHA256 = %s, %d, %v; want %x, %d", sum, n, err, want, len(b))
	}
	// Embedded files hash too, and every dataset Open reads is listed.
	cora, _, _ := Sources("embedded:cora")
	for _, f := range cora {
		if s, n, err := f.SHA256(); err != nil || len(s) != 64 || n == 0 {
			t.Errorf("%s: %s, %d, %v", f.Name, s, n, err)
		}
	}
}
