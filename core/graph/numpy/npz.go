package numpy

import (
	"archive/zip"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"strata/core/graph"
	"strata/core/graph/formats"
	"strata/core/registry"
)

// npzLayouts describes the .npz layouts LoadNPZ reads, for error messages.
const npzLayouts = "a .npz dataset is either in the Shchur et al. layout (adj_data, adj_indices, adj_indptr, adj_shape; " +
	"attr_matrix or attr_data, attr_indices, attr_indptr, attr_shape; labels) or an OGB raw data.npz " +
	"(edge_index, num_nodes, optional node_feat) with node-label.npz (node_label) beside it"

// maxInflate bounds the uncompressed size of a .npz entry relative to its
// compressed size (deflate cannot do better than about 1032:1), so a forged
// size field cannot make the loader allocate without bound.
const maxInflate = 1100

// npzFile is an open .npz archive.
type npzFile struct {
	path string
	zr   *zip.Reader
	f    *os.File
	keys []string // array names, without ".npy"
	// spend is the load's memory budget, which every array is charged to
	// before it is allocated (shared by data.npz and node-label.npz).
	spend *graph.Spend
}

// openNPZ opens a .npz archive (a zip of .npy files) through the read
// gate (graph.OpenFile).
func openNPZ(path string) (*npzFile, error) {
	f, size, err := graph.OpenFile(path, npzLayouts)
	if err != nil {
		return nil, err
	}
	z, err := readNPZ(f, size, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	z.f = f
	return z, nil
}

// readNPZ reads the directory of the .npz archive of size bytes in r;
// path names it in errors.
func readNPZ(r io.ReaderAt, size int64, path string) (*npzFile, error) {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, graph.FileErrorf(graph.ErrFormat, path, 0, 0, "not a .npz archive (%v); save the arrays with numpy.savez or numpy.savez_compressed", err)
	}
	z := &npzFile{path: path, zr: zr, spend: &graph.Spend{}}
	for _, e := range zr.File {
		z.keys = append(z.keys, strings.TrimSuffix(e.Name, ".npy"))
	}
	slices.Sort(z.keys)
	return z, nil
}

// Close closes the archive's file.
func (z *npzFile) Close() error {
	if z.f == nil {
		return nil
	}
	return z.f.Close()
}

// charge charges bytes, the size of what, to the load's budget before
// it is allocated.
func (z *npzFile) charge(what string, bytes int64) error {
	return z.spend.Charge(z.path, what, bytes)
}

// chargeGraph charges the graph of n nodes and m edges of array name:
// its endpoints, then its CSR.
func (z *npzFile) chargeGraph(name string, n, m int) error {
	return z.charge(fmt.Sprintf("array %q: a graph of %d nodes and %d edges", name, n, m), int64(m)*12+int64(n+1)*8)
}

// has reports whether the archive holds the array name.
func (z *npzFile) has(name string) bool { return slices.Contains(z.keys, name) }

// entry returns the zip entry of array name.
func (z *npzFile) entry(name string) *zip.File {
	for _, f := range z.zr.File {
		if f.Name == name+".npy" || f.Name == name {
			return f
		}
	}
	return nil
}

// member opens the entry of array name and reads its .npy header. The
// entry's declared size is checked against its compressed size before
// anything (a forged size cannot pass maxInflate), and the header's
// length against the declared size before the header is allocated; the
// zip reader then fails an entry that inflates past its declared size. It
// returns the entry, the reader at the array's data, and the header.
func (z *npzFile) member(name string) (*zip.File, io.ReadCloser, *npyHeader, error) {
	what := fmt.Sprintf("array %q: ", name)
	e := z.entry(name)
	if e == nil {
		return nil, nil, nil, graph.FileErrorf(graph.ErrMissing, z.path, 0, 0, "array %q is missing (the archive holds %s); %s", name, strings.Join(z.keys, ", "), npzLayouts)
	}
	if e.UncompressedSize64 > maxInflate*min(e.CompressedSize64, 1<<50)+1<<20 { // min: no overflow from a forged size
		return nil, nil, nil, graph.FileErrorf(graph.ErrFormat, z.path, 0, 0, "%sdeclares %d uncompressed bytes from %d compressed; the archive is corrupt", what, e.UncompressedSize64, e.CompressedSize64)
	}
	rc, err := e.Open()
	if err != nil {
		return nil, nil, nil, graph.FileErrorf(graph.ErrFormat, z.path, 0, 0, "%scannot open: %v", what, err)
	}
	h, _, err := readNPYHeader(rc, int64(e.UncompressedSize64), z.path, what)
	if err != nil {
		rc.Close()
		return nil, nil, nil, err
	}
	return e, rc, h, nil
}

