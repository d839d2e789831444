package numpy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"strata/core/graph"
	"strata/core/graph/formats"
	"strata/core/registry"
)

// npyMagic starts every .npy file.
const npyMagic = "\x93NUMPY"

// maxNPYHeader bounds the header length (numpy writes well under 64 KiB).
const maxNPYHeader = 1 << 20

// ReadNPY reads a NumPy .npy file (format version 1, 2 or 3) holding a
// little-endian array of a dtype of npyDtypes (float32/64, int8..int64,
// uint8..uint64, bool). data is the matching Go slice ([]float32, ...,
// []bool) in row-major order: a Fortran-order array is transposed as it
// is read. Errors name the file and the header field at fault.
func ReadNPY(path string) (shape []int, data any, err error) {
	return readNPYFile(path, &graph.Spend{})
}

// readNPYFile is ReadNPY charging the array to spend.
func readNPYFile(path string, spend *graph.Spend) (shape []int, data any, err error) {
	f, size, err := graph.OpenFile(path, "")
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return readNPY(f, size, path, spend)
}

// npyHeader is the decoded header dictionary.
type npyHeader struct {
	descr   string
	fortran bool
	shape   []int
}

// readNPYHeader reads the preamble and the header of a .npy array of size
// bytes from r (a file, or a .npz entry of that declared size): the
// header's length is checked against maxNPYHeader and size before it is
// allocated. It returns the header and the bytes that follow it. Errors
// name path and, before the header field, what ("array \"x\": " in a
// .npz, or "").
func readNPYHeader(r io.Reader, size int64, path, what string) (*npyHeader, int64, error) {
	fail := func(kind error, format string, args ...any) error {
		return graph.FileErrorf(kind, path, 0, 0, "%s%s", what, fmt.Sprintf(format, args...))
	}
	holder, noun := "file", "file" // what holds the array, what it is
	if what != "" {
		holder, noun = "entry", "array"
	}
	var pre [10]byte
	if k, err := io.ReadFull(r, pre[:8]); err != nil {
		if k == 0 {
			return nil, 0, fail(graph.ErrFormat, "empty %s; expected a .npy array (save it with numpy.save)", holder)
		}
		return nil, 0, fail(graph.ErrTruncated, "%s ends inside the .npy preamble (%d bytes)", holder, k)
	}
	if string(pre[:6]) != npyMagic {
		return nil, 0, fail(graph.ErrFormat, "not a .npy %s: bad magic %q (want \"\\x93NUMPY\"); save the array with numpy.save", noun, pre[:6])
	}
	major, minor := pre[6], pre[7]
	var hlen int64
	pos := int64(8)
	switch major {
	case 1:
		if _, err := io.ReadFull(r, pre[8:10]); err != nil {
			return nil, 0, fail(graph.ErrTruncated, "%s ends inside the header length field", holder)
		}
		hlen = int64(binary.LittleEndian.Uint16(pre[8:10]))
		pos += 2
	case 2, 3:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, 0, fail(graph.ErrTruncated, "%s ends inside the header length field", holder)
		}
		hlen = int64(binary.LittleEndian.Uint32(b[:]))
		pos += 4
	default:
		return nil, 0, fail(graph.ErrVersion, "header field 'version': %d.%d is not supported (want 1.0, 2.0 or 3.0)", major, minor)
	}
	if hlen > maxNPYHeader || pos+hlen > size {
		return nil, 0, fail(graph.ErrTruncated, "header field 'header_len': %d bytes, but the %s has only %d after the preamble (and a header is at most %d)", hlen, holder, max(size-pos, 0), maxNPYHeader)
	}
	hb := make([]byte, hlen)
	if _, err := io.ReadFull(r, hb); err != nil {
		return nil, 0, fail(graph.ErrTruncated, "%s ends inside the %d-byte header", holder, hlen)
	}
	h, err := parseNPYHeader(string(hb))
	if err != nil {
		return nil, 0, fail(graph.ErrFormat, "%v", err)
	}
	return h, size - pos - hlen, nil
}

