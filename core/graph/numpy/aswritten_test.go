package numpy

// Arrays as numpy users write them (issue 37): Fortran order, integer 0/1
// masks, float labels, an edges.csv beside .npy arrays.

import (
	"encoding/binary"
	"fmt"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"strata/core/graph"
	"strata/core/graph/formats"
	"strata/core/graph/graphtest"
)

// fortranBytes reorders the C-order data c (elem bytes an element) of an
// array of shape into Fortran order (first index fastest), as numpy writes
// np.asfortranarray(a) or a.T: element (i0, ..., ik) goes to byte
// elem * sum(i_d * prod(shape[:d])).
func fortranBytes(c []byte, shape []int, elem int) []byte {
	out := make([]byte, len(c))
	idx := make([]int, len(shape))
	for k := 0; k*elem < len(c); k++ {
		rest := k // unravel the C-order index k, last index fastest
		for d := len(shape) - 1; d >= 0; d-- {
			idx[d], rest = rest%shape[d], rest/shape[d]
		}
		f, stride := 0, 1
		for d := range shape {
			f += idx[d] * stride
			stride *= shape[d]
		}
		copy(out[f*elem:(f+1)*elem], c[k*elem:(k+1)*elem])
	}
	return out
}

// countingBytes is count elements of elem bytes holding 0, 1, 2, ...
// (bool: alternating 0 and 1), little-endian.
func countingBytes(count, elem int, isBool bool) []byte {
	out := make([]byte, count*elem)
	var b [8]byte
	for k := range count {
		v := uint64(k*7919 + 3) // varied bytes in every position
		if isBool {
			v = uint64(k % 2)
		}
		binary.LittleEndian.PutUint64(b[:], v)
		copy(out[k*elem:], b[:elem])
	}
	return out
}

// TestReadNPYFortranOrder reads every dtype in Fortran order, from a .npy
// file and from a .npz entry, and checks it against the same array in C
// order; shapes cover 2 and 3 dimensions, unit and empty dimensions, and
// more elements than readData's 64 Ki-element piece.
func TestReadNPYFortranOrder(t *testing.T) {
	shapes := [][]int{{2, 3}, {3, 1}, {1, 4}, {2, 3, 4}, {0, 3}, {2, 40000}}
	for descr, typ := range npyDtypes {
		for _, shape := range shapes {
			t.Run(fmt.Sprintf("%s%v", descr, shape), func(t *testing.T) {
				count := 1
				for _, d := range shape {
					count *= d
				}
				c := countingBytes(count, int(typ.size), descr == "|b1")
				f := fortranBytes(c, shape, int(typ.size))
				dir := t.TempDir()
				cp := graphtest.WriteFile(t, dir, "c.npy", npyFile(1, descr, false, shape, c))
				fp := graphtest.WriteFile(t, dir, "f.npy", npyFile(1, descr, true, shape, f))
				cShape, cData, err := ReadNPY(cp)
				if err != nil {
					t.Fatal(err)
				}
				fShape, fData, err := ReadNPY(fp)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(cShape, fShape) || !reflect.DeepEqual(cData, fData) {
					t.Errorf(".npy: Fortran order read as %v %v, want %v %v", fShape, fData, cShape, cData)
				}
				z, err := openNPZ(writeNPZ(t, filepath.Join(dir, "a.npz"), map[string][]byte{"a": npyFile(1, descr, true, shape, f)}))
				if err != nil {
					t.Fatal(err)
				}
				defer z.Close()
				zShape, zData, err := z.read("a")
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(cShape, zShape) || !reflect.DeepEqual(cData, zData) {
					t.Errorf(".npz: Fortran order read as %v %v, want %v %v", zShape, zData, cShape, cData)
				}
			})
		}
	}
	// A hand check that C order itself is row-major: (2, 3) int64 in
	// Fortran order [[0, 1, 2], [3, 4, 5]] is stored 0 3 1 4 2 5.
	p := graphtest.WriteFile(t, t.TempDir(), "h.npy", npyFile(1, "<i8", true, []int{2, 3}, leBytes([]int64{0, 3, 1, 4, 2, 5})))
	_, data, err := ReadNPY(p)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(data.([]int64), []int64{0, 1, 2, 3, 4, 5}) {
		t.Errorf("got %v, want 0..5", data)
	}
}

