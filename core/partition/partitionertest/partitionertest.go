// Package partitionertest is a conformance suite for partition.Partitioner.
// Test runs a partitioner made by a constructor on small graphs (a path, a
// star, random graphs, isolated nodes, an edgeless graph, an R-MAT graph,
// a bipartite block) and checks the contract of core/partition:
//
//   - every node gets a part in [0, k), for k = 1 (all zeros), a few k and
//     k = number of nodes, with and without node weights;
//   - k <= 0, k > nodes, node weights of the wrong length or negative, a
//     nil graph and a cancelled ctx are errors, not panics;
//   - the same input gives the same output (on one instance, on a fresh
//     one, with GOMAXPROCS 1 and 4), the input is not modified, and a
//     graph with 64-bit column ids is partitioned like its 32-bit twin;
//   - a bipartite (non-square) block is split by its rows, unless the
//     partitioner is partition.SquareOnly, in which case it is an error;
//   - a partition.Staged partitioner reports, on every successful call, a
//     subsequence of Stages() in order followed by exactly one "done", and
//     nothing once ReportStages(nil) was called.
//
// Beyond the interface the suite checks a convention every strata
// partitioner follows: with k <= nodes no part is empty.
package partitionertest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"strata/core/graph"
	"strata/core/graph/graphtest"
	"strata/core/partition"
)

// Test runs the suite on partitioners made by newPartitioner, which must
// return a fresh, configured (validated and provisioned) instance on every
// call.
func Test(t *testing.T, newPartitioner func() partition.Partitioner) {
	t.Run("Parts", func(t *testing.T) { testParts(t, newPartitioner) })
	t.Run("Errors", func(t *testing.T) { testErrors(t, newPartitioner) })
	t.Run("Deterministic", func(t *testing.T) { testDeterministic(t, newPartitioner) })
	t.Run("Bipartite", func(t *testing.T) { testBipartite(t, newPartitioner) })
	t.Run("Stages", func(t *testing.T) { testStages(t, newPartitioner) })
}

// call runs Partition and turns a panic into an error that says so.
func call(p partition.Partitioner, ctx context.Context, g *graph.CSR, k int, w []int64) (parts []int32, err error, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			parts, err, panicked = nil, fmt.Errorf("panic: %v", r), true
		}
	}()
	parts, err = p.Partition(ctx, g, k, w)
	return parts, err, false
}