// readNPY reads a .npy array of size bytes from r; path names it in
// errors. The array is charged to spend before it is allocated.
func readNPY(r io.Reader, size int64, path string, spend *graph.Spend) ([]int, any, error) {
	h, left, err := readNPYHeader(r, size, path, "")
	if err != nil {
		return nil, nil, err
	}
	t, ok := npyDtypes[h.descr]
	if !ok {
		hint := ""
		if strings.HasPrefix(h.descr, ">") {
			hint = " (big-endian data: convert with arr.astype(arr.dtype.newbyteorder('<')))"
		}
		return nil, nil, graph.FileErrorf(graph.ErrFormat, path, 0, 0, "header field 'descr': %q is not supported%s; want %s", h.descr, hint, npyDtypeNames)
	}
	count, err := npyCount(path, "", h.shape)
	if err != nil {
		return nil, nil, err
	}
	if want := count * t.size; left != want {
		if left < want {
			return nil, nil, graph.FileErrorf(graph.ErrTruncated, path, 0, 0, "data: %d bytes, but header field 'shape' %v of %s needs %d; the file is truncated",
				left, h.shape, h.descr, want)
		}
		return nil, nil, graph.FileErrorf(graph.ErrFormat, path, 0, 0, "data: %d bytes, but header field 'shape' %v of %s needs %d; extra bytes at the end",
			left, h.shape, h.descr, want)
	}
	if err := spend.Charge(path, fmt.Sprintf("an array of shape %v of %s", h.shape, h.descr), count*t.size); err != nil {
		return nil, nil, err
	}
	data, raw := t.alloc(count)
	if err := readData(r, raw, h.shape, t.size, h.fortran); err != nil {
		return nil, nil, graph.FileErrorf(graph.ErrTruncated, path, 0, 0, "data: file ends early (%v)", err)
	}
	if i, b := finishNPY(h.descr, raw, t.size); i >= 0 {
		return nil, nil, graph.FileErrorf(graph.ErrFormat, path, 0, 0, "data: bool element %d has byte value %d (want 0 or 1)", i, b)
	}
	return h.shape, data, nil
}

// swapBytes reverses the byte order of every elem-byte element of b.
func swapBytes(b []byte, elem int) {
	for i := 0; i+elem <= len(b); i += elem {
		slices.Reverse(b[i : i+elem])
	}
}

// parseNPYHeader parses the Python dict literal of a .npy header, such as
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }.
func parseNPYHeader(s string) (*npyHeader, error) {
	p := &pyParser{s: strings.TrimRight(s, " \n\x00")}
	h := &npyHeader{}
	seen := map[string]bool{}
	p.skip()
	if !p.eat('{') {
		return nil, fmt.Errorf("header: not a Python dict (want \"{'descr': ..., 'fortran_order': ..., 'shape': (...)}\")")
	}
	for {
		p.skip()
		if p.eat('}') {
			break
		}
		key, err := p.str()
		if err != nil {
			return nil, fmt.Errorf("header: bad key at byte %d: %v", p.i, err)
		}
		p.skip()
		if !p.eat(':') {
			return nil, fmt.Errorf("header field '%s': missing ':'", key)
		}
		p.skip()
		switch key {
		case "descr":
			if h.descr, err = p.str(); err != nil {
				return nil, fmt.Errorf("header field 'descr': %v (want a dtype string such as '<f4')", err)
			}
		case "fortran_order":
			switch {
			case strings.HasPrefix(p.s[p.i:], "True"):
				h.fortran, p.i = true, p.i+4
			case strings.HasPrefix(p.s[p.i:], "False"):
				h.fortran, p.i = false, p.i+5
			default:
				return nil, fmt.Errorf("header field 'fortran_order': want True or False")
			}
		case "shape":
			if h.shape, err = p.tuple(); err != nil {
				return nil, fmt.Errorf("header field 'shape': %v (want a tuple of integers such as (3, 4))", err)
			}
		default:
			return nil, fmt.Errorf("header field '%s': unknown field (want 'descr', 'fortran_order', 'shape')", key)
		}
		seen[key] = true
		p.skip()
		if p.eat(',') {
			continue
		}
		p.skip()
		if !p.eat('}') {
			return nil, fmt.Errorf("header: expected ',' or '}' after field '%s'", key)
		}
		break
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return nil, fmt.Errorf("header field '%s': missing", k)
		}
	}
	return h, nil
}

