// Package cachetest is a conformance suite for the cache policies of
// core/caching. TestPolicy checks a static caching.Policy (and, where it
// implements them, caching.Scorer and caching.Sized); TestDynamic checks
// an online caching.Dynamic. Both run small datasets: the graphs of
// graphtest.Square (structure only) and an R-MAT dataset with features and
// splits.
//
// Policy: Rank returns distinct node ids in [0, NumNodes), at most
// NumNodes of them, the same on every call and instance; a nil dataset, a
// dataset without a graph and a cancelled ctx are errors, not panics.
// Sized: SetFraction(f) ranks floor or ceil of f·NumNodes nodes (0 for 0,
// every node for 1), and the ranking at a smaller fraction is a prefix of
// the ranking at a larger one (the Policy contract: a prefix is what fits
// a smaller cache). Scorer: one finite score per node, deterministic, and
// Rank is the scores sorted descending, ties by ascending id.
//
// Dynamic: Init(nil) is an error; right after Init every first access is a
// miss (also after the cache was used); Access returns hits in [0, len(ids)];
// a trace replayed after Init gives the same hits, also on a fresh
// instance; an id accessed twice in a row hits the second time. Where the
// policy is Sized: with fraction 0 nothing hits, with fraction 1 every
// access after a warm-up pass hits, and a pass over all nodes hits at most
// the capacity f·NumNodes (rounded up).
package cachetest

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"strata/core/caching"
	"strata/core/graph"
	"strata/core/graph/graphtest"
)

// fractions are the capacities the Sized checks set.
var fractions = []float64{0, 0.05, 0.1, 0.25, 0.5, 0.9, 1}

// TestPolicy runs the suite on static policies made by newPolicy, which
// must return a fresh, configured (validated and provisioned) instance on
// every call.
func TestPolicy(t *testing.T, newPolicy func() caching.Policy) {
	t.Run("Rank", func(t *testing.T) { testRank(t, newPolicy) })
	t.Run("Errors", func(t *testing.T) { testRankErrors(t, newPolicy) })
	if _, ok := newPolicy().(caching.Sized); ok {
		t.Run("Sized", func(t *testing.T) { testSized(t, newPolicy) })
	}
	if _, ok := newPolicy().(caching.Scorer); ok {
		t.Run("Scorer", func(t *testing.T) { testScorer(t, newPolicy) })
	}
}

// rank runs Rank and turns a panic into an error that says so.
func rank(p caching.Policy, ctx context.Context, d *graph.Dataset) (ids []int32, err error, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			ids, err, panicked = nil, fmt.Errorf("panic: %v", r), true
		}
	}()
	ids, err = p.Rank(ctx, d)
	return ids, err, false
}

// CheckRanking reports what is wrong with ids as a ranking of n nodes.
func CheckRanking(ids []int32, n int) error {
	if len(ids) > n {
		return fmt.Errorf("%d ids for %d nodes", len(ids), n)
	}
	seen := make([]bool, n)
	for i, v := range ids {
		if v < 0 || int(v) >= n {
			return fmt.Errorf("position %d: node %d outside [0,%d)", i, v, n)
		}
		if seen[v] {
			return fmt.Errorf("position %d: node %d ranked twice", i, v)
		}
		seen[v] = true
	}
	return nil
}

func testRank(t *testing.T, newP func() caching.Policy) {
	ctx := context.Background()
	for _, d := range graphtest.Datasets() {
		t.Run(d.Name, func(t *testing.T) {
			orig := graphtest.Clone(d.Graph)
			p := newP()
			a, err, _ := rank(p, ctx, d)
			if err != nil {
				t.Fatal(err)
			}
			if err := CheckRanking(a, d.NumNodes); err != nil {
				t.Fatal(err)
			}
			if !graphtest.Equal(d.Graph, orig) {
				t.Fatal("Rank modified the graph")
			}
			b, err, _ := rank(p, ctx, d)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(a, b) {
				t.Fatalf("two calls on one instance differ:\n%v\n%v", a, b)
			}
			c, err, _ := rank(newP(), ctx, d)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(a, c) {
				t.Fatalf("a fresh instance ranks otherwise:\n%v\n%v", a, c)
			}
		})
	}
}