// read reads the array name: its shape and its data as the Go slice of
// its dtype (npyDtypes) in row-major order (a Fortran-order array is
// transposed as it is read), charged to the load's budget before it is
// allocated. Errors name the file and the array.
func (z *npzFile) read(name string) (shape []int, data any, err error) {
	bad := func(kind error, format string, args ...any) error {
		return graph.FileErrorf(kind, z.path, 0, 0, "array %q: %s", name, fmt.Sprintf(format, args...))
	}
	e, rc, h, err := z.member(name)
	if err != nil {
		return nil, nil, err
	}
	defer rc.Close()
	shape = h.shape
	t, ok := npyDtypes[h.descr]
	if !ok {
		if h.descr == "|O" {
			return nil, nil, bad(graph.ErrFormat, "holds pickled Python objects (dtype object), which only the pickled scipy.sparse layout reads; save plain numeric arrays (numpy.savez of the CSR parts)")
		}
		return nil, nil, bad(graph.ErrFormat, "dtype %q is not supported; want %s", h.descr, npyDtypeNames)
	}
	count, err := npyCount(z.path, fmt.Sprintf("array %q: ", name), shape)
	if err != nil {
		return nil, nil, err
	}
	if need := uint64(count * t.size); need > e.UncompressedSize64 {
		return nil, nil, bad(graph.ErrTruncated, "header field 'shape' %v of %s needs %d bytes, but the entry holds only %d; the array is truncated or its shape is wrong",
			shape, h.descr, need, e.UncompressedSize64)
	}
	if err := z.spend.Charge(z.path, fmt.Sprintf("array %q of shape %v", name, shape), count*t.size); err != nil {
		return nil, nil, err
	}
	data, raw := t.alloc(count)
	if err := readData(rc, raw, shape, t.size, h.fortran); err != nil {
		return nil, nil, bad(graph.ErrTruncated, "header field 'shape' %v of %s needs %d bytes of data, but the entry ends early (%v)", shape, h.descr, len(raw), err)
	}
	if i, b := finishNPY(h.descr, raw, t.size); i >= 0 {
		return nil, nil, bad(graph.ErrFormat, "bool element %d has byte value %d (want 0 or 1)", i, b)
	}
	if len(shape) == 0 {
		shape = []int{} // a scalar
	}
	return shape, data, nil
}

// ints reads an integer array as int64 (bool and uint8 arrays too).
func (z *npzFile) ints(name string) ([]int, []int64, error) {
	shape, data, err := z.read(name)
	if err != nil {
		return nil, nil, err
	}
	if _, ok := data.([]int64); !ok {
		if err := z.charge(fmt.Sprintf("array %q as int64", name), int64(reflect.ValueOf(data).Len())*8); err != nil {
			return nil, nil, err
		}
	}
	out, badAt, isInt := npyInt64s(data)
	if badAt >= 0 {
		return nil, nil, graph.FileErrorf(graph.ErrRange, z.path, 0, 0, "array %q: element %d is %d, larger than any id", name, badAt, data.([]uint64)[badAt])
	}
	switch data.(type) {
	case []bool:
		out = make([]int64, len(data.([]bool)))
		for i, x := range data.([]bool) {
			if x {
				out[i] = 1
			}
		}
	case []float32, []float64:
		f, _ := npyNumeric[float64](data)
		out = make([]int64, len(f))
		for i, x := range f {
			if x != math.Trunc(x) && !math.IsNaN(x) || math.Abs(x) > 1<<53 {
				return nil, nil, graph.FileErrorf(graph.ErrFormat, z.path, 0, 0, "array %q: element %d is %v, not an integer", name, i, x)
			}
			if math.IsNaN(x) {
				out[i] = -1 // OGB marks unlabeled nodes with NaN
			} else {
				out[i] = int64(x)
			}
		}
	default:
		if !isInt {
			return nil, nil, graph.FileErrorf(graph.ErrFormat, z.path, 0, 0, "array %q: %s data, want integers", name, npyKind(data))
		}
	}
	return shape, out, nil
}