// pyParser scans a small subset of Python literal syntax.
type pyParser struct {
	s string
	i int
}

func (p *pyParser) skip() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n') {
		p.i++
	}
}

func (p *pyParser) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// str parses a quoted string without escapes.
func (p *pyParser) str() (string, error) {
	if p.i >= len(p.s) || p.s[p.i] != '\'' && p.s[p.i] != '"' {
		return "", errors.New("expected a quoted string")
	}
	q := p.s[p.i]
	end := strings.IndexByte(p.s[p.i+1:], q)
	if end < 0 {
		return "", errors.New("unterminated string")
	}
	v := p.s[p.i+1 : p.i+1+end]
	p.i += end + 2
	return v, nil
}

// tuple parses "()", "(n,)" or "(a, b, ...)".
func (p *pyParser) tuple() ([]int, error) {
	if !p.eat('(') {
		return nil, errors.New("expected '('")
	}
	out := []int{}
	for {
		p.skip()
		if p.eat(')') {
			return out, nil
		}
		j := p.i
		for j < len(p.s) && (p.s[j] >= '0' && p.s[j] <= '9' || p.s[j] == '-') {
			j++
		}
		v, err := strconv.Atoi(p.s[p.i:j])
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", p.s[p.i:j])
		}
		out = append(out, v)
		p.i = j
		p.eat('L') // Python 2 long suffix
		p.skip()
		if p.eat(')') {
			return out, nil
		}
		if !p.eat(',') {
			return nil, errors.New("expected ',' or ')'")
		}
	}
}

// LoadNPYDir loads a dataset saved as .npy arrays in dir:
// edge_index.npy (int, shape (2, E) or (E, 2); row 0 / column 0 is the
// source; or a "src,dst" edge list of formats.NPYDirEdgeLists such as
// edges.csv), labels.npy (int, or float holding whole numbers, shape (N,)
// or (N, 1); -1 = unlabeled; or float targets: readNPYY),
// optional features.npy (shape (N, D), any supported numeric dtype,
// converted to float32), and optional train_idx.npy, valid_idx.npy,
// test_idx.npy (int node ids, or bool or integer 0/1 masks of length N:
// readNPYSplit). Arrays may be in Fortran order. The PyG names
// that WriteNPYDir writes are read too: y.npy, x.npy, train_mask.npy,
// val_mask.npy, test_mask.npy.
func LoadNPYDir(dir string) (*graph.Dataset, error) { return loadNPYDir(dir, 0, false) }

// npyAliases pairs each array of a .npy directory with its PyG name.
var npyAliases = [][2]string{{"labels.npy", "y.npy"}, {"features.npy", "x.npy"},
	{"train_idx.npy", "train_mask.npy"}, {"valid_idx.npy", "val_mask.npy"}, {"test_idx.npy", "test_mask.npy"}}

