package numpy

import (
	"embed"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"strata/core/graph"
	"strata/core/graph/numpy/pickle"
	"strata/core/registry"
)

// npzScipyFormat is format.npz-scipy: a .npz file whose adjacency (and
// optionally attributes) are pickled scipy.sparse matrices, as
// numpy.savez(f, adj_matrix=A, attr_matrix=X, labels=y) writes them for
// Shchur et al.'s graphs. The pickles are read by a restricted unpickler
// (package pickle) that runs no code.
type npzScipyFormat struct{}

func init() { registry.Register(&npzScipyFormat{}) }

func (*npzScipyFormat) StrataModule() registry.ModuleInfo {
	return graph.FormatInfo("npz-scipy", "a .npz file whose adj_matrix (and attr_matrix) are pickled scipy.sparse CSR/CSC matrices, with labels; unpickled without running code (only those classes and numpy arrays are accepted)",
		func() *npzScipyFormat { return &npzScipyFormat{} })
}

// Detect takes a .npz file whose adj_matrix is an object array.
func (*npzScipyFormat) Detect(spec string, st fs.FileInfo) int {
	if !graph.IsFile(st) || !graph.HasExt(spec, ".npz") {
		return 0
	}
	z, err := openNPZ(spec)
	if err != nil {
		return 0
	}
	defer z.Close()
	if descr, _ := z.header("adj_matrix"); descr == "|O" {
		return graph.DetectContent
	}
	return 0
}

func (*npzScipyFormat) Supports() graph.Support {
	return graph.Support{Spec: "a .npz file of pickled scipy.sparse matrices (adj_matrix, attr_matrix, labels)", Budget: true}
}

func (*npzScipyFormat) Open(spec string, o graph.LoadOptions) (*graph.Dataset, error) {
	z, err := openNPZ(spec)
	if err != nil {
		return nil, err
	}
	defer z.Close()
	z.spend.Budget = o.Budget
	adj, err := z.sparse("adj_matrix")
	if err != nil {
		return nil, err
	}
	if adj.rows != adj.cols {
		return nil, graph.FileErrorf(graph.ErrFormat, z.path, 0, 0, "array \"adj_matrix\": a %d x %d matrix is not a graph's adjacency; want a square N x N one", adj.rows, adj.cols)
	}
	n := adj.rows
	src, dst := make([]int32, 0, len(adj.idx)), make([]int32, 0, len(adj.idx))
	adj.each(func(i, j int, _ float32) { src, dst = append(src, int32(i)), append(dst, int32(j)) })
	rows, cols := graph.GroupEdges(n, dst, src)
	d := &graph.Dataset{Name: npzName(z.path), NumNodes: n, Graph: graph.MakeCSR(n, n, rows, cols), Source: z.path}
	d.Citation = graph.KnownCitation(d.Name)
	if err := z.scipyFeatures(d); err != nil {
		return nil, err
	}
	if !z.has("labels") {
		return nil, graph.FileErrorf(graph.ErrMissing, z.path, 0, 0, "array \"labels\" is missing (the archive holds %s); a node-classification dataset needs one class index per node", strings.Join(z.keys, ", "))
	}
	if d.Labels, d.NumClasses, err = z.labels("labels", n); err != nil {
		return nil, err
	}
	return d, nil
}

// scipyFeatures reads attr_matrix, a pickled sparse matrix or a dense
// array, when the archive holds one.
func (z *npzFile) scipyFeatures(d *graph.Dataset) error {
	if !z.has("attr_matrix") {
		return nil
	}
	n := d.NumNodes
	if descr, _ := z.header("attr_matrix"); descr != "|O" {
		shape, feats, err := z.floats("attr_matrix")
		if err != nil {
			return err
		}
		if len(shape) != 2 || shape[0] != n {
			return graph.FileErrorf(graph.ErrCount, z.path, 0, 0, "array \"attr_matrix\": shape %v, want (%d, D) to match adj_matrix", shape, n)
		}
		if shape[1] > 0 {
			d.Features, d.FeatDim = feats, shape[1]
		}
		return nil
	}
	x, err := z.sparse("attr_matrix")
	if err != nil {
		return err
	}
	if x.rows != n {
		return graph.FileErrorf(graph.ErrCount, z.path, 0, 0, "array \"attr_matrix\": %d x %d, want %d rows to match adj_matrix", x.rows, x.cols, n)
	}
	if err := z.spend.Charge(z.path, fmt.Sprintf("array \"attr_matrix\": %d x %d dense features", n, x.cols), int64(n)*int64(x.cols)*4); err != nil {
		return err
	}
	if x.cols == 0 {
		return nil
	}
	feats := make([]float32, n*x.cols)
	x.each(func(i, j int, v float32) { feats[i*x.cols+j] += v })
	d.Features, d.FeatDim = feats, x.cols
	return graph.CheckFeatures(z.path, feats, x.cols)
}

// header returns the dtype and shape of array name ("" when unreadable).
func (z *npzFile) header(name string) (string, []int) {
	_, rc, h, err := z.member(name)
	if err != nil {
		return "", nil
	}
	rc.Close()
	return h.descr, h.shape
}

// sparseMatrix is an unpickled scipy.sparse CSR or CSC matrix.
type sparseMatrix struct {
	csc         bool
	rows, cols  int
	indptr, idx []int64
	vals        []float32 // nil: a pattern (all ones)
}

