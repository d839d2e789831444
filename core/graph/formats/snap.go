package formats

import (
	"bytes"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"strata/core/graph"
	"strata/core/registry"
)

// maxSparseFactor bounds the node count of an edge list relative to its edge
// count, so that one huge id cannot make the loader allocate gigabytes.
const maxSparseFactor = 64

// bytesPerEdgeCSR is what an edge list costs per edge at its peak: the
// parsed pairs (16 bytes) while the CSR is built from them (8 bytes of
// endpoints, 4 of column ids).
const bytesPerEdgeCSR = 28

// LoadSNAP loads a SNAP-style edge list: '#' (or '%') comment lines, then
// one "src dst" line per edge, separated by spaces or tabs; ids are 0-based
// integers. A ".gz" file (or any file starting with the gzip magic) is
// decompressed. The node count is max id + 1, or the "# Nodes: N" header
// value when that is larger. Edges are stored as given: row dst lists src.
// The dataset has no features, labels or splits. A ".csv" file (optionally
// .gz) separates the two ids with a comma instead, and may start with a
// header line such as "source,target".
func LoadSNAP(path string) (*graph.Dataset, error) { return loadSNAP(path, 0) }

// LoadSNAPWithin is LoadSNAP with a memory budget in bytes (0:
// DefaultMaxMemory); a .npy directory reads its edges.csv with it.
func LoadSNAPWithin(path string, budget int64) (*graph.Dataset, error) { return loadSNAP(path, budget) }

// loadSNAP is LoadSNAP with a memory budget (0: DefaultMaxMemory): the
// parsed edges are checked against it chunk by chunk as they are read,
// and the CSR before it is built.
func loadSNAP(path string, budget int64) (*graph.Dataset, error) {
	budget = graph.BudgetOr(budget)
	if _, err := graph.StatRegular(path); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	csv := filepath.Ext(strings.ToLower(strings.TrimSuffix(path, ".gz"))) == ".csv"
	form := "a SNAP edge list (\"src dst\" lines, '#' comments)"
	if csv {
		form = "a comma-separated edge list (\"src,dst\" lines, '#' comments, an optional header line)"
	}
	f, _, err := graph.OpenFile(path, "expected "+form)
	if err != nil {
		return nil, err
	}
	tf, err := wrapText(f, path)
	if err != nil {
		return nil, err
	}
	defer tf.Close()

	r := &snapEdges{name: tf.name, csv: csv, budget: budget, maxID: -1, headerNodes: -1}
	lines, err := scanChunks(tf, graph.NumWorkers(), r.chunk)
	if err != nil {
		return nil, err
	}
	if lines == 0 {
		return nil, graph.FileErrorf(graph.ErrFormat, path, 0, 0, "empty file; expected %s", form)
	}
	parts, maxID := r.parts, r.maxID
	var m int64
	for _, p := range parts {
		m += int64(len(p) / 2)
	}
	n := max(maxID+1, r.headerNodes, 0)
	if n > maxSparseFactor*m+1<<20 || n > graph.MaxNodes {
		if r.headerNodes > maxID+1 {
			return nil, graph.FileErrorf(graph.ErrRange, path, r.headerLine, 0, "the \"# Nodes: %d\" header declares far more nodes than the %d edges call for; fix or drop the header", r.headerNodes, m)
		}
		line := findID(parts, maxID)
		return nil, graph.FileErrorf(graph.ErrRange, path, 0, 0, "node id %d (edge %d) is far larger than the %d edges call for; "+
			"SNAP ids must be dense 0..N-1: renumber the nodes", maxID, line, m)
	}
	if err := graph.CheckBudget(path, fmt.Sprintf("%d edges of %d nodes", m, n), m*bytesPerEdgeCSR+n*8, budget); err != nil {
		return nil, err
	}
	base := filepath.Base(path)
	for _, ext := range []string{".gz", ".txt", ".el", ".edges", ".tsv", ".csv"} {
		base = strings.TrimSuffix(base, ext)
	}
	return &graph.Dataset{
		Name:     base,
		NumNodes: int(n),
		Graph:    edgesToCSR(int(n), parts, m),
		Source:   path,
		Citation: graph.KnownCitation(strings.TrimSuffix(base, "-undirected")),
	}, nil
}

// snapEdges gathers the edges of an edge list's chunks as scanChunks
// parses them in parallel.
type snapEdges struct {
	name   string // the file, for errors
	csv    bool   // "src,dst" lines (else "src dst")
	budget int64  // bytes the parsed edges may hold

	mu          sync.Mutex
	parts       [][]int64 // per chunk: interleaved src, dst
	maxID       int64
	headerNodes int64 // the largest "# Nodes: N" (-1: none)
	headerLine  int   // its line
	held        int64 // bytes of parsed edges
}