// npyMembers returns the file of each array of dir: the file of its name
// or of its PyG name, whichever is present, of any type (a FIFO or a
// device is then refused by the read gate, not taken for absent); the
// name itself when neither is (an optional array left out). Both present
// is an error naming them. The edges ("edge_index.npy") are
// edge_index.npy or an edge list of formats.NPYDirEdgeLists, one of them.
func npyMembers(dir string) (map[string]string, error) {
	files := map[string]string{"edge_index.npy": filepath.Join(dir, "edge_index.npy")}
	var edges []string
	for _, name := range append([]string{"edge_index.npy"}, formats.NPYDirEdgeLists...) {
		if present(filepath.Join(dir, name)) {
			edges = append(edges, name)
		}
	}
	switch {
	case len(edges) > 1:
		return nil, graph.FileErrorf(graph.ErrFormat, dir, 0, 0, "holds %s, several edge lists, and which to read is ambiguous: keep one", strings.Join(edges, " and "))
	case len(edges) == 1:
		files["edge_index.npy"] = filepath.Join(dir, edges[0])
	}
	for _, name := range unreadEdgeArrays {
		if present(filepath.Join(dir, name)) {
			return nil, graph.FileErrorf(graph.ErrFormat, filepath.Join(dir, name), 0, 0, "per-edge features, which no layer reads yet: strata would train without them; remove or rename the file to train without them (one weight per edge goes in edge_weight.npy)")
		}
	}
	files["edge_weight.npy"] = filepath.Join(dir, "edge_weight.npy")
	if present(files["edge_weight.npy"]) && !strings.HasSuffix(files["edge_index.npy"], ".npy") {
		return nil, graph.FileErrorf(graph.ErrFormat, files["edge_weight.npy"], 0, 0, "edge weights pair with the columns of edge_index.npy, but the edges are in %s; save them as edge_index.npy (np.save(\"edge_index.npy\", edge_index)) or remove edge_weight.npy", filepath.Base(files["edge_index.npy"]))
	}
	for _, a := range npyAliases {
		p, q := filepath.Join(dir, a[0]), filepath.Join(dir, a[1])
		switch {
		case present(p) && present(q):
			return nil, graph.FileErrorf(graph.ErrFormat, dir, 0, 0, "holds both %s and %s, two names of one array, and which to read is ambiguous: remove or rename the one you do not mean", a[0], a[1])
		case present(q):
			files[a[0]] = q
		default:
			files[a[0]] = p
		}
	}
	return files, nil
}

// unreadEdgeArrays are the per-edge arrays a .npy directory may hold
// (PyG's names) that no layer reads yet: refused, never ignored.
var unreadEdgeArrays = []string{"edge_attr.npy"}

// present reports whether path exists, whatever it is (a link that leads
// nowhere too: reading it then says so).
func present(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// intsCost is what npyInts allocates to convert data to int64.
func intsCost(data any) int64 {
	if _, ok := data.([]int64); ok {
		return 0
	}
	return int64(reflect.ValueOf(data).Len()) * 8
}

// loadNPYDir is LoadNPYDir with a memory budget for the whole load (0:
// DefaultMaxMemory), which every array and its conversions are charged to
// before they are allocated.
func loadNPYDir(dir string, budget int64, regression bool) (*graph.Dataset, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, graph.FileErrorf(graph.ErrMissing, dir, 0, 0, "not a directory; expected a directory with edge_index.npy, labels.npy and optional features.npy, train_idx.npy, valid_idx.npy, test_idx.npy")
	}
	files, err := npyMembers(dir)
	if err != nil {
		return nil, err
	}
	file := func(name string) string { return files[name] }
	spend := &graph.Spend{Budget: budget}

	// Labels fix the node count; without them (a graph to predict), the
	// features do, and every node is unlabeled.
	lp, fp := file("labels.npy"), file("features.npy")
	var y npyY
	var featDim int
	var feats []float32
	splits := slices.ContainsFunc([]string{"train_idx.npy", "valid_idx.npy", "test_idx.npy"}, func(name string) bool { return present(file(name)) })
	switch {
	case present(lp):
		if y, err = readNPYY(lp, regression, spend); err != nil {
			return nil, err
		}
	case present(fp) && !splits: // a split needs labels
		if feats, featDim, err = readNPYFeatures(fp, -1, "", spend); err != nil {
			return nil, err
		}
		y.labels = make([]int32, len(feats)/max(featDim, 1))
		for i := range y.labels {
			y.labels[i] = -1
		}
		lp = fp
	default:
		return nil, graph.FileErrorf(graph.ErrMissing, lp, 0, 0, "file does not exist, nor y.npy (its PyG name), nor features to count the nodes: save the labels with np.save(\"y.npy\", y) (int, one per node, -1 = unlabeled), or the features as x.npy for a graph to predict")
	}
	n := y.nodes()
	readEdges := readNPYEdges
	if !strings.HasSuffix(file("edge_index.npy"), ".npy") {
		readEdges = readCSVEdges
	}
	if wp := file("edge_weight.npy"); present(wp) {
		readEdges = func(ep, lp string, n int, spend *graph.Spend) (*graph.CSR, error) {
			return readNPYWeightedEdges(ep, wp, lp, n, spend)
		}
	}
	g, err := readEdges(file("edge_index.npy"), lp, n, spend)
	if err != nil {
		return nil, err
	}
	d := &graph.Dataset{
		Name: filepath.Base(filepath.Clean(dir)), NumNodes: n, Graph: g,
		Labels: y.labels, NumClasses: y.cols, Kind: y.kind, Targets: y.targets, Source: dir,
	}

	if present(fp) && feats == nil {
		if feats, featDim, err = readNPYFeatures(fp, n, filepath.Base(lp), spend); err != nil {
			return nil, err
		}
	}
	d.Features, d.FeatDim = feats, featDim

	owner := make([]int8, n)
	for si, name := range []string{"train_idx.npy", "valid_idx.npy", "test_idx.npy"} {
		sp := file(name)
		if !present(sp) {
			continue
		}
		ids, err := readNPYSplit(sp, n, spend)
		if err != nil {
			return nil, err
		}
		for k, v := range ids {
			if o := owner[v]; o != 0 {
				if int(o) == si+1 {
					return nil, graph.FileErrorf(graph.ErrSplit, sp, 0, 0, "element %d: node %d is listed twice", k, v)
				}
				return nil, graph.FileErrorf(graph.ErrSplit, sp, 0, 0, "element %d: node %d is also in the %s split; splits must be disjoint", k, v, graph.SplitName(int(o)-1))
			}
			if !d.Labelled(v) {
				return nil, graph.FileErrorf(graph.ErrSplit, sp, 0, 0, "element %d: node %d has no label (-1, or a NaN target); unlabeled nodes cannot be in a split", k, v)
			}
			owner[v] = int8(si + 1)
		}
		slices.Sort(ids)
		switch si {
		case 0:
			d.Train = ids
		case 1:
			d.Valid = ids
		case 2:
			d.Test = ids
		}
	}
	return d, nil
}

