package numpy

import (
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/graph/graphtest"
)

// npyValues returns count values of a dtype: a []float32, []float64,
// []int32, []int64 or []bool.
func npyValues(descr string, count int) any {
	switch descr {
	case "<f4":
		v := make([]float32, count)
		for i := range v {
			v[i] = float32(i)*0.25 - 3
		}
		if count > 1 {
			v[1] = float32(math.Inf(-1))
		}
		return v
	case "<f8":
		v := make([]float64, count)
		for i := range v {
			v[i] = float64(i)*1e-300 - 1e300
		}
		return v
	case "<i4":
		v := make([]int32, count)
		for i := range v {
			v[i] = int32(i*7919) - math.MaxInt32/2
		}
		if count > 0 {
			v[0] = math.MinInt32
		}
		return v
	case "<i8":
		v := make([]int64, count)
		for i := range v {
			v[i] = int64(i)<<40 - 5
		}
		if count > 0 {
			v[count-1] = math.MaxInt64
		}
		return v
	case "|b1":
		v := make([]bool, count)
		for i := range v {
			v[i] = i%3 == 1
		}
		return v
	}
	panic(descr)
}

func TestReadNPYRoundTrip(t *testing.T) {
	shapes := [][]int{{}, {0}, {1}, {5}, {2, 3}, {3, 0}, {2, 3, 4}, {1, 1, 1, 7}}
	for _, descr := range []string{"<f4", "<f8", "<i4", "<i8", "|b1"} {
		for _, shape := range shapes {
			for _, major := range []byte{1, 2, 3} {
				name := fmt.Sprintf("%s_%v_v%d", descr[1:], shape, major)
				t.Run(name, func(t *testing.T) {
					count := 1
					for _, d := range shape {
						count *= d
					}
					want := npyValues(descr, count)
					p := graphtest.WriteFile(t, t.TempDir(), "a.npy", npyFile(major, descr, false, shape, leBytes(want)))
					gotShape, got, err := ReadNPY(p)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(gotShape, shape) {
						t.Errorf("shape %v, want %v", gotShape, shape)
					}
					if !reflect.DeepEqual(got, want) {
						t.Errorf("data %v, want %v", got, want)
					}
				})
			}
		}
	}
}

func TestReadNPYHeaderVariants(t *testing.T) {
	data := leBytes([]int32{1, 2, 3, 4, 5, 6})
	cases := []struct {
		name, header string
		shape        []int
	}{
		{"numpy style", "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }", []int{2, 3}},
		{"field order and quotes", `{"shape": (6,), "descr": "<i4", "fortran_order": False}`, []int{6}},
		{"no spaces", "{'descr':'<i4','fortran_order':False,'shape':(3,2)}", []int{3, 2}},
		{"python 2 long", "{'descr': '<i4', 'fortran_order': False, 'shape': (6L,), }", []int{6}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := graphtest.WriteFile(t, t.TempDir(), "a.npy", npyRaw(1, c.header, data))
			shape, got, err := ReadNPY(p)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(shape, c.shape) || !slices.Equal(got.([]int32), []int32{1, 2, 3, 4, 5, 6}) {
				t.Errorf("got %v %v", shape, got)
			}
		})
	}
}