// floats reads a numeric array as float32, checking that it is finite.
func (z *npzFile) floats(name string) ([]int, []float32, error) {
	shape, data, err := z.read(name)
	if err != nil {
		return nil, nil, err
	}
	if _, ok := data.([]float32); !ok {
		if err := z.charge(fmt.Sprintf("array %q as float32", name), int64(reflect.ValueOf(data).Len())*4); err != nil {
			return nil, nil, err
		}
	}
	var out []float32
	switch v := data.(type) {
	case []float32:
		out = v
	case []uint8:
		out = make([]float32, len(v))
		for i, x := range v {
			out[i] = float32(x)
		}
	case []bool:
		out = make([]float32, len(v))
		for i, x := range v {
			if x {
				out[i] = 1
			}
		}
	default:
		f, ok := npyNumeric[float64](data)
		if !ok {
			return nil, nil, graph.FileErrorf(graph.ErrFormat, z.path, 0, 0, "array %q: %s data, want numbers", name, npyKind(data))
		}
		out = make([]float32, len(f))
		for i, x := range f {
			out[i] = float32(x)
		}
	}
	for i, v := range out {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, nil, graph.FileErrorf(graph.ErrRange, z.path, 0, 0, "array %q: element %d is %v, not a finite float32 (NaN and infinities would poison training); fix the array", name, i, v)
		}
	}
	return shape, out, nil
}

// LoadNPZ loads a dataset from one .npz file: the Shchur et al. layout of
// the Amazon and Coauthor graphs (adjacency and optional attributes as
// scipy CSR parts, or attr_matrix dense; labels), or an OGB raw data.npz
// (edge_index, num_nodes, optional node_feat) whose labels are in
// node-label.npz beside it, with its splits from ../split/<name>/ when the
// file lies in an OGB raw/ directory. Shchur files carry no split: give one
// with "<file>@random-20-30-seed0" (data.split). Row i of the adjacency
// (node i's neighbours j) becomes the edges i -> j.
func LoadNPZ(path string) (*graph.Dataset, error) {
	return loadNPZ(path, "", 0)
}

// loadNPZ is LoadNPZ with a named split (OGB's data.npz) and a memory
// budget for the whole load, data.npz and node-label.npz together (0:
// DefaultMaxMemory).
func loadNPZ(path, split string, budget int64) (*graph.Dataset, error) {
	z, err := openNPZ(path)
	if err != nil {
		return nil, err
	}
	defer z.Close()
	z.spend.Budget = budget
	return z.load(split)
}

// load reads the dataset of the archive in whichever layout it holds,
// with the named split (OGB's data.npz).
func (z *npzFile) load(split string) (*graph.Dataset, error) {
	switch {
	case z.has("adj_indptr") || z.has("adj_data"):
		d, err := loadShchur(z)
		if err != nil {
			return nil, err
		}
		if split != "" && split != graph.NoSplit {
			return nil, graph.FileErrorf(graph.ErrMissing, z.path, 0, 0, "split %q: a Shchur .npz file has no named splits; use a generated one such as @random-20-30-seed0", split)
		}
		return d, nil
	case z.has("edge_index"):
		return loadOGBNPZ(z, split)
	case z.has("adj_matrix"):
		return nil, z.adjMatrixError()
	}
	if len(z.keys) == 0 {
		return nil, graph.FileErrorf(graph.ErrFormat, z.path, 0, 0, "empty archive; %s", npzLayouts)
	}
	return nil, graph.FileErrorf(graph.ErrFormat, z.path, 0, 0, "unknown .npz layout (arrays: %s); %s", strings.Join(z.keys, ", "), npzLayouts)
}