func testRankErrors(t *testing.T, newP func() caching.Policy) {
	d := graphtest.Datasets()[len(graphtest.Datasets())-1]
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	bg := context.Background()
	for _, tt := range []struct {
		name string
		ctx  context.Context
		d    *graph.Dataset
	}{
		{"nil dataset", bg, nil},
		{"no graph", bg, &graph.Dataset{Name: "x", NumNodes: 5}},
		{"cancelled ctx", cancelled, d},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newP()
			if s, ok := p.(caching.Sized); ok {
				s.SetFraction(1) // so that there is work to cancel
			}
			ids, err, panicked := rank(p, tt.ctx, tt.d)
			if panicked {
				t.Fatalf("want an error, got %v", err)
			}
			if err == nil {
				t.Fatalf("no error (ranking %v)", ids)
			}
		})
	}
}

func testSized(t *testing.T, newP func() caching.Policy) {
	ctx := context.Background()
	for _, d := range graphtest.Datasets() {
		t.Run(d.Name, func(t *testing.T) {
			n := d.NumNodes
			var prev []int32
			for _, f := range fractions {
				p := newP()
				p.(caching.Sized).SetFraction(f)
				ids, err, _ := rank(p, ctx, d)
				if err != nil {
					t.Fatalf("fraction %v: %v", f, err)
				}
				if err := CheckRanking(ids, n); err != nil {
					t.Fatalf("fraction %v: %v", f, err)
				}
				want := f * float64(n)
				if got := len(ids); float64(got) < math.Floor(want) || float64(got) > math.Ceil(want) {
					t.Fatalf("fraction %v of %d nodes: ranked %d, want %v rounded", f, n, got, want)
				}
				if len(prev) > len(ids) || !slices.Equal(prev, ids[:len(prev)]) {
					t.Fatalf("the ranking at a smaller fraction is not a prefix of the one at fraction %v:\n%v\n%v", f, prev, ids)
				}
				prev = ids
			}
		})
	}
}

func testScorer(t *testing.T, newP func() caching.Policy) {
	ctx := context.Background()
	for _, d := range graphtest.Datasets() {
		t.Run(d.Name, func(t *testing.T) {
			p := newP()
			s := p.(caching.Scorer)
			scores, err := s.Scores(ctx, d)
			if err != nil {
				t.Fatal(err)
			}
			if len(scores) != d.NumNodes {
				t.Fatalf("%d scores for %d nodes", len(scores), d.NumNodes)
			}
			for i, x := range scores {
				if math.IsNaN(x) || math.IsInf(x, 0) {
					t.Fatalf("node %d has score %v", i, x)
				}
			}
			again, err := newP().(caching.Scorer).Scores(ctx, d)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(scores, again) {
				t.Fatal("two calls give other scores")
			}
			order := make([]int32, d.NumNodes)
			for i := range order {
				order[i] = int32(i)
			}
			slices.SortFunc(order, func(a, b int32) int {
				if c := cmp.Compare(scores[b], scores[a]); c != 0 {
					return c
				}
				return cmp.Compare(a, b)
			})
			check := func(what string, p caching.Policy) {
				ids, err, _ := rank(p, ctx, d)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if len(ids) > len(order) || !slices.Equal(ids, order[:len(ids)]) {
					t.Fatalf("%s: Rank is not the scores sorted descending, ties by ascending id:\n got %v\nwant %v", what, head(ids), head(order[:min(len(ids), len(order))]))
				}
			}
			check("defaults", p)
			if _, ok := p.(caching.Sized); ok {
				for _, f := range fractions {
					q := newP()
					q.(caching.Sized).SetFraction(f)
					check(fmt.Sprintf("fraction %v", f), q)
				}
			}
		})
	}
}

func head(v []int32) []int32 { return v[:min(len(v), 20)] }

// TestDynamic runs the suite on online policies made by newDynamic, which
// must return a fresh, configured (validated and provisioned) instance on
// every call.
func TestDynamic(t *testing.T, newDynamic func() caching.Dynamic) {
	t.Run("Init", func(t *testing.T) { testInit(t, newDynamic) })
	t.Run("Access", func(t *testing.T) { testAccess(t, newDynamic) })
	if _, ok := newDynamic().(caching.Sized); ok {
		t.Run("Capacity", func(t *testing.T) { testCapacity(t, newDynamic) })
	}
}

// dynDatasets are the datasets of the Dynamic checks.
func dynDatasets() []*graph.Dataset {
	ds := graphtest.Datasets()
	return []*graph.Dataset{ds[0], ds[len(ds)-1]} // path, rmat-dataset
}

