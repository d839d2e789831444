package graph

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// sharedData returns the shared benchmark data directory (STRATA_SHARED_DATA,
// or ../shared/data beside the repository root), skipping the test when it
// is absent.
func sharedData(tb testing.TB) string {
	tb.Helper()
	if d := os.Getenv("STRATA_SHARED_DATA"); d != "" {
		if isDir(d) {
			return d
		}
		tb.Skipf("STRATA_SHARED_DATA=%s is not a directory", d)
	}
	wd, err := os.Getwd()
	if err != nil {
		tb.Skip(err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if fileExists(filepath.Join(dir, "go.mod")) {
			d := filepath.Join(dir, "..", "shared", "data")
			if !isDir(d) {
				tb.Skipf("shared data not found at %s (set STRATA_SHARED_DATA)", d)
			}
			return d
		}
		if filepath.Dir(dir) == dir {
			tb.Skip("repository root not found")
		}
	}
}

// sharedDataset returns the path of one shared dataset, skipping if absent.
func sharedDataset(tb testing.TB, name string) string {
	tb.Helper()
	p := filepath.Join(sharedData(tb), name)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("%s not present", p)
	}
	return p
}

// gz compresses s.
func gz(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

// writeFile writes data to dir/rel, creating directories.
func writeFile(t *testing.T, dir, rel string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// tinyOGB is a valid 5-node dataset in the OGB raw layout: relative path
// (without .gz) -> content.
func tinyOGB() map[string]string {
	return map[string]string{
		"raw/edge.csv":          "0,1\n1,2\n2,3\n3,4\n",
		"raw/num-edge-list.csv": "4\n",
		"raw/num-node-list.csv": "5\n",
		"raw/node-label.csv":    "0\n1\n0\n1\n-1\n",
		"raw/node-feat.csv":     "1,0\n0,1\n0.5,2\n0,0\n1e-3,-3\n",
		"split/s/train.csv":     "1\n0\n",
		"split/s/valid.csv":     "2\n",
		"split/s/test.csv":      "3\n",
	}
}

// writeOGB writes files (gzip-compressed, as .csv.gz) into a new temp dir.
// A value of "\x00missing" leaves the file out; raw bytes can be given with
// the "\x00raw:" prefix.
func writeOGB(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ds")
	for rel, content := range files {
		if content == "\x00missing" {
			continue
		}
		if raw, ok := strings.CutPrefix(content, "\x00raw:"); ok {
			writeFile(t, dir, rel+".gz", []byte(raw))
			continue
		}
		writeFile(t, dir, rel+".gz", gz(content))
	}
	return dir
}

// wantErr checks that err wraps kind and mentions every fragment.
func wantErr(t *testing.T, err error, kind error, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v", kind)
	}
	if kind != nil && !errors.Is(err, kind) {
		t.Errorf("error %q does not wrap %v", err, kind)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not mention %q", err, f)
		}
	}
}

// csrEqual reports whether two CSRs hold the same structure and values.
func csrEqual(a, b *CSR) bool {
	if a.NumRows != b.NumRows || a.NumCols != b.NumCols || a.NNZ() != b.NNZ() {
		return false
	}
	for i := range a.Indptr {
		if a.Indptr[i] != b.Indptr[i] {
			return false
		}
	}
	for e := int64(0); e < a.NNZ(); e++ {
		if a.Col(e) != b.Col(e) {
			return false
		}
	}
	if (a.Values == nil) != (b.Values == nil) {
		return false
	}
	for e := range a.Values {
		if a.Values[e] != b.Values[e] {
			return false
		}
	}
	return true
}

// rowsOf returns the rows of g as slices of int64 column ids.
func rowsOf(g *CSR) [][]int64 {
	out := make([][]int64, g.NumRows)
	for r := range out {
		out[r] = []int64{}
		for e := g.Indptr[r]; e < g.Indptr[r+1]; e++ {
			out[r] = append(out[r], g.Col(e))
		}
	}
	return out
}