// adjMatrixError says why an "adj_matrix" array that the pickled
// scipy.sparse format did not take cannot be read: it is dense, or it
// pickles something other than a CSR/CSC matrix.
func (z *npzFile) adjMatrixError() error {
	const fix = "save a scipy.sparse CSR or CSC matrix (numpy.savez(f, adj_matrix=scipy.sparse.csr_matrix(A), ...)) or its parts adj_data, adj_indices, adj_indptr, adj_shape"
	descr, shape := z.header("adj_matrix")
	if descr == "|O" {
		return graph.FileErrorf(graph.ErrFormat, z.path, 0, 0, "array \"adj_matrix\": holds pickled Python objects of shape %v that are not one scipy.sparse CSR/CSC matrix; %s", shape, fix)
	}
	return graph.FileErrorf(graph.ErrFormat, z.path, 0, 0, "array \"adj_matrix\": a dense %v adjacency of dtype %s is not supported (it needs N x N values); %s", shape, descr, fix)
}

// npzName is the dataset name of a .npz file: its base name without the
// extension, or the dataset directory of an OGB raw/data.npz.
func npzName(path string) string {
	base := strings.TrimSuffix(filepath.Base(path), ".npz")
	dir := filepath.Dir(filepath.Clean(path))
	if filepath.Base(dir) == "raw" {
		return filepath.Base(filepath.Dir(dir))
	}
	return base
}

// loadShchur reads the Shchur et al. layout.
func loadShchur(z *npzFile) (*graph.Dataset, error) {
	shape, dims, err := z.ints("adj_shape")
	if err != nil {
		return nil, err
	}
	if len(dims) != 2 || len(shape) != 1 {
		return nil, graph.FileErrorf(graph.ErrFormat, z.path, 0, 0, "array \"adj_shape\": shape %v, want (2,) holding (N, N)", shape)
	}
	if dims[0] != dims[1] || dims[0] < 0 || dims[0] > graph.MaxNodes || dims[0] > math.MaxInt32 {
		return nil, graph.FileErrorf(graph.ErrFormat, z.path, 0, 0, "array \"adj_shape\": %v, want a square (N, N) adjacency with 0 <= N <= %d", dims, math.MaxInt32)
	}
	n := int(dims[0])
	indptr, idx, err := z.csr("adj", n, n)
	if err != nil {
		return nil, err
	}
	if err := z.chargeGraph("adj_indices", n, len(idx)); err != nil {
		return nil, err
	}
	src, dst := make([]int32, len(idx)), make([]int32, len(idx))
	for i := 0; i < n; i++ {
		for k := indptr[i]; k < indptr[i+1]; k++ {
			src[k], dst[k] = int32(i), int32(idx[k])
		}
	}
	rows, cols := graph.GroupEdges(n, dst, src)
	d := &graph.Dataset{Name: npzName(z.path), NumNodes: n, Graph: graph.MakeCSR(n, n, rows, cols), Source: z.path}
	d.Citation = graph.KnownCitation(d.Name)

	switch {
	case z.has("attr_matrix"):
		shape, feats, err := z.floats("attr_matrix")
		if err != nil {
			return nil, err
		}
		if len(shape) != 2 || shape[0] != n {
			return nil, graph.FileErrorf(graph.ErrCount, z.path, 0, 0, "array \"attr_matrix\": shape %v, want (%d, D) to match adj_shape", shape, n)
		}
		d.Features, d.FeatDim = feats, shape[1]
	case z.has("attr_indptr") || z.has("attr_data"):
		if d.Features, d.FeatDim, err = z.denseFromCSR("attr", n); err != nil {
			return nil, err
		}
	}
	if d.FeatDim == 0 {
		d.Features = nil
	}

	if !z.has("labels") {
		if z.has("labels_indptr") || z.has("labels_data") {
			return nil, graph.FileErrorf(graph.ErrFormat, z.path, 0, 0, "labels stored as a sparse matrix (labels_data, ...) are not supported; store one class index per node in \"labels\"")
		}
		return nil, graph.FileErrorf(graph.ErrMissing, z.path, 0, 0, "array \"labels\" is missing (the archive holds %s); a node-classification dataset needs one class index per node", strings.Join(z.keys, ", "))
	}
	if d.Labels, d.NumClasses, err = z.labels("labels", n); err != nil {
		return nil, err
	}
	return d, nil
}

