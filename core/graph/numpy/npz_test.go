package numpy

import (
	"archive/zip"
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"codeberg.org/sbinet/npyio/npy"
	"codeberg.org/sbinet/npyio/npz"
	"strata/core/graph"
	"strata/core/graph/formats"
	"strata/core/graph/graphtest"
)

// writeNPZ writes a .npz archive of raw .npy entries (numpy.savez's layout:
// one "<name>.npy" member per array, deflated) and returns its path.
func writeNPZ(t *testing.T, path string, arrays map[string][]byte) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, npzBytes(arrays, zip.Deflate), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// npzBytes is a .npz archive of raw .npy entries, one "<name>.npy" member
// per non-nil array, stored with method (zip.Store or zip.Deflate).
func npzBytes(arrays map[string][]byte, method uint16) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	names := make([]string, 0, len(arrays))
	for k := range arrays {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		if arrays[k] == nil {
			continue
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: k + ".npy", Method: method})
		if err == nil {
			_, err = w.Write(arrays[k])
		}
		if err != nil {
			panic(err)
		}
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// tinyShchur is a 4-node Shchur-layout graph: adjacency rows 0:{1,2},
// 1:{0}, 2:{3}, 3:{}; sparse 3-dim attributes; labels 0,1,0,1.
func tinyShchur() map[string][]byte {
	return map[string][]byte{
		"adj_data":     npyOf([]float32{1, 1, 1, 1}, 4),
		"adj_indices":  npyOf([]int32{1, 2, 0, 3}, 4),
		"adj_indptr":   npyOf([]int32{0, 2, 3, 4, 4}, 5),
		"adj_shape":    npyOf([]int64{4, 4}, 2),
		"attr_data":    npyOf([]float32{1, 2, 3}, 3),
		"attr_indices": npyOf([]int32{0, 2, 1}, 3),
		"attr_indptr":  npyOf([]int32{0, 1, 2, 3, 3}, 5),
		"attr_shape":   npyOf([]int64{4, 3}, 2),
		"labels":       npyOf([]int64{0, 1, 0, 1}, 4),
	}
}