// each calls f for every stored entry (row i, column j, value v).
func (s *sparseMatrix) each(f func(i, j int, v float32)) {
	outer := s.rows
	if s.csc {
		outer = s.cols
	}
	for o := 0; o < outer; o++ {
		for k := s.indptr[o]; k < s.indptr[o+1]; k++ {
			v := float32(1)
			if s.vals != nil {
				v = s.vals[k]
			}
			if s.csc {
				f(int(s.idx[k]), o, v)
			} else {
				f(o, int(s.idx[k]), v)
			}
		}
	}
}

// sparse unpickles array name, a 0-d object array holding one
// scipy.sparse CSR or CSC matrix, and checks its parts.
func (z *npzFile) sparse(name string) (*sparseMatrix, error) {
	bad := func(kind error, format string, args ...any) error {
		return graph.FileErrorf(kind, z.path, 0, 0, "array %q: %s", name, fmt.Sprintf(format, args...))
	}
	e, rc, _, err := z.member(name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	// The pickle, then the arrays decoded from it (as large again).
	size := int64(e.UncompressedSize64)
	if err := z.spend.Charge(z.path, fmt.Sprintf("array %q: a pickle of %d bytes", name, size), 2*size); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(rc, size))
	if err != nil {
		return nil, bad(graph.ErrTruncated, "cannot read the pickle: %v", err)
	}
	v, err := unpickle(b, z.spend.Left()+size)
	if err != nil {
		return nil, &graph.FileError{File: z.path, Msg: fmt.Sprintf("array %q: %v", name, err), Err: err}
	}
	arr, ok := v.(*pickle.Array)
	var sp *pickle.Sparse
	if ok && arr.Descr == "|O" && len(arr.Shape) == 0 {
		if items := arr.Data.([]any); len(items) == 1 {
			sp, ok = items[0].(*pickle.Sparse)
		}
	}
	if sp == nil {
		return nil, bad(graph.ErrFormat, "holds pickled Python objects that are not one scipy.sparse CSR/CSC matrix; save numpy.savez(f, %s=scipy.sparse.csr_matrix(A))", name)
	}
	return z.sparseParts(name, sp)
}

// sparseParts reads and checks the shape, indptr, indices and data of an
// unpickled matrix.
func (z *npzFile) sparseParts(name string, sp *pickle.Sparse) (*sparseMatrix, error) {
	bad := func(format string, args ...any) error {
		return graph.FileErrorf(graph.ErrFormat, z.path, 0, 0, "array %q: %s matrix: %s", name, sp.Kind, fmt.Sprintf(format, args...))
	}
	shape, ok := sp.State["_shape"].(pickle.Tuple)
	if !ok {
		shape, _ = sp.State["shape"].(pickle.Tuple)
	}
	var dims [2]int
	for k := range dims {
		if len(shape) != 2 {
			return nil, bad("no (rows, columns) shape in its state")
		}
		v, ok := shape[k].(int64)
		if !ok || v < 0 || v > graph.MaxNodes || v > 1<<31-1 {
			return nil, bad("shape %v is not two sizes below 2^31", shape)
		}
		dims[k] = int(v)
	}
	parts := map[string][]int64{}
	for _, key := range []string{"indptr", "indices"} {
		a, ok := sp.State[key].(*pickle.Array)
		if !ok {
			return nil, bad("no %s array in its state", key)
		}
		ints, err := npyInts(a.Data, z.path)
		if err != nil || len(a.Shape) != 1 {
			return nil, bad("%s is a %v array of %s, want a 1-d integer one", key, a.Shape, a.Descr)
		}
		parts[key] = ints
	}
	s := &sparseMatrix{csc: sp.Kind == "csc", rows: dims[0], cols: dims[1], indptr: parts["indptr"], idx: parts["indices"]}
	outer, inner := s.rows, s.cols
	if s.csc {
		outer, inner = inner, outer
	}
	what := func(p string) string { return name + "." + p }
	if err := checkCSRParts(z.path, what("indptr"), what("indices"), what("shape"), s.indptr, s.idx, outer, inner); err != nil {
		return nil, err
	}
	if a, ok := sp.State["data"].(*pickle.Array); ok {
		vals, ok := npyNumeric[float32](a.Data)
		if !ok || len(vals) != len(s.idx) {
			return nil, bad("data is a %v array of %s, want %d numbers like indices", a.Shape, a.Descr, len(s.idx))
		}
		s.vals = vals
	}
	return s, nil
}

// scipyExamples are a pickled CSR archive and one whose pickle calls
// os.system (which the unpickler must refuse).
//
//go:embed testdata/scipy/csr.npz testdata/scipy/os-system.npz
var scipyExamples embed.FS

func (*npzScipyFormat) Examples(dir string) ([]graph.Example, error) {
	var out []graph.Example
	for _, name := range []string{"csr.npz", "os-system.npz"} {
		b, err := scipyExamples.ReadFile("testdata/scipy/" + name)
		if err != nil {
			return nil, err
		}
		p, err := graph.WriteExample(dir, name, b)
		if err != nil {
			return nil, err
		}
		if name == "csr.npz" {
			out = append(out, graph.Example{Name: "csr", Spec: p})
		} else {
			out = append(out, graph.Example{Name: "os.system", Spec: p, Kind: graph.ErrFormat, Err: []string{p, `array "adj_matrix"`, "refusing to load os.system"}})
		}
	}
	return out, nil
}
