package toyplugins

import (
	"bufio"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"strata/core/graph"
	"strata/core/registry"
	"strata/core/safefile"
)

// AdjList is format.toy-adjlist: a text file ".adj" whose first line is
// the node count n and whose other lines are "i: j k ...", the edges
// i -> j, i -> k of node i (0-based). The graph alone.
type AdjList struct{}

var _ graph.Format = (*AdjList)(nil)

func init() { registry.Register(new(AdjList)) }

// StrataModule implements registry.Module.
func (*AdjList) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: "format.toy-adjlist", New: func() registry.Module { return new(AdjList) },
		Doc: "toy: an adjacency list .adj file, the node count then \"i: j k ...\" lines"}
}

// Detect implements graph.Format.
func (*AdjList) Detect(spec string, st fs.FileInfo) int {
	if st != nil && st.Mode().IsRegular() && strings.EqualFold(filepath.Ext(spec), ".adj") {
		return graph.DetectSuffix
	}
	return 0
}

// Supports implements graph.Format.
func (*AdjList) Supports() graph.Support {
	return graph.Support{Spec: "a toy adjacency list .adj", Budget: true, GraphOnly: true}
}

// Open implements graph.Format.
func (*AdjList) Open(spec string, o graph.LoadOptions) (*graph.Dataset, error) {
	bad := func(kind error, line int, format string, args ...any) error {
		return &graph.FileError{File: spec, Line: line, Msg: fmt.Sprintf(format, args...), Err: kind}
	}
	f, _, err := graph.OpenFile(spec, "") // the read gate: no FIFO, no device
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return nil, bad(graph.ErrFormat, 0, "empty file; the first line is the node count")
	}
	n, err := strconv.ParseInt(strings.TrimSpace(sc.Text()), 10, 32)
	if err != nil || n < 0 {
		return nil, bad(graph.ErrFormat, 1, "%q is not a node count", sc.Text())
	}
	if n*40 > o.Budget {
		return nil, bad(graph.ErrRange, 1, "%d nodes would need %d bytes, more than the memory budget of %d", n, n*40, o.Budget)
	}
	var edges [][2]int64
	for ln := 2; sc.Scan(); ln++ {
		head, rest, ok := strings.Cut(sc.Text(), ":")
		ids := append([]string{head}, strings.Fields(rest)...)
		if !ok {
			return nil, bad(graph.ErrFormat, ln, "no ':' after the node id; write \"i: j k ...\"")
		}
		var v [2]int64
		for k, s := range ids {
			x, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
			if err != nil || x < 0 || x >= n {
				return nil, bad(graph.ErrRange, ln, "%q is not a node id in [0,%d)", s, n)
			}
			if v[min(k, 1)] = x; k > 0 {
				edges = append(edges, v)
			}
		}
		if int64(len(edges))*16+n*40 > o.Budget {
			return nil, bad(graph.ErrRange, ln, "the edges would need more than the memory budget of %d", o.Budget)
		}
	}
	name := strings.TrimSuffix(filepath.Base(spec), filepath.Ext(spec))
	return &graph.Dataset{Name: name, NumNodes: int(n), Graph: graph.FromEdges(int(n), edges), Source: spec}, sc.Err()
}

// Examples implements graph.Exampler.
func (*AdjList) Examples(dir string) ([]graph.Example, error) {
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := safefile.WriteFile(p, []byte(body)); err != nil {
			panic(err)
		}
		return p
	}
	good := write("ring.adj", "4\n0: 1 2\n1: 2\n2: 3\n3: 0\n")
	bad := write("bad.adj", "4\n0: 1\n1: 9\n")
	huge := write("huge.adj", "2000000000\n0: 1\n")
	want := graph.GraphOnly(&graph.Dataset{NumNodes: 4, Graph: graph.FromEdges(4, [][2]int64{{0, 1}, {0, 2}, {1, 2}, {2, 3}, {3, 0}})}, "ring", good)
	return []graph.Example{{Name: "ring", Spec: good, Want: want},
		{Name: "bad id", Spec: bad, Kind: graph.ErrRange, Err: []string{bad + ":3:", `"9"`}},
		{Name: "huge", Spec: huge, Kind: graph.ErrRange, Err: []string{huge + ":1:", "memory budget"}, Huge: true}}, nil
}