func TestLoadNPZShchur(t *testing.T) {
	path := writeNPZ(t, filepath.Join(t.TempDir(), "amazon_photo.npz"), tinyShchur())
	d, err := graph.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if d.Name != "amazon_photo" || d.NumNodes != 4 || d.NumClasses != 2 || d.FeatDim != 3 {
		t.Fatalf("got %s: %d nodes, %d classes, %d features", d.Name, d.NumNodes, d.NumClasses, d.FeatDim)
	}
	// Row dst lists the sources: 0->1, 0->2, 1->0, 2->3.
	if got, want := graphtest.RowsOf(d.Graph), [][]int64{{1}, {0}, {0}, {2}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("rows %v, want %v", got, want)
	}
	if want := []float32{1, 0, 0, 0, 0, 2, 0, 3, 0, 0, 0, 0}; !slices.Equal(d.Features, want) {
		t.Errorf("features %v, want %v", d.Features, want)
	}
	if len(d.Train) != 0 {
		t.Errorf("a Shchur file has no split, got train %v", d.Train)
	}

	// Dense attributes, and a generated split by name.
	dense := tinyShchur()
	for _, k := range []string{"attr_data", "attr_indices", "attr_indptr", "attr_shape"} {
		delete(dense, k)
	}
	dense["attr_matrix"] = npyOf([]float64{1, 0, 0, 1, 1, 1, 0, 0}, 4, 2)
	path = writeNPZ(t, filepath.Join(t.TempDir(), "dense.npz"), dense)
	d, err = graph.Open(path + "@random-1-1-seed0")
	if err != nil {
		t.Fatal(err)
	}
	if d.FeatDim != 2 || len(d.Train) != 2 || len(d.Valid) != 2 || len(d.Test) != 0 {
		t.Errorf("dense: %d features, split %v/%v/%v", d.FeatDim, d.Train, d.Valid, d.Test)
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestLoadNPZWrittenByNpyio reads an archive that npyio itself wrote.
func TestLoadNPZWrittenByNpyio(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lib.npz")
	err := npz.Write(path, map[string]any{
		"adj_indices.npy": []int64{1, 0},
		"adj_indptr.npy":  []int64{0, 1, 2},
		"adj_shape.npy":   []int64{2, 2},
		"labels.npy":      []int32{0, 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	d, err := graph.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if d.NumNodes != 2 || d.Graph.NNZ() != 2 || d.NumClasses != 2 || d.FeatDim != 0 {
		t.Errorf("got %d nodes, %d edges, %d classes, %d features", d.NumNodes, d.Graph.NNZ(), d.NumClasses, d.FeatDim)
	}
}

func TestLoadNPZOGB(t *testing.T) {
	root := filepath.Join(t.TempDir(), "ogbn-tiny")
	writeNPZ(t, filepath.Join(root, "raw", "data.npz"), map[string][]byte{
		"edge_index": npyOf([]int64{0, 1, 2, 1, 2, 3}, 2, 3),
		"node_feat":  npyOf([]float32{1, 2, 3, 4, 5, 6, 7, 8}, 4, 2),
		"num_nodes":  npyOf([]int64{4}, 1),
	})
	writeNPZ(t, filepath.Join(root, "raw", "node-label.npz"), map[string][]byte{
		"node_label": npyOf([]float64{0, 1, 2, 0}, 4, 1),
	})
	graphtest.WriteFile(t, root, "split/time/train.csv", []byte("0\n1\n"))
	graphtest.WriteFile(t, root, "split/time/valid.csv", []byte("2\n"))
	graphtest.WriteFile(t, root, "split/time/test.csv", []byte("3\n"))
	for _, spec := range []string{root, root + "@time", filepath.Join(root, "raw", "data.npz")} {
		d, err := graph.Open(spec)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if err := d.Validate(); err != nil {
			t.Fatal(err)
		}
		if d.Name != "ogbn-tiny" || d.NumNodes != 4 || d.Graph.NNZ() != 3 || d.FeatDim != 2 || d.NumClasses != 3 {
			t.Errorf("%s: got %s %d nodes %d edges %d features %d classes", spec, d.Name, d.NumNodes, d.Graph.NNZ(), d.FeatDim, d.NumClasses)
		}
		if !slices.Equal(d.Train, []int32{0, 1}) || !slices.Equal(d.Test, []int32{3}) {
			t.Errorf("%s: split %v/%v/%v", spec, d.Train, d.Valid, d.Test)
		}
	}
	// A generated split replaces the stored one.
	d, err := graph.Open(root + "@random-1-0-seed3")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Train) != 3 || len(d.Valid) != 0 || len(d.Test) != 1 {
		t.Errorf("random split %v/%v/%v", d.Train, d.Valid, d.Test)
	}
}

func TestLoadNPZMalformed(t *testing.T) {
	type edit func(m map[string][]byte)
	for _, tc := range []struct {
		name  string
		edit  edit
		kind  error
		frags []string
	}{
		{"labels missing", func(m map[string][]byte) { delete(m, "labels") }, graph.ErrMissing, []string{`array "labels" is missing`}},
		{"indptr too short", func(m map[string][]byte) { m["adj_indptr"] = npyOf([]int32{0, 2, 3, 4}, 4) }, graph.ErrCount, []string{`"adj_indptr"`, "want 5"}},
		{"index out of range", func(m map[string][]byte) { m["adj_indices"] = npyOf([]int32{1, 9, 0, 3}, 4) }, graph.ErrRange, []string{`"adj_indices"`, "column 9"}},
		{"adj_shape not square", func(m map[string][]byte) { m["adj_shape"] = npyOf([]int64{4, 5}, 2) }, graph.ErrFormat, []string{`"adj_shape"`, "square"}},
		{"labels wrong shape", func(m map[string][]byte) { m["labels"] = npyOf([]int64{0, 1, 0}, 3) }, graph.ErrCount, []string{`"labels"`, "want (4,)"}},
		{"declared size larger than data", func(m map[string][]byte) {
			m["adj_indices"] = npyFile(1, "<i4", false, []int{400}, leBytes([]int32{1, 2, 0, 3}))
		}, graph.ErrTruncated, []string{`"adj_indices"`, "needs 1600 bytes", "truncated"}},
		{"attr shape mismatch", func(m map[string][]byte) { m["attr_shape"] = npyOf([]int64{5, 3}, 2) }, graph.ErrCount, []string{`"attr_shape"`}},
		{"bad dtype", func(m map[string][]byte) {
			m["labels"] = npyFile(1, "<U3", false, []int{4}, make([]byte, 48))
		}, graph.ErrFormat, []string{`"labels"`, "dtype"}},
		{"bad header", func(m map[string][]byte) { m["labels"] = npyRaw(1, "{'shape': (4,)}", nil) }, graph.ErrFormat, []string{`"labels"`, "header"}},
		{"not npy", func(m map[string][]byte) { m["labels"] = []byte("hello world") }, graph.ErrFormat, []string{`"labels"`}},
		{"unknown layout", func(m map[string][]byte) {
			for k := range m {
				delete(m, k)
			}
			m["x"] = npyOf([]int64{1}, 1)
		}, graph.ErrFormat, []string{"unknown .npz layout", "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tinyShchur()
			tc.edit(m)
			path := writeNPZ(t, filepath.Join(t.TempDir(), "bad.npz"), m)
			_, err := graph.Open(path)
			graphtest.WantErr(t, err, tc.kind, append(tc.frags, path)...)
		})
	}
	t.Run("not a zip", func(t *testing.T) {
		path := graphtest.WriteFile(t, t.TempDir(), "x.npz", []byte("not a zip"))
		_, err := graph.Open(path)
		graphtest.WantErr(t, err, graph.ErrFormat, path, "not a .npz archive")
	})
	t.Run("ogb edge out of range", func(t *testing.T) {
		path := writeNPZ(t, filepath.Join(t.TempDir(), "data.npz"), map[string][]byte{
			"edge_index": npyOf([]int64{0, 7}, 2, 1),
			"num_nodes":  npyOf([]int64{4}, 1),
		})
		_, err := graph.Open(path)
		graphtest.WantErr(t, err, graph.ErrRange, path, `"edge_index"`, "outside [0,4)")
	})
}

func TestOpenCSVEdgeList(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, text string }{
		{"plain.csv", "0,1\n1,2\n2,0\n"},
		{"header.csv", "source,target\n0, 1\n1 ,2\n# comment\n2,0\n"},
	} {
		path := graphtest.WriteFile(t, dir, tc.name, []byte(tc.text))
		d, err := graph.Open(path)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if d.NumNodes != 3 || d.Graph.NNZ() != 3 || d.Labels != nil {
			t.Errorf("%s: %d nodes, %d edges", tc.name, d.NumNodes, d.Graph.NNZ())
		}
	}
	path := graphtest.WriteFile(t, dir, "bad.csv", []byte("0,1\n1;2\n"))
	_, err := graph.Open(path)
	graphtest.WantErr(t, err, graph.ErrFormat, path+":2", "expected 2")
	// An edge list has no labels, so it cannot take a generated split.
	_, err = graph.Open(filepath.Join(dir, "plain.csv") + "@random-20-30-seed0")
	graphtest.WantErr(t, err, graph.ErrSplit, "needs labels")
}

func TestRandomSplit(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
		bad  bool
		want graph.RandomSplit
	}{
		{"random-20-30-seed0", true, false, graph.RandomSplit{Train: 20, Valid: 30, Seed: 0}},
		{"random-5-0-seed42", true, false, graph.RandomSplit{Train: 5, Valid: 0, Seed: 42}},
		{"random-0-30-seed1", true, true, graph.RandomSplit{}},
		{"public", false, false, graph.RandomSplit{}},
		{"random-20-30", false, false, graph.RandomSplit{}},
	} {
		s, ok, err := graph.ParseRandomSplit(tc.name)
		if ok != tc.ok || (err != nil) != tc.bad || (!tc.bad && s != tc.want) {
			t.Errorf("%s: got %+v %v %v", tc.name, s, ok, err)
		}
		if ok && !tc.bad && s.String() != tc.name {
			t.Errorf("%s: String() = %s", tc.name, s)
		}
	}
	d, err := formats.LoadEmbedded("cora")
	if err != nil {
		t.Fatal(err)
	}
	rs := graph.RandomSplit{Train: 20, Valid: 30, Seed: 0}
	if err := rs.Apply(d); err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(d.Train) != 20*d.NumClasses || len(d.Valid) != 30*d.NumClasses || len(d.Train)+len(d.Valid)+len(d.Test) != d.NumNodes {
		t.Errorf("split %d/%d/%d of %d nodes", len(d.Train), len(d.Valid), len(d.Test), d.NumNodes)
	}
	perClass := make([]int, d.NumClasses)
	for _, v := range d.Train {
		perClass[d.Labels[v]]++
	}
	for c, k := range perClass {
		if k != 20 {
			t.Errorf("class %d has %d training nodes, want 20", c, k)
		}
	}
	// Deterministic, and different for another seed.
	e, _ := graph.Open("embedded:cora@random-20-30-seed0")
	if !slices.Equal(e.Train, d.Train) || !slices.Equal(e.Test, d.Test) {
		t.Error("same seed, different split")
	}
	f, _ := graph.Open("embedded:cora@random-20-30-seed1")
	if slices.Equal(f.Train, d.Train) {
		t.Error("seed 1 gives the split of seed 0")
	}
	_, err = graph.Open("embedded:cora@public")
	graphtest.WantErr(t, err, graph.ErrFormat, "only a generated split")
	_, err = graph.Open("embedded:cora@random-0-1-seed0")
	if !errors.Is(err, graph.ErrFormat) || !strings.Contains(err.Error(), "random-<train>") {
		t.Errorf("bad random split: %v", err)
	}
}

func TestWriteNPYDirRoundTrip(t *testing.T) {
	for _, spec := range []string{"embedded:cora", "rmat-8-4-3-2-1@random-2-2-seed0"} {
		d, err := graph.Open(spec)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "out")
		files, err := WriteNPYDir(dir, d)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"edge_index.npy", "x.npy", "y.npy", "train_mask.npy", "val_mask.npy", "test_mask.npy"}
		if len(files) != len(want) {
			t.Errorf("%s: wrote %v, want %v", spec, files, want)
		}
		back, err := graph.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !graphtest.SameCSR(back.Graph, d.Graph) || !slices.Equal(back.Features, d.Features) || !slices.Equal(back.Labels, d.Labels) ||
			!slices.Equal(back.Train, d.Train) || !slices.Equal(back.Valid, d.Valid) || !slices.Equal(back.Test, d.Test) {
			t.Errorf("%s: round trip through %s differs", spec, dir)
		}
		// npyio, an independent reader, agrees on the edge_index header and data.
		f, err := os.Open(filepath.Join(dir, "edge_index.npy"))
		if err != nil {
			t.Fatal(err)
		}
		r, err := npy.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		var ei []int64
		if err := r.Read(&ei); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if got := r.Header.Descr.Shape; !slices.Equal(got, []int{2, int(d.Graph.NNZ())}) || strings.Trim(r.Header.Descr.Type, "'") != "<i8" {
			t.Errorf("%s: npyio reads shape %v dtype %s", spec, got, r.Header.Descr.Type)
		}
		m := int(d.Graph.NNZ())
		if v := ei[m]; d.Graph.Indptr[v+1]-d.Graph.Indptr[v] == 0 {
			t.Errorf("first target %d has no in-edges", v)
		}
	}
}