// csr reads the scipy CSR parts <p>_indptr, <p>_indices (and checks the
// length of <p>_data when present) of a rows x cols matrix.
func (z *npzFile) csr(p string, rows, cols int) ([]int64, []int64, error) {
	_, indptr, err := z.ints(p + "_indptr")
	if err != nil {
		return nil, nil, err
	}
	_, idx, err := z.ints(p + "_indices")
	if err != nil {
		return nil, nil, err
	}
	if err := checkCSRParts(z.path, p+"_indptr", p+"_indices", p+"_shape", indptr, idx, rows, cols); err != nil {
		return nil, nil, err
	}
	if e := z.entry(p + "_data"); e != nil {
		shape, _, err := z.read(p + "_data")
		if err != nil {
			return nil, nil, err
		}
		if len(shape) != 1 || shape[0] != len(idx) {
			return nil, nil, graph.FileErrorf(graph.ErrCount, z.path, 0, 0, "array %q: shape %v, want (%d,) like %s_indices", p+"_data", shape, len(idx), p)
		}
	}
	return indptr, idx, nil
}

// checkCSR checks the parts of a compressed sparse matrix of rows outer
// and cols inner entries (rows and columns of CSR, the other way round for
// CSC); ptrName, idxName and shapeName name its arrays in errors.
func checkCSRParts(file, ptrName, idxName, shapeName string, indptr, idx []int64, rows, cols int) error {
	if len(indptr) != rows+1 {
		return graph.FileErrorf(graph.ErrCount, file, 0, 0, "array %q: %d entries, want %d (rows + 1 of %s)", ptrName, len(indptr), rows+1, shapeName)
	}
	if indptr[0] != 0 || indptr[rows] != int64(len(idx)) {
		return graph.FileErrorf(graph.ErrCount, file, 0, 0, "array %q: runs from %d to %d, want 0 to %d (the length of %s)", ptrName, indptr[0], indptr[rows], len(idx), idxName)
	}
	for i := 0; i < rows; i++ {
		if indptr[i+1] < indptr[i] {
			return graph.FileErrorf(graph.ErrFormat, file, 0, 0, "array %q: decreases at row %d (%d after %d)", ptrName, i, indptr[i+1], indptr[i])
		}
	}
	for k, j := range idx {
		if j < 0 || j >= int64(cols) {
			return graph.FileErrorf(graph.ErrRange, file, 0, 0, "array %q: element %d is column %d, outside [0,%d) of %s", idxName, k, j, cols, shapeName)
		}
	}
	return nil
}

