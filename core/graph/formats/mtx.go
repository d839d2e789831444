package formats

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"strata/core/graph"
	"strata/core/registry"
)

// mtxFormat is format.mtx: a Matrix Market coordinate file, read as the
// adjacency of a graph alone (no features, labels or splits; generate a
// split from labels elsewhere, as for a SNAP edge list).
type mtxFormat struct{}

func init() { registry.Register(&mtxFormat{}) }

func (*mtxFormat) StrataModule() registry.ModuleInfo {
	return graph.FormatInfo("mtx", "a Matrix Market coordinate file (.mtx, optionally gzipped; pattern, real or integer; general or symmetric) read as an N x N adjacency: entry (i, j) is the edge i -> j; the graph alone",
		func() *mtxFormat { return &mtxFormat{} })
}

func (*mtxFormat) Detect(spec string, st fs.FileInfo) int {
	if graph.IsFile(st) && graph.HasExt(spec, ".mtx") {
		return graph.DetectSuffix
	}
	return 0
}

func (*mtxFormat) Supports() graph.Support {
	return graph.Support{Spec: "a Matrix Market .mtx file (coordinate; pattern, real or integer; general or symmetric)", Budget: true, GraphOnly: true}
}

// mtxBanner is the first line a coordinate file starts with.
const mtxBanner = "%%MatrixMarket matrix coordinate <pattern|real|integer> <general|symmetric>"

// mtxHeader is what the banner and the size line declare.
type mtxHeader struct {
	values    bool // real or integer: a third column per entry
	symmetric bool
	n, nnz    int64
}

func (*mtxFormat) Open(spec string, o graph.LoadOptions) (*graph.Dataset, error) {
	f, _, err := graph.OpenFile(spec, "")
	if err != nil {
		return nil, err
	}
	tf, err := wrapText(f, spec)
	if err != nil {
		return nil, err
	}
	defer tf.Close()
	sc := bufio.NewScanner(tf.r)
	sc.Buffer(make([]byte, 0, 64<<10), graph.MaxLineBytes)
	ln := 0
	next := func() ([]byte, bool) {
		for sc.Scan() {
			ln++
			if t := bytes.TrimSpace(sc.Bytes()); len(t) > 0 && (t[0] != '%' || ln == 1) {
				return t, true
			}
		}
		return nil, false
	}
	h, err := readMTXHeader(tf.name, next, &ln)
	if err != nil {
		return nil, err
	}
	m := h.nnz
	if h.symmetric {
		m *= 2
	}
	// The entries (8 bytes each), then the CSR's column ids (4) and indptr.
	if err := graph.CheckBudget(tf.name, fmt.Sprintf("%d entries of a %d x %d matrix", h.nnz, h.n, h.n), m*16+h.n*8, graph.BudgetOr(o.Budget)); err != nil {
		return nil, err
	}
	src, dst, err := readMTXEntries(tf.name, h, next, &ln)
	if err != nil {
		return nil, err
	}
	if err := sc.Err(); err != nil {
		return nil, readError(tf.name, ln, err)
	}
	n := int(h.n)
	rows, cols := graph.GroupEdges(n, dst, src)
	name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(spec), ".gz"), ".mtx")
	return &graph.Dataset{Name: name, NumNodes: n, Graph: graph.MakeCSR(n, n, rows, cols), Source: spec, Citation: graph.KnownCitation(name)}, nil
}

