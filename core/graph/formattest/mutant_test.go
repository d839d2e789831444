package formattest

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/internal/mutanttest"
	"strata/core/registry"
)

// lines is a format: ".lines" files, the node count then "src dst" lines.
// Its flags break it.
type lines struct {
	id            string
	dropEdge      bool // loses the last edge
	ignoreBudget  bool // declares Budget but checks nothing
	bareErrors    bool // errors that name no file
	detectNothing bool // Detect never claims its files
}

func (l *lines) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: l.id, Doc: "test: node count, then src dst lines", New: func() registry.Module { c := *l; return &c }}
}

func (l *lines) Detect(spec string, st fs.FileInfo) int {
	if !l.detectNothing && st != nil && !st.IsDir() && strings.HasSuffix(spec, ".lines") {
		return graph.DetectSuffix
	}
	return 0
}

func (l *lines) Supports() graph.Support {
	return graph.Support{Spec: "a .lines file", Budget: true, GraphOnly: true}
}

func (l *lines) Open(spec string, o graph.LoadOptions) (*graph.Dataset, error) {
	fail := func(kind error, line int, msg string) error {
		if l.bareErrors {
			return errors.New(msg)
		}
		return &graph.FileError{File: spec, Line: line, Msg: msg, Err: kind}
	}
	f, err := os.Open(spec)
	if err != nil {
		return nil, fail(graph.ErrMissing, 0, err.Error())
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return nil, fail(graph.ErrFormat, 0, "empty file")
	}
	n, err := strconv.Atoi(sc.Text())
	if err != nil || n < 0 || n > 1<<30 {
		return nil, fail(graph.ErrFormat, 1, "bad node count")
	}
	if !l.ignoreBudget && int64(n)*32 > o.Budget {
		return nil, fail(graph.ErrRange, 1, "more than the memory budget")
	}
	var edges [][2]int64
	for ln := 2; sc.Scan(); ln++ {
		var s, d int64
		if _, err := fmt.Sscanf(sc.Text(), "%d %d", &s, &d); err != nil || s < 0 || d < 0 || s >= int64(n) || d >= int64(n) {
			return nil, fail(graph.ErrFormat, ln, fmt.Sprintf("bad edge %q", sc.Text()))
		}
		edges = append(edges, [2]int64{s, d})
	}
	if l.dropEdge && len(edges) > 0 {
		edges = edges[:len(edges)-1]
	}
	return &graph.Dataset{Name: "g", NumNodes: n, Graph: graph.FromEdges(n, edges), Source: spec}, nil
}

func (l *lines) Examples(dir string) ([]graph.Example, error) {
	good := filepath.Join(dir, "g.lines")
	bad := filepath.Join(dir, "bad.lines")
	huge := filepath.Join(dir, "huge.lines")
	for p, body := range map[string]string{good: "3\n0 1\n1 2\n2 0\n", bad: "3\n0 1\n1 x\n", huge: "10000000\n"} {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return nil, err
		}
	}
	want := graph.GraphOnly(&graph.Dataset{NumNodes: 3, Graph: graph.FromEdges(3, [][2]int64{{0, 1}, {1, 2}, {2, 0}})}, "g", good)
	return []graph.Example{{Name: "ring", Spec: good, Want: want},
		{Name: "bad edge", Spec: bad, Kind: graph.ErrFormat, Err: []string{bad + ":3:"}},
		{Name: "huge", Spec: huge, Kind: graph.ErrRange, Err: []string{huge, "memory budget"}, Huge: true}}, nil
}

var mutants = map[string]*lines{
	"drop-edge":      {dropEdge: true},
	"ignore-budget":  {ignoreBudget: true},
	"bare-errors":    {bareErrors: true},
	"detect-nothing": {detectNothing: true},
}

// TestCorrect runs the suite on the unbroken format.
func TestCorrect(t *testing.T) {
	if mutanttest.Name() != "" {
		t.Skip("a mutant's child")
	}
	f := &lines{id: "format.test-lines"}
	registry.Register(f)
	Test(t, f)
}

func TestMutantHelper(t *testing.T) {
	name := mutanttest.Name()
	if name == "" {
		t.Skip("run by TestMutants")
	}
	m := *mutants[name]
	m.id = "format.test-mutant"
	registry.Register(&m)
	if name == "detect-nothing" {
		registry.Register(&lines{id: "format.test-lines"}) // what its files are detected as
	}
	Test(t, &m)
}

// TestMutants checks that the suite fails each broken format where it
// should.
func TestMutants(t *testing.T) {
	mutanttest.Check(t, "TestMutantHelper", []mutanttest.Mutant{
		{Name: "drop-edge", Fail: []string{"Valid/ring"}},
		{Name: "ignore-budget", Fail: []string{"Budget/ring", "Broken/huge"}},
		{Name: "bare-errors", Fail: []string{"Broken/bad-edge", "Truncated/ring"}},
		{Name: "detect-nothing", Fail: []string{"Valid/ring"}},
	})
}