func TestReadNPYMalformed(t *testing.T) {
	f4 := leBytes([]float32{1, 2, 3})
	good := npyFile(1, "<f4", false, []int{3}, f4)
	with := func(i int, b byte) []byte {
		c := slices.Clone(good)
		c[i] = b
		return c
	}
	hdr := func(h string) []byte { return npyRaw(1, h, f4) }
	cases := []struct {
		name string
		data []byte
		kind error
		want []string
	}{
		{"empty", nil, graph.ErrFormat, []string{"empty file"}},
		{"short preamble", []byte("\x93NUM"), graph.ErrTruncated, []string{"preamble"}},
		{"bad magic", with(1, 'X'), graph.ErrFormat, []string{"not a .npy file", "bad magic"}},
		{"csv not npy", []byte("1,2,3\n4,5,6\n"), graph.ErrFormat, []string{"bad magic"}},
		{"version 4", with(6, 4), graph.ErrVersion, []string{"'version': 4.0 is not supported"}},
		{"version 0", with(6, 0), graph.ErrVersion, []string{"'version'"}},
		{"header length past the end", good[:20], graph.ErrTruncated, []string{"'header_len'"}},
		{"no header length", good[:9], graph.ErrTruncated, []string{"header length"}},
		{"unsupported dtype", npyFile(1, "<f2", false, []int{6}, f4), graph.ErrFormat, []string{`'descr': "<f2" is not supported`, "float32/64, int8/16/32/64"}},
		{"complex dtype", npyFile(1, "<c8", false, []int{3}, leBytes([]float32{1, 2, 3, 4, 5, 6})), graph.ErrFormat, []string{`"<c8" is not supported`}},
		{"big endian", npyFile(1, ">f4", false, []int{3}, f4), graph.ErrFormat, []string{`">f4"`, "big-endian"}},
		{"fortran order truncated", npyFile(1, "<f4", true, []int{2, 2}, f4), graph.ErrTruncated, []string{"data: 12 bytes", "needs 16"}},
		{"truncated data", good[:len(good)-1], graph.ErrTruncated, []string{"data: 11 bytes", "needs 12", "truncated"}},
		{"no data", good[:len(good)-12], graph.ErrTruncated, []string{"data: 0 bytes"}},
		{"extra data", append(slices.Clone(good), 0, 0, 0, 0), graph.ErrFormat, []string{"data: 16 bytes", "extra bytes"}},
		{"missing shape", hdr("{'descr': '<f4', 'fortran_order': False}"), graph.ErrFormat, []string{"'shape': missing"}},
		{"missing descr", hdr("{'fortran_order': False, 'shape': (3,)}"), graph.ErrFormat, []string{"'descr': missing"}},
		{"bad shape", hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (3, x)}"), graph.ErrFormat, []string{"'shape'", `"" is not an integer`}},
		{"shape not a tuple", hdr("{'descr': '<f4', 'fortran_order': False, 'shape': [3]}"), graph.ErrFormat, []string{"'shape'", "'('"}},
		{"negative dim", hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (-3,)}"), graph.ErrFormat, []string{"negative dimension -3"}},
		{"huge shape", hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}"), graph.ErrRange, []string{"too many elements"}},
		{"bad fortran value", hdr("{'descr': '<f4', 'fortran_order': 0, 'shape': (3,)}"), graph.ErrFormat, []string{"'fortran_order': want True or False"}},
		{"unknown field", hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}"), graph.ErrFormat, []string{"'x': unknown field"}},
		{"not a dict", hdr("descr=<f4"), graph.ErrFormat, []string{"not a Python dict"}},
		{"unterminated string", hdr("{'descr: <f4}"), graph.ErrFormat, []string{"unterminated string"}},
		{"missing colon", hdr("{'descr' '<f4'}"), graph.ErrFormat, []string{"'descr': missing ':'"}},
		{"bad bool byte", npyFile(1, "|b1", false, []int{3}, []byte{0, 2, 1}), graph.ErrFormat, []string{"bool element 1 has byte value 2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := graphtest.WriteFile(t, t.TempDir(), "bad.npy", c.data)
			shape, data, err := ReadNPY(p)
			if shape != nil || data != nil {
				t.Error("data returned with an error")
			}
			graphtest.WantErr(t, err, c.kind, append([]string{p + ": "}, c.want...)...)
		})
	}
	_, _, err := ReadNPY(filepath.Join(t.TempDir(), "none.npy"))
	graphtest.WantErr(t, err, graph.ErrMissing, "none.npy", "does not exist")
}

// npyDir writes a .npy dataset directory: name -> file content.
func npyDir(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "npyds")
	for name, data := range files {
		if data != nil {
			graphtest.WriteFile(t, dir, name, data)
		}
	}
	return dir
}

// tinyNPY is a valid 6-node .npy dataset: edges 0->1, 1->2, 2->0, 3->3,
// 5->4, 1->2; node 4 unlabeled.
func tinyNPY() map[string][]byte {
	return map[string][]byte{
		"edge_index.npy": npyOf([]int64{0, 1, 2, 3, 5, 1, 1, 2, 0, 3, 4, 2}, 2, 6),
		"labels.npy":     npyOf([]int64{0, 1, 2, 1, -1, 0}, 6),
		"features.npy":   npyOf([]float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 6, 2),
		"train_idx.npy":  npyOf([]int64{3, 0}, 2),
		"valid_idx.npy":  npyOf([]bool{false, true, false, false, false, false}, 6),
		"test_idx.npy":   npyOf([]int32{5, 2}, 2),
	}
}

var tinyNPYEdges = [][2]int64{{0, 1}, {1, 2}, {2, 0}, {3, 3}, {5, 4}, {1, 2}}