// readNPYLabels reads the label array lp ((N,) or (N, 1); -1 unlabeled)
// from its shape and data and returns the labels and the class count.
func readNPYLabels(lp string, shape []int, data any, spend *graph.Spend) ([]int32, int, error) {
	if len(shape) != 1 && !(len(shape) == 2 && shape[1] == 1) {
		return nil, 0, graph.FileErrorf(graph.ErrFormat, lp, 0, 0, "header field 'shape': %v, want (N,) or (N, 1)", shape)
	}
	if err := spend.Charge(lp, "the labels", intsCost(data)+int64(shape[0])*4); err != nil {
		return nil, 0, err
	}
	lab, err := labelInts(data, lp)
	if err != nil {
		return nil, 0, err
	}
	n := len(lab)
	if n > math.MaxInt32 {
		return nil, 0, graph.FileErrorf(graph.ErrRange, lp, 0, 0, "header field 'shape': %d nodes is more than supported (%d)", n, math.MaxInt32)
	}
	labels := make([]int32, n)
	maxLabel := int64(-1)
	for i, v := range lab {
		if v < -1 || v >= int64(max(n, 2)) {
			return nil, 0, graph.FileErrorf(graph.ErrRange, lp, 0, 0, "element %d: label %d outside [-1,%d); labels must be class indices, -1 for unlabeled", i, v, max(n, 2))
		}
		labels[i] = int32(v)
		maxLabel = max(maxLabel, v)
	}
	return labels, int(maxLabel + 1), nil
}

// labelInts returns label data as int64: integers as they are, floats
// when every value is integral (0.0, 1.0, -1.0 ...; numpy users often
// save labels as float). A NaN or a fractional value is an error naming
// the first one.
func labelInts(data any, path string) ([]int64, error) {
	switch v := data.(type) {
	case []float32:
		return wholeFloats(v, path)
	case []float64:
		return wholeFloats(v, path)
	}
	return npyInts(data, path)
}

// wholeFloats converts float labels that are whole numbers to int64.
func wholeFloats[F float32 | float64](v []F, path string) ([]int64, error) {
	out := make([]int64, len(v))
	for i, f := range v {
		x := float64(f)
		if x != math.Trunc(x) || math.IsInf(x, 0) || math.Abs(x) > 1<<53 {
			return nil, graph.FileErrorf(graph.ErrFormat, path, 0, 0, "element %d: label %v is not an integer; float labels must hold whole class indices (0.0, 1.0, ...; -1 for unlabeled): save them with y.astype(np.int64), or train real-valued targets with train.task = \"regression\"", i, x)
		}
		out[i] = int64(x)
	}
	return out, nil
}