// ks returns the part counts tried on a graph of n nodes.
func ks(n int) []int {
	var out []int
	for _, k := range []int{1, 2, 3, 7, n} {
		if k <= n && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// weights returns deterministic node weights in [0, 5] with at least one
// positive entry.
func weights(n int, seed uint64) []int64 {
	r := rand.New(rand.NewPCG(seed, 0x3e1))
	w := make([]int64, n)
	for i := range w {
		w[i] = int64(r.IntN(6))
	}
	if n > 0 {
		w[0] = 1
	}
	return w
}

// checkParts reports what is wrong with parts as a k-way partition of n
// nodes.
func checkParts(parts []int32, n, k int) error {
	if len(parts) != n {
		return fmt.Errorf("%d parts for %d nodes", len(parts), n)
	}
	size := make([]int, k)
	for i, p := range parts {
		if p < 0 || int(p) >= k {
			return fmt.Errorf("node %d is in part %d, outside [0,%d)", i, p, k)
		}
		size[p]++
	}
	if k <= n {
		if e := slices.Index(size, 0); e >= 0 {
			return fmt.Errorf("part %d of %d is empty (sizes %v)", e, k, size)
		}
	}
	return nil
}

func testParts(t *testing.T, newP func() partition.Partitioner) {
	ctx := context.Background()
	for _, gr := range graphtest.Square() {
		n := gr.G.NumRows
		for _, k := range ks(n) {
			for _, weighted := range []bool{false, true} {
				name := fmt.Sprintf("%s/k=%d", gr.Name, k)
				var w []int64
				if weighted {
					name += "/weights"
					w = weights(n, uint64(k))
				}
				t.Run(name, func(t *testing.T) {
					parts, err, _ := call(newP(), ctx, gr.G, k, w)
					if err != nil {
						t.Fatalf("Partition: %v", err)
					}
					if err := checkParts(parts, n, k); err != nil {
						t.Fatal(err)
					}
					if k == 1 && slices.ContainsFunc(parts, func(p int32) bool { return p != 0 }) {
						t.Fatalf("k = 1 but some node is not in part 0: %v", parts)
					}
				})
			}
		}
	}
}

func testErrors(t *testing.T, newP func() partition.Partitioner) {
	g := graphtest.Random(40, 200, 9, false)
	n := g.NumRows
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	bg := context.Background()
	neg := weights(n, 1)
	neg[n/2] = -1
	tests := []struct {
		name string
		ctx  context.Context
		g    *graph.CSR
		k    int
		w    []int64
	}{
		{"k=0", bg, g, 0, nil},
		{"k=-1", bg, g, -1, nil},
		{"k>n", bg, g, n + 1, nil},
		{"nil graph", bg, nil, 2, nil},
		{"short weights", bg, g, 2, weights(n-1, 1)},
		{"long weights", bg, g, 2, weights(n+1, 1)},
		{"empty weights", bg, g, 2, []int64{}},
		{"negative weight", bg, g, 2, neg},
		{"cancelled ctx", cancelled, g, 2, nil},
		{"cancelled ctx k=1", cancelled, g, 1, nil},
		{"empty graph", bg, graph.FromEdges(0, nil), 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts, err, panicked := call(newP(), tt.ctx, tt.g, tt.k, tt.w)
			if panicked {
				t.Fatalf("want an error, got %v", err)
			}
			if err == nil {
				t.Fatalf("no error (parts %v)", parts)
			}
		})
	}
}

func testDeterministic(t *testing.T, newP func() partition.Partitioner) {
	ctx := context.Background()
	for _, gr := range []graphtest.Named{
		{Name: "random", G: graphtest.Random(120, 700, 1, false)},
		{Name: "multigraph", G: graphtest.Random(60, 400, 2, true)},
		{Name: "rmat", G: graphtest.RMAT(8, 8, 4)},
	} {
		for _, k := range []int{2, 5} {
			t.Run(fmt.Sprintf("%s/k=%d", gr.Name, k), func(t *testing.T) {
				orig := graphtest.Clone(gr.G)
				w := weights(gr.G.NumRows, 7)
				wOrig := slices.Clone(w)
				p := newP()
				a, err, _ := call(p, ctx, gr.G, k, w)
				if err != nil {
					t.Fatal(err)
				}
				if !graphtest.Equal(gr.G, orig) || !slices.Equal(w, wOrig) {
					t.Fatal("Partition modified its input")
				}
				b, err, _ := call(p, ctx, gr.G, k, w)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(a, b) {
					t.Fatalf("two calls on one instance differ:\n%v\n%v", a, b)
				}
				c, err, _ := call(newP(), ctx, gr.G, k, w)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(a, c) {
					t.Fatalf("a fresh instance gives another partition:\n%v\n%v", a, c)
				}
				for _, procs := range []int{1, 4} {
					old := runtime.GOMAXPROCS(procs)
					e, err, _ := call(newP(), ctx, gr.G, k, w)
					runtime.GOMAXPROCS(old)
					if err != nil {
						t.Fatalf("GOMAXPROCS %d: %v", procs, err)
					}
					if !slices.Equal(a, e) {
						t.Fatalf("GOMAXPROCS %d gives another partition:\n%v\n%v", procs, a, e)
					}
				}
				d, err, _ := call(newP(), ctx, graphtest.Wide(gr.G), k, w)
				if err != nil {
					t.Fatalf("64-bit ids: %v", err)
				}
				if !slices.Equal(a, d) {
					t.Fatalf("64-bit column ids give another partition:\n%v\n%v", a, d)
				}
			})
		}
	}
}

func testBipartite(t *testing.T, newP func() partition.Partitioner) {
	ctx := context.Background()
	block := graphtest.Bipartite(30, 80, 150, 11)
	p := newP()
	squareOnly := partition.IsSquareOnly(p)
	for _, k := range []int{2, 4, 30} {
		t.Run(fmt.Sprintf("k=%d", k), func(t *testing.T) {
			parts, err, panicked := call(p, ctx, block, k, nil)
			if panicked {
				t.Fatal(err)
			}
			if squareOnly {
				if err == nil {
					t.Fatalf("a SquareOnly partitioner split a %dx%d block: %v", block.NumRows, block.NumCols, parts)
				}
				return
			}
			if err != nil {
				t.Fatalf("bipartite %dx%d block: %v (a partitioner that needs a square graph must implement partition.SquareOnly)", block.NumRows, block.NumCols, err)
			}
			if err := checkParts(parts, block.NumRows, k); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func testStages(t *testing.T, newP func() partition.Partitioner) {
	p := newP()
	s, ok := p.(partition.Staged)
	if !ok {
		t.Skip("not a partition.Staged")
	}
	stages := s.Stages()
	if len(stages) == 0 {
		t.Fatal("Stages() is empty")
	}
	if slices.Contains(stages, "done") {
		t.Fatalf("Stages() %v lists \"done\", which only ends a call", stages)
	}
	ctx := context.Background()
	for _, gr := range []graphtest.Named{
		{Name: "rmat", G: graphtest.RMAT(8, 8, 4)},
		{Name: "edgeless", G: graph.FromEdges(12, nil)},
	} {
		for _, k := range []int{1, 2, 4} {
			t.Run(fmt.Sprintf("%s/k=%d", gr.Name, k), func(t *testing.T) {
				var got []string
				s.ReportStages(func(stage string) { got = append(got, stage) })
				if _, err, _ := call(p, ctx, gr.G, k, nil); err != nil {
					t.Fatal(err)
				}
				if len(got) == 0 || got[len(got)-1] != "done" {
					t.Fatalf("reported %q: want the stages of the call, then \"done\"", got)
				}
				rest := stages
				for _, st := range got[:len(got)-1] {
					i := slices.Index(rest, st)
					if i < 0 {
						t.Fatalf("reported %q: %q is not one of Stages() %q after the stages before it", got, st, stages)
					}
					rest = rest[i+1:]
				}
				s.ReportStages(nil)
				got = nil
				if _, err, _ := call(p, ctx, gr.G, k, nil); err != nil {
					t.Fatal(err)
				}
				if got != nil {
					t.Fatalf("reported %q after ReportStages(nil)", got)
				}
			})
		}
	}
}