// randEdges returns m random (src, dst) pairs over ids [0, n-isolated): the
// last isolated ids are never used. About a tenth of the pairs are self
// loops and about a tenth repeat an earlier pair.
func randEdges(seed uint64, n, isolated, m int) [][2]int64 {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	k := n - isolated
	if k <= 0 {
		return nil
	}
	edges := make([][2]int64, 0, m)
	for len(edges) < m {
		switch x := r.IntN(10); {
		case x == 0:
			v := int64(r.IntN(k))
			edges = append(edges, [2]int64{v, v})
		case x == 1 && len(edges) > 0:
			edges = append(edges, edges[r.IntN(len(edges))])
		default:
			edges = append(edges, [2]int64{int64(r.IntN(k)), int64(r.IntN(k))})
		}
	}
	return edges
}

// randValues returns n random edge values.
func randValues(seed uint64, n int64) []float32 {
	r := rand.New(rand.NewPCG(seed, 0x7a1))
	v := make([]float32, n)
	for i := range v {
		v[i] = r.Float32()
	}
	return v
}

// widen returns a copy of g that stores its column ids in 64 bits.
func widen(g *CSR) *CSR {
	w := &CSR{NumRows: g.NumRows, NumCols: g.NumCols, Indptr: slices.Clone(g.Indptr),
		Idx64: make([]int64, g.NNZ()), Values: slices.Clone(g.Values)}
	for e := range w.Idx64 {
		w.Idx64[e] = g.Col(int64(e))
	}
	return w
}

// cloneCSR returns a deep copy of g.
func cloneCSR(g *CSR) *CSR {
	return &CSR{NumRows: g.NumRows, NumCols: g.NumCols, Indptr: slices.Clone(g.Indptr),
		Idx32: slices.Clone(g.Idx32), Idx64: slices.Clone(g.Idx64), Values: slices.Clone(g.Values)}
}

// dense returns the multiplicity matrix of g: m[r][c] counts the entries
// (r, c).
func dense(g *CSR) [][]int {
	m := make([][]int, g.NumRows)
	for r := range m {
		m[r] = make([]int, g.NumCols)
		for e := g.Indptr[r]; e < g.Indptr[r+1]; e++ {
			m[r][g.Col(e)]++
		}
	}
	return m
}

// npyFile encodes a .npy file of format version major with the given
// header fields and raw data bytes.
func npyFile(major byte, descr string, fortran bool, shape []int, data []byte) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.Itoa(d)
	}
	tuple := "(" + strings.Join(dims, ", ") + ")"
	if len(shape) == 1 {
		tuple = "(" + dims[0] + ",)"
	}
	fo := "False"
	if fortran {
		fo = "True"
	}
	return npyRaw(major, fmt.Sprintf("{'descr': '%s', 'fortran_order': %s, 'shape': %s, }", descr, fo, tuple), data)
}

// npyRaw encodes a .npy file with a literal header dictionary, padded like
// numpy does to a multiple of 64 bytes.
func npyRaw(major byte, header string, data []byte) []byte {
	pre := 10
	if major >= 2 {
		pre = 12
	}
	hlen := len(header) + 1
	hlen += (64 - (pre+hlen)%64) % 64
	header += strings.Repeat(" ", hlen-len(header)-1) + "\n"
	var b bytes.Buffer
	b.WriteString(npyMagic)
	b.WriteByte(major)
	b.WriteByte(0)
	if major >= 2 {
		binary.Write(&b, binary.LittleEndian, uint32(hlen))
	} else {
		binary.Write(&b, binary.LittleEndian, uint16(hlen))
	}
	b.WriteString(header)
	b.Write(data)
	return b.Bytes()
}

// leBytes returns the little-endian bytes of a slice of fixed-size values.
func leBytes(v any) []byte {
	var b bytes.Buffer
	if err := binary.Write(&b, binary.LittleEndian, v); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// npyOf encodes a 1-version .npy file holding v (a []float32, []float64,
// []int32, []int64 or []bool) with the given shape.
func npyOf(v any, shape ...int) []byte {
	descr := map[string]string{"[]float32": "<f4", "[]float64": "<f8", "[]int32": "<i4", "[]int64": "<i8", "[]bool": "|b1"}[fmt.Sprintf("%T", v)]
	return npyFile(1, descr, false, shape, leBytes(v))
}