// readNPYEdges reads the edge array ep ((2, E) or (E, 2)) of a graph of
// the n nodes of the label file lp into a CSR.
func readNPYEdges(ep, lp string, n int, spend *graph.Spend) (*graph.CSR, error) {
	src, dst, err := readNPYEndpoints(ep, lp, n, spend)
	if err != nil {
		return nil, err
	}
	indptr, cols := graph.GroupEdges(n, dst, src)
	return graph.MakeCSR(n, n, indptr, cols), nil
}

// readNPYEndpoints reads the edge array ep ((2, E) or (E, 2)) of a graph
// of the n nodes of the label file lp: the source and target of each edge.
func readNPYEndpoints(ep, lp string, n int, spend *graph.Spend) (src, dst []int32, err error) {
	shape, data, err := readNPYFile(ep, spend)
	if err != nil {
		return nil, nil, err
	}
	var m int
	var srcAt, dstAt func(e int) int64
	var ids []int64
	switch {
	case len(shape) == 2 && shape[0] == 2:
		m = shape[1]
		srcAt = func(e int) int64 { return ids[e] }
		dstAt = func(e int) int64 { return ids[m+e] }
	case len(shape) == 2 && shape[1] == 2:
		m = shape[0]
		srcAt = func(e int) int64 { return ids[2*e] }
		dstAt = func(e int) int64 { return ids[2*e+1] }
	default:
		return nil, nil, graph.FileErrorf(graph.ErrFormat, ep, 0, 0, "header field 'shape': %v, want (2, E) or (E, 2)", shape)
	}
	// The int64 ids, the endpoints and the CSR built from them.
	if err := spend.Charge(ep, fmt.Sprintf("%d edges", m), intsCost(data)+int64(m)*12+int64(n+1)*8); err != nil {
		return nil, nil, err
	}
	if ids, err = npyInts(data, ep); err != nil {
		return nil, nil, err
	}
	src, dst = make([]int32, m), make([]int32, m)
	for e := 0; e < m; e++ {
		s, d := srcAt(e), dstAt(e)
		for k, v := range [2]int64{s, d} {
			if v < 0 || v >= int64(n) {
				return nil, nil, graph.FileErrorf(graph.ErrRange, ep, 0, 0, "edge %d: %s id %d outside [0,%d) (%s has %d nodes)",
					e, [2]string{"source", "target"}[k], v, n, filepath.Base(lp), n)
			}
		}
		src[e], dst[e] = int32(s), int32(d)
	}
	return src, dst, nil
}

// readCSVEdges reads the comma-separated edge list ep ("src,dst" lines,
// formats.LoadSNAP) of a graph of the n nodes of the label file lp, with
// what is left of spend's budget, and charges its CSR to spend.
func readCSVEdges(ep, lp string, n int, spend *graph.Spend) (*graph.CSR, error) {
	d, err := formats.LoadSNAPWithin(ep, spend.Left())
	if err != nil {
		return nil, err
	}
	g := d.Graph
	if err := spend.Charge(ep, fmt.Sprintf("%d edges", g.NNZ()), int64(g.NumRows+1)*8+g.NNZ()*4); err != nil {
		return nil, err
	}
	top := int64(-1) // the largest node id of an edge
	for r := range g.NumRows {
		if g.Indptr[r+1] > g.Indptr[r] {
			top = max(top, int64(r))
		}
	}
	for e := range g.NNZ() {
		top = max(top, g.Col(e))
	}
	if top >= int64(n) {
		return nil, graph.FileErrorf(graph.ErrRange, ep, 0, 0, "node id %d outside [0,%d) (%s has %d nodes)", top, n, filepath.Base(lp), n)
	}
	indptr := g.Indptr[:min(len(g.Indptr), n+1)]
	for len(indptr) < n+1 {
		indptr = append(indptr, g.NNZ())
	}
	cols := g.Idx32
	if g.Idx64 != nil {
		cols = graph.ConvertIdx[int64, int32](g.Idx64)
	}
	return graph.MakeCSR(n, n, indptr, cols), nil
}