// chunk parses one chunk of lines and adds its edges, within the budget.
func (r *snapEdges) chunk(c *lineChunk) error {
	out := make([]int64, 0, len(c.data)/6)
	data, ln := c.data, c.line
	local := int64(-1)
	var fb [3][]byte
	for len(data) > 0 {
		var line []byte
		line, data = nextLine(data)
		t := bytes.TrimLeft(line, " \t")
		switch {
		case len(t) == 0:
		case t[0] == '#' || t[0] == '%':
			if err := r.comment(t, ln); err != nil {
				return err
			}
		default:
			ids, skip, err := r.edge(t, ln, fb[:0])
			if err != nil {
				return err
			}
			if !skip {
				local = max(local, ids[0], ids[1])
				out = append(out, ids[0], ids[1])
			}
		}
		ln++
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held += int64(len(out)) * 8
	if r.held > r.budget {
		return graph.CheckBudget(r.name, fmt.Sprintf("the edges up to line %d", ln), r.held, r.budget)
	}
	for len(r.parts) <= c.seq {
		r.parts = append(r.parts, nil)
	}
	r.parts[c.seq] = out
	r.maxID = max(r.maxID, local)
	return nil
}

// comment reads a comment line, keeping the largest "# Nodes: N" header.
func (r *snapEdges) comment(t []byte, ln int) error {
	v, ok, err := headerNodeCount(t, r.name, ln)
	if err != nil || !ok {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if v > r.headerNodes {
		r.headerNodes, r.headerLine = v, ln
	}
	return nil
}

// edge parses the edge line t (line ln); skip is true for a CSV header
// line such as "source,target".
func (r *snapEdges) edge(t []byte, ln int, fb [][]byte) (ids [2]int64, skip bool, err error) {
	var f [][]byte
	var nf int
	if r.csv {
		f, nf = splitFields(t, ',', fb)
		if nf != 2 {
			return ids, false, graph.FileErrorf(graph.ErrFormat, r.name, ln, 0, "%s, expected 2 (\"src,dst\" separated by a comma)", plural(nf, "column"))
		}
		f[0], f[1] = bytes.TrimSpace(f[0]), bytes.TrimSpace(f[1])
	} else if f, nf = splitSpace(t, fb); nf != 2 {
		return ids, false, graph.FileErrorf(graph.ErrFormat, r.name, ln, 0, "%s, expected 2 (\"src dst\" separated by a space or tab)", plural(nf, "column"))
	}
	if r.csv && ln == 1 && isHeader(f) {
		return ids, true, nil
	}
	for k := range 2 {
		v, ok := parseInt(f[k])
		if !ok {
			return ids, false, graph.FileErrorf(graph.ErrFormat, r.name, ln, k+1, "%s is not an integer node id; fix the value or regenerate the file", quoteField(f[k]))
		}
		if v < 0 {
			return ids, false, graph.FileErrorf(graph.ErrRange, r.name, ln, k+1, "negative node id %d; ids must be 0-based", v)
		}
		if v >= math.MaxInt64/2 {
			return ids, false, graph.FileErrorf(graph.ErrRange, r.name, ln, k+1, "node id %d is too large", v)
		}
		ids[k] = v
	}
	return ids, false, nil
}

// isHeader reports whether the fields of a CSV line are column names: none
// of them starts like a number.
func isHeader(f [][]byte) bool {
	for _, b := range f {
		if len(b) == 0 || b[0] >= '0' && b[0] <= '9' || b[0] == '-' || b[0] == '+' {
			return false
		}
	}
	return true
}

// headerNodeCount extracts N from a SNAP comment such as "# Nodes: N
// Edges: M" on line ln of file; ok is false for a comment without one. A
// value that is not a node count in [0, graph.MaxNodes] is an error
// naming the line (it was ignored before, so a file could declare
// -5 or 10^12 nodes and be read as if it did not).
func headerNodeCount(line []byte, file string, ln int) (n int64, ok bool, err error) {
	i := bytes.Index(line, []byte("Nodes:"))
	if i < 0 {
		return 0, false, nil
	}
	f := bytes.Fields(line[i+len("Nodes:"):])
	if len(f) == 0 {
		return 0, false, nil
	}
	v, isInt := parseInt(f[0])
	switch {
	case !isInt:
		return 0, false, graph.FileErrorf(graph.ErrFormat, file, ln, 0, "the \"# Nodes:\" header's value %s is not a node count; write a non-negative integer, or drop the header", quoteField(f[0]))
	case v < 0 || v > graph.MaxNodes:
		return 0, false, graph.FileErrorf(graph.ErrRange, file, ln, 0, "the \"# Nodes: %d\" header is outside [0, %d]; fix or drop the header", v, int64(graph.MaxNodes))
	}
	return v, true, nil
}

// findID returns the 1-based index of the first edge that uses id.
func findID(parts [][]int64, id int64) int64 {
	var e int64
	for _, p := range parts {
		for i, v := range p {
			if v == id {
				return e + int64(i/2) + 1
			}
		}
		e += int64(len(p) / 2)
	}
	return 0
}

// snapFormat is format.snap: a SNAP or comma-separated edge list.
type snapFormat struct{}

func init() { registry.Register(&snapFormat{}) }

func (*snapFormat) StrataModule() registry.ModuleInfo {
	return graph.FormatInfo("snap", "an edge list, one \"src dst\" (SNAP) or \"src,dst\" (.csv) line per edge, 0-based ids, optionally gzipped; the graph alone",
		func() *snapFormat { return &snapFormat{} })
}

func (*snapFormat) Detect(spec string, st fs.FileInfo) int {
	if graph.IsFile(st) && graph.HasExt(spec, ".txt", ".el", ".edges", ".tsv", ".edgelist", ".csv") {
		return graph.DetectSuffix
	}
	return 0
}

func (*snapFormat) Open(spec string, o graph.LoadOptions) (*graph.Dataset, error) {
	return loadSNAP(spec, o.Budget)
}

func (*snapFormat) Supports() graph.Support {
	return graph.Support{Spec: "a SNAP edge list (.txt, .txt.gz, .el, .edges, .tsv) or comma-separated .csv edge list", Budget: true, GraphOnly: true}
}