// readMTXHeader reads the banner (line 1) and the size line.
func readMTXHeader(file string, next func() ([]byte, bool), ln *int) (mtxHeader, error) {
	var h mtxHeader
	t, ok := next()
	if !ok {
		return h, graph.FileErrorf(graph.ErrFormat, file, 0, 0, "empty file; a Matrix Market file starts with %q", mtxBanner)
	}
	f := strings.Fields(strings.ToLower(string(t)))
	if *ln != 1 || len(f) != 5 || f[0] != "%%matrixmarket" || f[1] != "matrix" {
		return h, graph.FileErrorf(graph.ErrFormat, file, *ln, 0, "not a Matrix Market banner; want %q", mtxBanner)
	}
	if f[2] != "coordinate" {
		return h, graph.FileErrorf(graph.ErrFormat, file, 1, 3, "format %q is not supported: only a sparse \"coordinate\" matrix is a graph (convert a dense \"array\" with scipy.io.mmwrite(f, scipy.sparse.coo_matrix(A)))", f[2])
	}
	switch f[3] {
	case "pattern":
	case "real", "integer":
		h.values = true
	default:
		return h, graph.FileErrorf(graph.ErrFormat, file, 1, 4, "field %q is not supported; want pattern, real or integer", f[3])
	}
	switch f[4] {
	case "general":
	case "symmetric":
		h.symmetric = true
	default:
		return h, graph.FileErrorf(graph.ErrFormat, file, 1, 5, "symmetry %q is not supported; want general or symmetric", f[4])
	}
	t, ok = next()
	if !ok {
		return h, graph.FileErrorf(graph.ErrTruncated, file, *ln, 0, "the file ends before the size line \"<rows> <columns> <entries>\"")
	}
	var fb [4][]byte
	sz, nf := splitSpace(t, fb[:0])
	if nf != 3 {
		return h, graph.FileErrorf(graph.ErrFormat, file, *ln, 0, "size line: %s, want 3: \"<rows> <columns> <entries>\"", plural(nf, "field"))
	}
	var v [3]int64
	for k := range v {
		x, ok := parseInt(sz[k])
		if !ok || x < 0 {
			return h, graph.FileErrorf(graph.ErrFormat, file, *ln, k+1, "size line: %s is not a non-negative integer", quoteField(sz[k]))
		}
		v[k] = x
	}
	switch {
	case v[0] != v[1]:
		return h, graph.FileErrorf(graph.ErrFormat, file, *ln, 0, "size line: a %d x %d matrix is not a graph's adjacency; want a square N x N one", v[0], v[1])
	case v[0] > graph.MaxNodes || v[0] > 1<<31-1:
		return h, graph.FileErrorf(graph.ErrRange, file, *ln, 1, "size line: %d rows is more than supported (%d)", v[0], 1<<31-1)
	case v[2] > v[0]*v[0] || v[2] > 1<<40:
		return h, graph.FileErrorf(graph.ErrRange, file, *ln, 3, "size line: %d entries do not fit a %d x %d matrix", v[2], v[0], v[0])
	}
	h.n, h.nnz = v[0], v[2]
	return h, nil
}

// readMTXEntries reads the h.nnz entry lines: entry (i, j) is the edge
// i -> j, and also j -> i when the matrix is symmetric and i != j.
func readMTXEntries(file string, h mtxHeader, next func() ([]byte, bool), ln *int) (src, dst []int32, err error) {
	want := 2
	if h.values {
		want = 3
	}
	capacity := h.nnz
	if h.symmetric {
		capacity *= 2
	}
	src, dst = make([]int32, 0, capacity), make([]int32, 0, capacity)
	var fb [4][]byte
	for e := int64(0); ; e++ {
		t, ok := next()
		if !ok {
			if e < h.nnz {
				return nil, nil, graph.FileErrorf(graph.ErrTruncated, file, *ln, 0, "the file ends after %d of the %d entries the size line declares", e, h.nnz)
			}
			return src, dst, nil
		}
		if e == h.nnz {
			return nil, nil, graph.FileErrorf(graph.ErrCount, file, *ln, 0, "entry %d: the size line declares %d entries; fix the count or drop the extra lines", e+1, h.nnz)
		}
		f, nf := splitSpace(t, fb[:0])
		if nf != want {
			return nil, nil, graph.FileErrorf(graph.ErrFormat, file, *ln, 0, "%s, want %d (\"i j%s\", 1-based)", plural(nf, "field"), want, map[bool]string{true: " value"}[h.values])
		}
		var ij [2]int32
		for k := range ij {
			v, ok := parseInt(f[k])
			if !ok {
				return nil, nil, graph.FileErrorf(graph.ErrFormat, file, *ln, k+1, "%s is not an integer index", quoteField(f[k]))
			}
			if v < 1 || v > h.n {
				return nil, nil, graph.FileErrorf(graph.ErrRange, file, *ln, k+1, "index %d outside [1,%d]; Matrix Market indices are 1-based", v, h.n)
			}
			ij[k] = int32(v - 1)
		}
		if h.values {
			if _, ok := parseFloatSlow(f[2]); !ok {
				return nil, nil, graph.FileErrorf(graph.ErrFormat, file, *ln, 3, "%s is not a number", quoteField(f[2]))
			}
		}
		src, dst = append(src, ij[0]), append(dst, ij[1])
		if h.symmetric && ij[0] != ij[1] {
			src, dst = append(src, ij[1]), append(dst, ij[0])
		}
	}
}