// trace returns batches of skewed node reads (low ids hotter), with
// repeats within and across batches.
func trace(n int, seed uint64) [][]int32 {
	r := rand.New(rand.NewPCG(seed, 0x7ace))
	out := make([][]int32, 20)
	for b := range out {
		out[b] = make([]int32, 1+r.IntN(3*n/2+1))
		for i := range out[b] {
			u := r.Float64()
			out[b][i] = int32(float64(n) * u * u * u)
		}
	}
	return out
}

// allNodes returns 0..n-1 in a scrambled order.
func allNodes(n int, seed uint64) []int32 {
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(i)
	}
	r := rand.New(rand.NewPCG(seed, 0xa11))
	r.Shuffle(n, func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	return ids
}

// access runs Access and checks the hit count's range.
func access(t *testing.T, c caching.Dynamic, ids []int32) int {
	t.Helper()
	h := c.Access(ids)
	if h < 0 || h > len(ids) {
		t.Fatalf("Access of %d ids: %d hits", len(ids), h)
	}
	return h
}

// replay runs Init and the trace and returns the hits of every batch.
func replay(t *testing.T, c caching.Dynamic, d *graph.Dataset, tr [][]int32) []int {
	t.Helper()
	if err := c.Init(d); err != nil {
		t.Fatal(err)
	}
	var hits []int
	for _, b := range tr {
		hits = append(hits, access(t, c, b))
	}
	return hits
}

func testInit(t *testing.T, newD func() caching.Dynamic) {
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
				t.Fatalf("Init(nil): want an error, got %v", err)
			}
		}()
		return newD().Init(nil)
	}()
	if err == nil {
		t.Fatal("Init(nil): no error")
	}
}

func testAccess(t *testing.T, newD func() caching.Dynamic) {
	for _, d := range dynDatasets() {
		t.Run(d.Name, func(t *testing.T) {
			n := d.NumNodes
			c := newD()
			if err := c.Init(d); err != nil {
				t.Fatal(err)
			}
			if h := access(t, c, nil); h != 0 {
				t.Fatalf("Access(nil) = %d", h)
			}
			if h := access(t, c, allNodes(n, 1)); h != 0 {
				t.Fatalf("first access of every node after Init: %d hits, want 0", h)
			}
			tr := trace(n, 2)
			a := replay(t, c, d, tr)
			access(t, c, allNodes(n, 3))
			// Init empties the cache, whatever it held.
			if err := c.Init(d); err != nil {
				t.Fatal(err)
			}
			if h := access(t, c, allNodes(n, 4)); h != 0 {
				t.Fatalf("after the cache was used, Init, then every node once: %d hits, want 0", h)
			}
			if b := replay(t, c, d, tr); !slices.Equal(a, b) {
				t.Fatalf("the same trace after Init gives other hits:\n%v\n%v", a, b)
			}
			if b := replay(t, newD(), d, tr); !slices.Equal(a, b) {
				t.Fatalf("a fresh instance gives other hits:\n%v\n%v", a, b)
			}
		})
	}
}

func testCapacity(t *testing.T, newD func() caching.Dynamic) {
	for _, d := range dynDatasets() {
		n := d.NumNodes
		for _, f := range fractions {
			t.Run(fmt.Sprintf("%s/fraction=%v", d.Name, f), func(t *testing.T) {
				c := newD()
				c.(caching.Sized).SetFraction(f)
				capacity := int(math.Ceil(f * float64(n))) // rounding is up to the policy
				if err := c.Init(d); err != nil {
					t.Fatal(err)
				}
				access(t, c, allNodes(n, 5))
				if h := access(t, c, allNodes(n, 6)); h > capacity {
					t.Fatalf("a second pass over the %d nodes hits %d, more than the capacity %d", n, h, capacity)
				} else if f == 1 && h != n {
					t.Fatalf("every node fits, but a second pass over them hits %d of %d", h, n)
				}
				tr := trace(n, 7)
				for i, b := range tr {
					h := access(t, c, b)
					switch {
					case f == 0 && h != 0:
						t.Fatalf("fraction 0: batch %d hits %d", i, h)
					case f == 1 && h != len(b):
						t.Fatalf("fraction 1 after a warm-up: batch %d hits %d of %d", i, h, len(b))
					}
				}
				if f*float64(n) >= 1 {
					if err := c.Init(d); err != nil {
						t.Fatal(err)
					}
					v := int32(n / 3)
					if h := access(t, c, []int32{v, v}); h != 1 {
						t.Fatalf("node %d read twice in a row after Init: %d hits, want 1", v, h)
					}
				}
			})
		}
	}
}