// denseFromCSR reads the sparse attribute matrix <p>_* as dense row-major
// float32 features of n rows.
func (z *npzFile) denseFromCSR(p string, n int) ([]float32, int, error) {
	shape, dims, err := z.ints(p + "_shape")
	if err != nil {
		return nil, 0, err
	}
	if len(shape) != 1 || len(dims) != 2 || dims[0] != int64(n) || dims[1] < 0 {
		return nil, 0, graph.FileErrorf(graph.ErrCount, z.path, 0, 0, "array %q: %v, want (%d, D) to match adj_shape", p+"_shape", dims, n)
	}
	dim := int(dims[1])
	if int64(n)*int64(dim) > graph.MaxFeatureValues {
		return nil, 0, graph.FileErrorf(graph.ErrRange, z.path, 0, 0, "array %q: %d x %d features is more than supported", p+"_shape", n, dim)
	}
	indptr, idx, err := z.csr(p, n, dim)
	if err != nil {
		return nil, 0, err
	}
	_, vals, err := z.floats(p + "_data")
	if err != nil {
		return nil, 0, err
	}
	if err := z.charge(fmt.Sprintf("array %q: %d x %d dense features", p+"_shape", n, dim), int64(n)*int64(dim)*4); err != nil {
		return nil, 0, err
	}
	feats := make([]float32, n*dim)
	for i := 0; i < n; i++ {
		for k := indptr[i]; k < indptr[i+1]; k++ {
			feats[i*dim+int(idx[k])] += vals[k]
		}
	}
	return feats, dim, nil
}

// labels reads a label array of n entries ((N,) or (N, 1)); -1 is unlabeled.
func (z *npzFile) labels(name string, n int) ([]int32, int, error) {
	shape, lab, err := z.ints(name)
	if err != nil {
		return nil, 0, err
	}
	if !(len(shape) == 1 && shape[0] == n) && !(len(shape) == 2 && shape[0] == n && shape[1] == 1) {
		return nil, 0, graph.FileErrorf(graph.ErrCount, z.path, 0, 0, "array %q: shape %v, want (%d,) or (%d, 1): one class index per node", name, shape, n, n)
	}
	if err := z.charge(fmt.Sprintf("array %q: %d labels", name, n), int64(n)*4); err != nil {
		return nil, 0, err
	}
	out := make([]int32, n)
	maxLabel := int64(-1)
	for i, v := range lab {
		if v < -1 || v >= int64(max(n, 2)) {
			return nil, 0, graph.FileErrorf(graph.ErrRange, z.path, 0, 0, "array %q: element %d is %d, outside [-1,%d); labels must be class indices, -1 for unlabeled", name, i, v, max(n, 2))
		}
		out[i] = int32(v)
		maxLabel = max(maxLabel, v)
	}
	return out, int(maxLabel + 1), nil
}