// BenchmarkReadNPY compares the hand-written .npy reader with npyio's on a
// 4M-element float32 array (16 MiB; docs/decisions.md):
// go test -run X -bench ReadNPY ./core/graph/
func BenchmarkReadNPY(b *testing.B) {
	const n = 1 << 22
	vals := make([]float32, n)
	for i := range vals {
		vals[i] = float32(i)
	}
	path := filepath.Join(b.TempDir(), "x.npy")
	if err := os.WriteFile(path, npyOf(vals, n/64, 64), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("strata", func(b *testing.B) {
		b.SetBytes(4 * n)
		for b.Loop() {
			if _, _, err := ReadNPY(path); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("npyio", func(b *testing.B) {
		b.SetBytes(4 * n)
		for b.Loop() {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			var out []float32 // buffered: unbuffered, npyio makes a read call per element
			if err := npy.Read(bufio.NewReaderSize(f, 1<<20), &out); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
}

// TestSourcesGeneratedSplit: a generated split reads the dataset's files
// (no stored split), for every kind of spec.
func TestSourcesGeneratedSplit(t *testing.T) {
	npzPath := writeNPZ(t, filepath.Join(t.TempDir(), "a.npz"), tinyShchur())
	for spec, want := range map[string]int{
		"embedded:cora@random-20-30-seed0": -1, // same as embedded:cora
		npzPath + "@random-1-1-seed0":      1,
		"rmat-6@random-1-1-seed0":          0,
	} {
		files, gen, err := formats.Sources(spec)
		if err != nil {
			t.Errorf("%s: %v", spec, err)
			continue
		}
		if want >= 0 && len(files) != want || want == 0 && gen == "" {
			t.Errorf("%s: %d files, generator %q", spec, len(files), gen)
		}
	}
	a, _, _ := formats.Sources("embedded:cora")
	b, _, _ := formats.Sources("embedded:cora@random-20-30-seed0")
	if len(a) == 0 || len(a) != len(b) {
		t.Errorf("embedded: %d files plain, %d with a generated split", len(a), len(b))
	}
}