// readNPYSplit reads a split file of a graph of n nodes: a bool mask of
// length n, an integer 0/1 mask, or integer node ids. An integer array is
// a mask when its length is n and every value is 0 or 1, otherwise node
// ids. Both readings accept an array only when n <= 2 and it lists every
// node once ([0] for n = 1, [0, 1] or [1, 0] for n = 2: the ids of all
// nodes, or a mask of some), which is refused as ambiguous.
func readNPYSplit(path string, n int, spend *graph.Spend) ([]int32, error) {
	shape, data, err := readNPYFile(path, spend)
	if err != nil {
		return nil, err
	}
	if len(shape) != 1 {
		return nil, graph.FileErrorf(graph.ErrFormat, path, 0, 0, "header field 'shape': %v, want (K,) node ids or an (N,) mask", shape)
	}
	if mask, ok := data.([]bool); ok {
		if len(mask) != n {
			return nil, graph.FileErrorf(graph.ErrCount, path, 0, 0, "header field 'shape': bool mask of length %d, want %d (one per node)", len(mask), n)
		}
		return maskIDs(len(mask), func(i int) bool { return mask[i] }), nil
	}
	if err := spend.Charge(path, "the split as int64", intsCost(data)); err != nil {
		return nil, err
	}
	vals, err := npyInts(data, path)
	if err != nil {
		return nil, err
	}
	if isMask(vals, n) {
		ids := maskIDs(n, func(i int) bool { return vals[i] == 1 })
		if n <= 2 && allNodes(vals) {
			return nil, graph.FileErrorf(graph.ErrSplit, path, 0, 0, "%v reads both as node ids (all %d nodes) and as a 0/1 mask (%d of them), and which is meant is ambiguous: save a bool mask (mask.astype(bool))", vals, n, len(ids))
		}
		return ids, nil
	}
	ids := make([]int32, len(vals))
	for i, v := range vals {
		if v < 0 || v >= int64(n) {
			return nil, graph.FileErrorf(graph.ErrRange, path, 0, 0, "element %d: node id %d outside [0,%d)", i, v, n)
		}
		ids[i] = int32(v)
	}
	return ids, nil
}

// isMask reports whether integer split values are a 0/1 mask of n nodes.
func isMask(vals []int64, n int) bool {
	if len(vals) != n {
		return false
	}
	for _, v := range vals {
		if v != 0 && v != 1 {
			return false
		}
	}
	return true
}

// allNodes reports whether vals lists each of 0..len(vals)-1 once.
func allNodes(vals []int64) bool {
	seen := make([]bool, len(vals))
	for _, v := range vals {
		if v < 0 || v >= int64(len(vals)) || seen[v] {
			return false
		}
		seen[v] = true
	}
	return true
}

// maskIDs returns the nodes i < n for which in(i) holds.
func maskIDs(n int, in func(i int) bool) []int32 {
	var ids []int32
	for i := range n {
		if in(i) {
			ids = append(ids, int32(i))
		}
	}
	return ids
}

// npyInts returns integer array data (any integer dtype) as int64.
func npyInts(data any, path string) ([]int64, error) {
	v, bad, ok := npyInt64s(data)
	if !ok {
		return nil, graph.FileErrorf(graph.ErrFormat, path, 0, 0, "header field 'descr': %s data, want an integer dtype (int8..int64, uint8..uint64)", npyKind(data))
	}
	if bad >= 0 {
		return nil, graph.FileErrorf(graph.ErrRange, path, 0, 0, "element %d: %d is larger than any node id or label", bad, data.([]uint64)[bad])
	}
	return v, nil
}

// npyFloats returns numeric array data as float32.
func npyFloats(data any, path string) ([]float32, error) {
	if out, ok := npyNumeric[float32](data); ok {
		return out, nil
	}
	return nil, graph.FileErrorf(graph.ErrFormat, path, 0, 0, "header field 'descr': %s data, want a numeric dtype", npyKind(data))
}