func TestLoadNPYDir(t *testing.T) {
	alt := tinyNPY()
	// (E, 2) edges in int32, (N, 1) int32 labels, float32 features, no splits.
	alt["edge_index.npy"] = npyOf([]int32{0, 1, 1, 2, 2, 0, 3, 3, 5, 4, 1, 2}, 6, 2)
	alt["labels.npy"] = npyOf([]int32{0, 1, 2, 1, -1, 0}, 6, 1)
	alt["features.npy"] = npyOf([]float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 6, 2)
	alt["train_idx.npy"], alt["valid_idx.npy"], alt["test_idx.npy"] = nil, nil, nil
	noFeat := tinyNPY()
	noFeat["features.npy"] = nil
	intFeat := tinyNPY()
	intFeat["features.npy"] = npyOf([]int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 6, 2)
	cases := []struct {
		name   string
		files  map[string][]byte
		feat   bool
		splits bool
	}{
		{"(2,E) int64", tinyNPY(), true, true},
		{"(E,2) int32", alt, true, false},
		{"no features", noFeat, false, true},
		{"int features", intFeat, true, true},
	}
	for _, c := range cases {
		for _, viaOpen := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/open=%v", c.name, viaOpen), func(t *testing.T) {
				dir := npyDir(t, c.files)
				var d *graph.Dataset
				var err error
				if viaOpen {
					d, err = graph.Open(dir)
				} else {
					d, err = LoadNPYDir(dir)
				}
				if err != nil {
					t.Fatal(err)
				}
				if err := d.Validate(); err != nil {
					t.Fatal(err)
				}
				if d.Name != "npyds" || d.Source != dir || d.NumNodes != 6 || d.NumClasses != 3 {
					t.Errorf("name %q source %q n %d classes %d", d.Name, d.Source, d.NumNodes, d.NumClasses)
				}
				if !graphtest.SameCSR(d.Graph, graph.FromEdges(6, tinyNPYEdges)) {
					t.Errorf("graph rows %v", graphtest.RowsOf(d.Graph))
				}
				if !slices.Equal(d.Labels, []int32{0, 1, 2, 1, -1, 0}) {
					t.Errorf("labels %v", d.Labels)
				}
				if c.feat {
					if d.FeatDim != 2 || !slices.Equal(d.Features, []float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}) {
						t.Errorf("features %d %v", d.FeatDim, d.Features)
					}
				} else if d.FeatDim != 0 || d.Features != nil {
					t.Errorf("features %d %v, want none", d.FeatDim, d.Features)
				}
				if c.splits {
					if !slices.Equal(d.Train, []int32{0, 3}) || !slices.Equal(d.Valid, []int32{1}) || !slices.Equal(d.Test, []int32{2, 5}) {
						t.Errorf("splits %v %v %v", d.Train, d.Valid, d.Test)
					}
				} else if len(d.Train)+len(d.Valid)+len(d.Test) != 0 {
					t.Errorf("splits %v %v %v, want none", d.Train, d.Valid, d.Test)
				}
			})
		}
	}
}