// loadOGBNPZ reads OGB's binary raw files: data.npz (edge_index (2, E),
// num_nodes, optional node_feat (N, D)) and node-label.npz (node_label)
// beside it, or a node_label array in data.npz itself.
func loadOGBNPZ(z *npzFile, split string) (*graph.Dataset, error) {
	rawDir := filepath.Dir(z.path)
	root := ""
	if filepath.Base(filepath.Clean(rawDir)) == "raw" {
		root = filepath.Dir(filepath.Clean(rawDir))
	}
	var sd formats.SplitDir
	if root != "" {
		var err error
		if sd, err = formats.ChooseSplit(root, split); err != nil {
			return nil, err
		}
	} else if split != "" && split != graph.NoSplit {
		return nil, graph.FileErrorf(graph.ErrMissing, z.path, 0, 0, "named split %q: a data.npz outside an OGB raw/ directory has no split/ directory", split)
	}

	nshape, nn, err := z.ints("num_nodes")
	if err != nil {
		return nil, err
	}
	if len(nn) != 1 || len(nshape) > 1 || nn[0] < 0 || nn[0] > math.MaxInt32 {
		return nil, graph.FileErrorf(graph.ErrFormat, z.path, 0, 0, "array \"num_nodes\": %v, want one count in [0,%d]", nn, math.MaxInt32)
	}
	n := int(nn[0])
	shape, ids, err := z.ints("edge_index")
	if err != nil {
		return nil, err
	}
	if len(shape) != 2 || shape[0] != 2 {
		return nil, graph.FileErrorf(graph.ErrFormat, z.path, 0, 0, "array \"edge_index\": shape %v, want (2, E)", shape)
	}
	m := shape[1]
	if err := z.chargeGraph("edge_index", n, m); err != nil {
		return nil, err
	}
	src32, dst32 := make([]int32, m), make([]int32, m)
	for e := 0; e < m; e++ {
		s, t := ids[e], ids[m+e]
		for k, v := range [2]int64{s, t} {
			if v < 0 || v >= int64(n) {
				return nil, graph.FileErrorf(graph.ErrRange, z.path, 0, 0, "array \"edge_index\": edge %d: %s id %d outside [0,%d) (num_nodes)", e, [2]string{"source", "target"}[k], v, n)
			}
		}
		src32[e], dst32[e] = int32(s), int32(t)
	}
	rows, cols := graph.GroupEdges(n, dst32, src32)
	d := &graph.Dataset{Name: npzName(z.path), NumNodes: n, Graph: graph.MakeCSR(n, n, rows, cols), Source: z.path}
	if root != "" {
		d.Source = root
	}
	d.Citation = graph.KnownCitation(d.Name)
	if z.has("node_feat") {
		shape, feats, err := z.floats("node_feat")
		if err != nil {
			return nil, err
		}
		if len(shape) != 2 || shape[0] != n {
			return nil, graph.FileErrorf(graph.ErrCount, z.path, 0, 0, "array \"node_feat\": shape %v, want (%d, D) to match num_nodes", shape, n)
		}
		if shape[1] > 0 {
			d.Features, d.FeatDim = feats, shape[1]
		}
	}
	switch lp := filepath.Join(rawDir, "node-label.npz"); {
	case z.has("node_label"):
		if d.Labels, d.NumClasses, err = z.labels("node_label", n); err != nil {
			return nil, err
		}
	case graph.FileExists(lp):
		lz, err := openNPZ(lp)
		if err != nil {
			return nil, err
		}
		defer lz.Close()
		lz.spend = z.spend
		if d.Labels, d.NumClasses, err = lz.labels("node_label", n); err != nil {
			return nil, err
		}
	default:
		if sd.Dir != "" {
			return nil, graph.FileErrorf(graph.ErrMissing, lp, 0, 0, "file does not exist; the split %s needs labels (array node_label)", sd.Dir)
		}
	}
	if sd.Dir != "" {
		if err := sd.Read(d); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// npzFormat is format.npz: a .npz file of numeric arrays, or an OGB
// directory whose raw/ holds data.npz.
type npzFormat struct{}

func init() { registry.Register(&npzFormat{}) }

func (*npzFormat) StrataModule() registry.ModuleInfo {
	return graph.FormatInfo("npz", "a .npz file of numeric arrays (Shchur et al.'s CSR parts, or OGB's data.npz), or an OGB directory whose raw/ holds data.npz",
		func() *npzFormat { return &npzFormat{} })
}

// Detect takes a .npz file, and a directory whose raw/ holds data.npz
// but no edge.csv[.gz] (the text layout wins).
func (*npzFormat) Detect(spec string, st fs.FileInfo) int {
	switch {
	case graph.IsFile(st) && graph.HasExt(spec, ".npz"):
		return graph.DetectSuffix
	case st != nil && st.IsDir():
		raw := filepath.Join(spec, "raw")
		if graph.FileExists(filepath.Join(raw, "data.npz")) && !graph.FileExists(filepath.Join(raw, "edge.csv.gz")) && !graph.FileExists(filepath.Join(raw, "edge.csv")) {
			return graph.DetectLayout
		}
	}
	return 0
}

func (*npzFormat) Open(spec string, o graph.LoadOptions) (*graph.Dataset, error) {
	if graph.IsDir(spec) {
		spec = filepath.Join(spec, "raw", "data.npz")
	}
	return loadNPZ(spec, o.Split, o.Budget)
}

func (*npzFormat) HasSplit(spec, name string) bool {
	return graph.IsDir(spec) && graph.IsDir(filepath.Join(spec, "split", name))
}

func (*npzFormat) Supports() graph.Support {
	return graph.Support{Spec: "a .npz file (Shchur et al. or OGB data.npz)", NamedSplits: true, Budget: true}
}