// npyNumeric returns numeric array data ([]float32, []float64, []int32 or
// []int64) as []T: the slice itself when it already is one, else a
// converted copy; false for other data.
func npyNumeric[T float32 | float64](data any) ([]T, bool) {
	switch v := data.(type) {
	case []T:
		return v, true
	case []float32:
		return convertNum[float32, T](v), true
	case []float64:
		return convertNum[float64, T](v), true
	case []int32:
		return convertNum[int32, T](v), true
	case []int64:
		return convertNum[int64, T](v), true
	case []int16:
		return convertNum[int16, T](v), true
	case []int8:
		return convertNum[int8, T](v), true
	case []uint64:
		return convertNum[uint64, T](v), true
	case []uint32:
		return convertNum[uint32, T](v), true
	case []uint16:
		return convertNum[uint16, T](v), true
	case []uint8:
		return convertNum[uint8, T](v), true
	}
	return nil, false
}

// numeric is the element type of a numeric numpy array.
type numeric interface {
	float32 | float64 | int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64
}

// convertNum converts every element of v to To.
func convertNum[From numeric, To float32 | float64 | int32 | int64](v []From) []To {
	out := make([]To, len(v))
	for i, x := range v {
		out[i] = To(x)
	}
	return out
}

// npyKind names the element type of ReadNPY data ("float32", "uint8").
func npyKind(data any) string {
	return strings.TrimPrefix(fmt.Sprintf("%T", data), "[]")
}

// npyFormat is format.npy: a directory of .npy arrays.
type npyFormat struct{}

func init() { registry.Register(&npyFormat{}) }

func (*npyFormat) StrataModule() registry.ModuleInfo {
	return graph.FormatInfo("npy", "a directory of .npy arrays: edge_index.npy (or an edges.csv edge list), labels.npy, optional features.npy and train/valid/test_idx.npy (the PyG names too)",
		func() *npyFormat { return &npyFormat{} })
}

// Detect takes a .npy directory (formats.IsNPYDir: edge_index.npy or
// edges.csv beside .npy arrays, no raw/), and a lone .npy file to
// explain it.
func (*npyFormat) Detect(spec string, st fs.FileInfo) int {
	switch {
	case st != nil && st.IsDir() && formats.IsNPYDir(spec):
		return graph.DetectLayout
	case graph.IsFile(st) && graph.HasExt(spec, ".npy"):
		return graph.DetectSuffix
	}
	return 0
}

func (*npyFormat) Open(spec string, o graph.LoadOptions) (*graph.Dataset, error) {
	if !graph.IsDir(spec) {
		return nil, graph.FileErrorf(graph.ErrFormat, spec, 0, 0, "a single .npy file is not a dataset; pass the directory that holds edge_index.npy")
	}
	return loadNPYDir(spec, o.Budget, o.Regression)
}

func (*npyFormat) Supports() graph.Support {
	return graph.Support{Spec: "a directory of .npy arrays (edge_index.npy or edges.csv, labels.npy, ...)", Budget: true}
}

// readNPYFeatures reads the features array fp (shape (n, D); n < 0: any
// row count) as float32, charged to spend; labels names the file that
// fixed n, for errors. D = 0 gives no features.
func readNPYFeatures(fp string, n int, labels string, spend *graph.Spend) ([]float32, int, error) {
	shape, data, err := readNPYFile(fp, spend)
	if err != nil {
		return nil, 0, err
	}
	if len(shape) != 2 || n >= 0 && shape[0] != n {
		return nil, 0, graph.FileErrorf(graph.ErrCount, fp, 0, 0, "header field 'shape': %v, want (%d, D) to match the %d labels of %s", shape, n, n, labels)
	}
	if _, ok := data.([]float32); !ok {
		if err := spend.Charge(fp, "the features as float32", int64(shape[0])*int64(shape[1])*4); err != nil {
			return nil, 0, err
		}
	}
	feats, err := npyFloats(data, fp)
	if err != nil {
		return nil, 0, err
	}
	if err := graph.CheckFeatures(fp, feats, shape[1]); err != nil {
		return nil, 0, err
	}
	if shape[1] == 0 {
		return nil, 0, nil
	}
	return feats, shape[1], nil
}