func TestLoadNPYDirMalformed(t *testing.T) {
	cases := []struct {
		name   string
		change map[string][]byte
		file   string // the file the error names
		kind   error
		want   []string
	}{
		{"missing labels", map[string][]byte{"labels.npy": nil}, "labels.npy", graph.ErrMissing, []string{"does not exist"}},
		{"labels 2-D", map[string][]byte{"labels.npy": npyOf([]int64{0, 1, 2, 1, 0, 0}, 3, 2)}, "labels.npy", graph.ErrRange, []string{"element [1, 0]: multi-label target 2 is not 0 or 1", "class labels are (N,) or (N, 1)"}},
		{"labels fractional", map[string][]byte{"labels.npy": npyOf([]float32{0, 1, 2, 1.5, 0, 0}, 6)}, "labels.npy", graph.ErrFormat, []string{"element 3: label 1.5 is not an integer", "astype(np.int64)"}},
		{"labels NaN", map[string][]byte{"labels.npy": npyOf([]float64{0, 1, math.NaN(), 1, math.NaN(), 0}, 6)}, "labels.npy", graph.ErrFormat, []string{"element 2: label NaN is not an integer"}},
		{"labels bool", map[string][]byte{"labels.npy": npyOf([]bool{false, true, true, true, false, false}, 6)}, "labels.npy", graph.ErrFormat, []string{"bool data, want an integer dtype"}},
		{"label -2", map[string][]byte{"labels.npy": npyOf([]int64{0, 1, -2, 1, 0, 0}, 6)}, "labels.npy", graph.ErrRange, []string{"element 2: label -2"}},
		{"edge target out of range", map[string][]byte{"edge_index.npy": npyOf([]int64{0, 1, 1, 9}, 2, 2)}, "edge_index.npy", graph.ErrRange, []string{"edge 1: target id 9 outside [0,6)"}},
		{"edge source negative", map[string][]byte{"edge_index.npy": npyOf([]int32{0, 1, -1, 2, 2, 0}, 3, 2)}, "edge_index.npy", graph.ErrRange, []string{"edge 1: source id -1"}},
		{"edge shape", map[string][]byte{"edge_index.npy": npyOf([]int64{0, 1, 2, 3, 4, 5}, 3, 2, 1)}, "edge_index.npy", graph.ErrFormat, []string{"want (2, E) or (E, 2)"}},
		{"edge 1-D", map[string][]byte{"edge_index.npy": npyOf([]int64{0, 1}, 2)}, "edge_index.npy", graph.ErrFormat, []string{"want (2, E) or (E, 2)"}},
		{"edge float", map[string][]byte{"edge_index.npy": npyOf([]float64{0, 1, 1, 2}, 2, 2)}, "edge_index.npy", graph.ErrFormat, []string{"want an integer dtype"}},
		{"missing edges", map[string][]byte{"edge_index.npy": nil, "raw": nil}, "edge_index.npy", graph.ErrMissing, nil},
		{"features rows", map[string][]byte{"features.npy": npyOf([]float32{0, 1, 2, 3}, 2, 2)}, "features.npy", graph.ErrCount, []string{"want (6, D)"}},
		{"features bool", map[string][]byte{"features.npy": npyOf(make([]bool, 12), 6, 2)}, "features.npy", graph.ErrFormat, []string{"bool data, want a numeric dtype"}},
		{"features truncated", map[string][]byte{"features.npy": npyOf([]float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 6, 2)[:100]}, "features.npy", graph.ErrTruncated, nil},
		{"split overlap", map[string][]byte{"test_idx.npy": npyOf([]int64{5, 0}, 2)}, "test_idx.npy", graph.ErrSplit, []string{"node 0 is also in the train split"}},
		{"split duplicate", map[string][]byte{"train_idx.npy": npyOf([]int64{3, 0, 3}, 3)}, "train_idx.npy", graph.ErrSplit, []string{"element 2: node 3 is listed twice"}},
		{"split unlabeled", map[string][]byte{"test_idx.npy": npyOf([]int64{4}, 1)}, "test_idx.npy", graph.ErrSplit, []string{"node 4 has no label"}},
		{"split out of range", map[string][]byte{"valid_idx.npy": npyOf([]int64{1, 6}, 2)}, "valid_idx.npy", graph.ErrRange, []string{"element 1: node id 6 outside [0,6)"}},
		{"split mask length", map[string][]byte{"valid_idx.npy": npyOf([]bool{true, false}, 2)}, "valid_idx.npy", graph.ErrCount, []string{"bool mask of length 2, want 6"}},
		{"split 2-D", map[string][]byte{"valid_idx.npy": npyOf([]int64{1, 2}, 1, 2)}, "valid_idx.npy", graph.ErrFormat, []string{"want (K,) node ids"}},
		{"split float", map[string][]byte{"valid_idx.npy": npyOf([]float32{1}, 1)}, "valid_idx.npy", graph.ErrFormat, []string{"want an integer dtype"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := tinyNPY()
			for k, v := range c.change {
				files[k] = v
			}
			dir := npyDir(t, files)
			d, err := LoadNPYDir(dir)
			if d != nil {
				t.Error("dataset returned with an error")
			}
			graphtest.WantErr(t, err, c.kind, append([]string{filepath.Join(dir, c.file)}, c.want...)...)
		})
	}
	_, err := LoadNPYDir(filepath.Join(t.TempDir(), "none"))
	graphtest.WantErr(t, err, graph.ErrMissing, "none", "not a directory", "edge_index.npy")
}

func TestOpenNPYDir(t *testing.T) {
	dir := npyDir(t, tinyNPY())
	_, err := graph.Open(dir + "@public")
	graphtest.WantErr(t, err, graph.ErrFormat, "no named splits", `drop "@public"`)

	files := tinyNPY()
	files["edge_index.npy"] = npyOf([]int64{0, 1, 1, 9}, 2, 2)
	dir = npyDir(t, files)
	_, err = graph.Open(dir)
	graphtest.WantErr(t, err, graph.ErrRange, filepath.Join(dir, "edge_index.npy"), "target id 9")

	// A single .npy file is not a dataset.
	_, err = graph.Open(filepath.Join(dir, "labels.npy"))
	graphtest.WantErr(t, err, graph.ErrFormat, "labels.npy", "not a dataset", "edge_index.npy")
	if !strings.Contains(fmt.Sprint(err), "directory") {
		t.Errorf("error %v does not point to the directory", err)
	}
}