// TestNPYDirFortranOrder loads tinyNPY with edge_index.npy saved as
// np.save(f, pairs.T) (pairs (E, 2) in C order: the file is (2, E) in
// Fortran order) and x.npy in Fortran order, inside a directory and an OGB
// data.npz, and compares with the C-order dataset.
func TestNPYDirFortranOrder(t *testing.T) {
	want, err := LoadNPYDir(npyDir(t, tinyNPY()))
	if err != nil {
		t.Fatal(err)
	}
	pairs := leBytes([]int64{0, 1, 1, 2, 2, 0, 3, 3, 5, 4, 1, 2}) // (E, 2) C order
	feats := leBytes([]float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
	files := tinyNPY()
	files["edge_index.npy"] = npyFile(1, "<i8", true, []int{2, 6}, pairs)
	files["features.npy"] = npyFile(1, "<f8", true, []int{6, 2}, fortranBytes(feats, []int{6, 2}, 8))
	got, err := LoadNPYDir(npyDir(t, files))
	if err != nil {
		t.Fatal(err)
	}
	if diff := graphtest.SameDataset(got, want); diff != "" {
		t.Errorf("Fortran-order directory differs in %s", diff)
	}

	root := filepath.Join(t.TempDir(), "ogbn-f")
	writeNPZ(t, filepath.Join(root, "raw", "data.npz"), map[string][]byte{
		"edge_index": files["edge_index.npy"], "node_feat": files["features.npy"], "num_nodes": npyOf([]int64{6}, 1),
	})
	writeNPZ(t, filepath.Join(root, "raw", "node-label.npz"), map[string][]byte{"node_label": npyOf([]float64{0, 1, 2, 1, -1, 0}, 6, 1)})
	z, err := graph.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	if !graphtest.SameCSR(z.Graph, want.Graph) || !slices.Equal(z.Features, want.Features) {
		t.Errorf("Fortran-order data.npz: graph or features differ")
	}
}

// intBytes encodes vals little-endian in the integer dtype descr.
func intBytes(vals []int64, descr string) []byte {
	size := int(npyDtypes[descr].size)
	out := make([]byte, len(vals)*size)
	var b [8]byte
	for i, v := range vals {
		binary.LittleEndian.PutUint64(b[:], uint64(v))
		copy(out[i*size:], b[:size])
	}
	return out
}

var intDescrs = []string{"|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8"}

// TestNPYIntegerMasks loads tinyNPY's split as 0/1 masks of every integer
// dtype (np.save(f, mask.astype(np.int64)) and the like): the same split
// as its ids and bool mask. An int64 mask was read as node ids before
// ("node 0 is listed twice").
func TestNPYIntegerMasks(t *testing.T) {
	want, err := LoadNPYDir(npyDir(t, tinyNPY()))
	if err != nil {
		t.Fatal(err)
	}
	masks := map[string][]int64{
		"train_idx.npy": {1, 0, 0, 1, 0, 0}, "valid_idx.npy": {0, 1, 0, 0, 0, 0}, "test_idx.npy": {0, 0, 1, 0, 0, 1},
	}
	for _, descr := range intDescrs {
		t.Run(descr, func(t *testing.T) {
			files := tinyNPY()
			for name, m := range masks {
				files[name] = npyFile(1, descr, false, []int{6}, intBytes(m, descr))
			}
			got, err := LoadNPYDir(npyDir(t, files))
			if err != nil {
				t.Fatal(err)
			}
			if diff := graphtest.SameDataset(got, want); diff != "" {
				t.Errorf("%s masks: dataset differs in %s (%v %v %v)", descr, diff, got.Train, got.Valid, got.Test)
			}
		})
	}
}

// tinyGraph is an n-node .npy directory (n = 1 or 2) whose train split
// is train (int64), every node labelled.
func tinyGraph(n int, train []int64) map[string][]byte {
	f := map[string][]byte{
		"edge_index.npy": npyOf([]int64{0, int64(n - 1)}, 2, 1),
		"labels.npy":     npyOf(make([]int64, n), n),
		"train_idx.npy":  npyOf(train, len(train)),
	}
	if len(train) == 0 {
		f["train_idx.npy"] = npyFile(1, "<i8", false, []int{0}, nil)
	}
	return f
}

// TestNPYMaskOrIDs pins the rule of readNPYSplit: an integer array of
// length N of 0s and 1s is a mask, anything else node ids; the arrays
// both readings accept (N <= 2, every node once) are refused as
// ambiguous.
func TestNPYMaskOrIDs(t *testing.T) {
	six := func(train []int64) map[string][]byte {
		f := tinyNPY()
		f["train_idx.npy"], f["valid_idx.npy"], f["test_idx.npy"] = npyOf(train, len(train)), nil, nil
		return f
	}
	cases := []struct {
		name  string
		files map[string][]byte
		train []int32 // want, when err is ""
		err   string
	}{
		{"N=6 ids 0 1", six([]int64{1, 0}), []int32{0, 1}, ""},
		{"N=6 five ids", six([]int64{5, 3, 2, 1, 0}), []int32{0, 1, 2, 3, 5}, ""},
		{"N=6 0/1 of length N is a mask", six([]int64{0, 1, 1, 0, 0, 1}), []int32{1, 2, 5}, ""},
		{"N=6 all-zero mask", six([]int64{0, 0, 0, 0, 0, 0}), nil, ""},
		{"N=6 0/1 of another length are ids", six([]int64{0, 1, 1}), nil, "element 2: node 1 is listed twice"},
		{"N=6 value 2 makes ids", six([]int64{0, 1, 2, 3, 0, 5}), nil, "element 4: node 0 is listed twice"},
		{"N=2 [1 1] mask", tinyGraph(2, []int64{1, 1}), []int32{0, 1}, ""},
		{"N=2 [0 0] mask", tinyGraph(2, []int64{0, 0}), nil, ""},
		{"N=2 [1] id", tinyGraph(2, []int64{1}), []int32{1}, ""},
		{"N=2 [0 1] ambiguous", tinyGraph(2, []int64{0, 1}), nil, "[0 1] reads both as node ids (all 2 nodes) and as a 0/1 mask (1 of them)"},
		{"N=2 [1 0] ambiguous", tinyGraph(2, []int64{1, 0}), nil, "ambiguous: save a bool mask"},
		{"N=1 [1] mask", tinyGraph(1, []int64{1}), []int32{0}, ""},
		{"N=1 [0] ambiguous", tinyGraph(1, []int64{0}), nil, "[0] reads both as node ids (all 1 nodes) and as a 0/1 mask (0 of them)"},
		{"N=1 empty ids", tinyGraph(1, nil), nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := npyDir(t, c.files)
			d, err := LoadNPYDir(dir)
			if c.err != "" {
				graphtest.WantErr(t, err, graph.ErrSplit, filepath.Join(dir, "train_idx.npy"), c.err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(d.Train, c.train) {
				t.Errorf("train %v, want %v", d.Train, c.train)
			}
		})
	}
}

// TestNPYFloatLabels reads integral float32 and float64 labels
// (np.save("y.npy", y.astype(float))) as classes, -1.0 unlabeled.
func TestNPYFloatLabels(t *testing.T) {
	want, err := LoadNPYDir(npyDir(t, tinyNPY()))
	if err != nil {
		t.Fatal(err)
	}
	for _, labels := range [][]byte{
		npyOf([]float32{0, 1, 2, 1, -1, 0}, 6), npyOf([]float64{0, 1, 2, 1, -1, 0}, 6, 1),
		npyFile(1, "<f8", true, []int{6, 1}, leBytes([]float64{0, 1, 2, 1, -1, 0})),
	} {
		files := tinyNPY()
		files["labels.npy"] = labels
		got, err := LoadNPYDir(npyDir(t, files))
		if err != nil {
			t.Fatal(err)
		}
		if diff := graphtest.SameDataset(got, want); diff != "" {
			t.Errorf("float labels: dataset differs in %s", diff)
		}
	}
}

// TestNPYDirWithEdgesCSV loads a directory of edges.csv (any of
// NPYDirEdgeLists) beside y.npy, x.npy and masks, through graph.Open,
// as the same dataset as edge_index.npy; refuses two edge lists and an
// edge whose node the labels do not have.
func TestNPYDirWithEdgesCSV(t *testing.T) {
	want, err := LoadNPYDir(npyDir(t, tinyNPY()))
	if err != nil {
		t.Fatal(err)
	}
	csv := []byte("src,dst\n0,1\n1,2\n2,0\n3,3\n5,4\n1,2\n")
	pyg := func() map[string][]byte {
		f := tinyNPY()
		f["y.npy"], f["x.npy"], f["labels.npy"], f["features.npy"], f["edge_index.npy"] = f["labels.npy"], f["features.npy"], nil, nil, nil
		return f
	}
	for _, name := range []string{"edges.csv", "edge_list.csv"} {
		files := pyg()
		files[name] = csv
		dir := npyDir(t, files)
		got, err := graph.Open(dir)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := graphtest.SameDataset(got, want); diff != "" {
			t.Errorf("%s: dataset differs in %s", name, diff)
		}
		src, _, err := formats.Sources(dir) // what a run's dataset hash covers
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, f := range src {
			names = append(names, filepath.Base(f.Name))
		}
		if !slices.Equal(names, []string{"test_idx.npy", "train_idx.npy", "valid_idx.npy", "x.npy", "y.npy", name}) {
			t.Errorf("%s: sources %v", name, names)
		}
	}
	// Node 5 has no edge: the graph still has the labels' 6 nodes.
	files := pyg()
	files["edges.csv"] = []byte("0,1\n1,2\n")
	d, err := graph.Open(npyDir(t, files))
	if err != nil {
		t.Fatal(err)
	}
	if d.NumNodes != 6 || d.Graph.NumRows != 6 || d.Graph.NNZ() != 2 {
		t.Errorf("got %d nodes, %d rows, %d edges; want 6, 6, 2", d.NumNodes, d.Graph.NumRows, d.Graph.NNZ())
	}

	files = pyg()
	files["edges.csv"] = []byte("0,1\n1,7\n")
	dir := npyDir(t, files)
	_, err = graph.Open(dir)
	graphtest.WantErr(t, err, graph.ErrRange, filepath.Join(dir, "edges.csv"), "node id 7 outside [0,6)", "y.npy has 6 nodes")

	files = pyg()
	files["edges.csv"], files["edge_index.npy"] = csv, tinyNPY()["edge_index.npy"]
	dir = npyDir(t, files)
	_, err = graph.Open(dir)
	graphtest.WantErr(t, err, graph.ErrFormat, dir, "holds edge_index.npy and edges.csv", "keep one")

	// edges.csv alone is no .npy directory: the OGB layout explains.
	dir = npyDir(t, map[string][]byte{"edges.csv": csv})
	if _, err := graph.Open(dir); err == nil {
		t.Error("a directory with only edges.csv loaded")
	}
}

// TestNPYWrittenByNumpy loads arrays written by numpy itself the way
// issue 37 lists them (a.T edge index, int64 and uint8 masks, float
// labels, edges.csv beside x.npy and y.npy). It skips without python3
// and numpy.
func TestNPYWrittenByNumpy(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil || exec.Command(py, "-c", "import numpy").Run() != nil {
		t.Skip("python3 with numpy not installed")
	}
	dir := t.TempDir()
	script := `
import numpy as np, sys, os
d = sys.argv[1]
a = np.array([[0, 1], [1, 2], [2, 0], [3, 3], [5, 4], [1, 2]], dtype=np.int64)
os.makedirs(d + "/f"); os.makedirs(d + "/c")
np.save(d + "/f/edge_index.npy", a.T)
np.save(d + "/f/y.npy", np.array([0, 1, 2, 1, -1, 0], dtype=np.float32))
np.save(d + "/f/x.npy", np.asfortranarray(np.arange(12, dtype=np.float64).reshape(6, 2)))
np.save(d + "/f/train_mask.npy", np.array([1, 0, 0, 1, 0, 0], dtype=np.int64))
np.save(d + "/f/val_mask.npy", np.array([0, 1, 0, 0, 0, 0], dtype=np.uint8))
np.save(d + "/f/test_mask.npy", np.array([0, 0, 1, 0, 0, 1]) == 1)
np.savetxt(d + "/c/edges.csv", a, fmt="%d", delimiter=",")
for k in ["y", "x", "train_mask", "val_mask", "test_mask"]:
    os.link(d + "/f/" + k + ".npy", d + "/c/" + k + ".npy")
`
	if out, err := exec.Command(py, "-c", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("numpy: %v\n%s", err, out)
	}
	want, err := LoadNPYDir(npyDir(t, tinyNPY()))
	if err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"f", "c"} {
		got, err := graph.Open(filepath.Join(dir, sub))
		if err != nil {
			t.Fatalf("%s: %v", sub, err)
		}
		got.Name = want.Name
		if diff := graphtest.SameDataset(got, want); diff != "" {
			t.Errorf("%s: dataset differs in %s", sub, diff)
		}
	}
}

// TestBothDirections checks the edges convert --to npy writes against a
// hand-made list: every edge and its reverse once, duplicates merged,
// self loops kept once, rows sorted.
func TestBothDirections(t *testing.T) {
	// 0->1, 1->0 (a pair stored both ways), 2->2 twice, 3->1.
	g := graph.FromEdges(4, [][2]int64{{0, 1}, {1, 0}, {2, 2}, {2, 2}, {3, 1}})
	both, loops := BothDirections(g)
	want := [][]int64{{1}, {0, 3}, {2}, {1}} // row r: the sources of r
	for r, cols := range want {
		var got []int64
		for e := both.Indptr[r]; e < both.Indptr[r+1]; e++ {
			got = append(got, both.Col(e))
		}
		if !slices.Equal(got, cols) {
			t.Errorf("row %d: %v, want %v", r, got, cols)
		}
	}
	if loops != 1 || both.NNZ() != 5 {
		t.Errorf("%d entries, %d self loops; want 5, 1", both.NNZ(), loops)
	}
	// Without self loops it is graph.Symmetrize.
	g = graph.FromEdges(4, [][2]int64{{0, 1}, {3, 1}, {2, 0}})
	if b, _ := BothDirections(g); !graphtest.SameCSR(b, graph.Symmetrize(g)) {
		t.Error("without self loops: differs from graph.Symmetrize")
	}
}

// TestPickledArrayFortranOrder decodes a pickled ndarray's data in
// Fortran order, as numpy pickles np.asfortranarray(a): it is read
// row-major, like the C-order data of the same array.
func TestPickledArrayFortranOrder(t *testing.T) {
	shape := []int{2, 3}
	c := leBytes([]int32{0, 1, 2, 3, 4, 5})
	d := &pickledArrays{budget: 1 << 20}
	want, err := d.Array("<i4", shape, false, c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.Array("<i4", shape, true, fortranBytes(c, []int{2, 3}, 4))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.([]int32), []int32{0, 1, 2, 3, 4, 5}) || !reflect.DeepEqual(got, want) {
		t.Errorf("Fortran-order pickle read as %v, want %v", got, want)
	}
}
