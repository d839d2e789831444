package formats

import (
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"strata/core/graph/graphtest"
)

// The fuzz targets feed arbitrary bytes to every loader: none may panic,
// hang or allocate beyond what the input can justify; errors are expected.
// `go test` runs the seeds and the saved corpora; `make fuzz` fuzzes the
// formats through plugins/all's FuzzFormats (and core/graph/numpy's
// FuzzNPY): FuzzSNAP, FuzzOGB and FuzzBinary stay as regression tests of
// their saved inputs.

func FuzzSNAP(f *testing.F) {
	for _, s := range []string{"0 1\n1 2\n", "# Nodes: 5 Edges: 2\n0\t1\n3 4\n", "%c\n0 1", "", "1 99999999999\n", "0 1 2\n", "-1 0\n", "\x1f\x8b"} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "g.txt")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if d, err := LoadSNAP(p); err == nil {
			if err := d.Validate(); err != nil {
				t.Fatalf("loaded an invalid dataset: %v", err)
			}
		}
	})
}

func FuzzOGB(f *testing.F) {
	base := graphtest.TinyOGB()
	f.Add([]byte(base["raw/edge.csv"]), []byte(base["raw/num-node-list.csv"]), []byte(base["raw/node-label.csv"]), []byte(base["raw/node-feat.csv"]))
	f.Add([]byte("0,1\n"), []byte("2147483647\n"), []byte("0\n1\n"), []byte("nan,1\n"))
	f.Add([]byte("0,9\n"), []byte("-3\n"), []byte(""), []byte("1e39\n"))
	f.Fuzz(func(t *testing.T, edge, nodes, labels, feats []byte) {
		fsys := fstest.MapFS{
			"raw/edge.csv":          {Data: edge},
			"raw/num-node-list.csv": {Data: nodes},
			"raw/node-label.csv":    {Data: labels},
			"raw/node-feat.csv":     {Data: feats},
			"split/s/train.csv":     {Data: []byte(base["split/s/train.csv"])},
			"split/s/valid.csv":     {Data: []byte(base["split/s/valid.csv"])},
			"split/s/test.csv":      {Data: []byte(base["split/s/test.csv"])},
		}
		src := ogbSource{fsys: fsys, label: func(rel string) string { return "fuzz/" + rel }, budget: 64 << 20}
		if d, err := loadOGB(src, ""); err == nil {
			if err := d.Validate(); err != nil {
				t.Fatalf("loaded an invalid dataset: %v", err)
			}
		}
	})
}

func FuzzBinary(f *testing.F) {
	data, _ := binFile(f)
	f.Add(data)
	f.Add(data[:len(data)/2])
	f.Add([]byte(binMagic))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "f.strata")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		d, closer, err := OpenBinary(p)
		if err == nil {
			if err := d.Validate(); err != nil {
				t.Fatalf("opened an invalid dataset: %v", err)
			}
			closer.Close()
		}
	})
}
