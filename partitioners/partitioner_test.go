package partitioners

import (
	"context"
	"slices"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/registry"
)

// skewed returns an n-node graph where node i has i%7 in-edges plus a hub
// (node 0) with n in-edges, so edge balance differs from node balance.
func skewed(n int) *graph.CSR {
	var edges [][2]int64
	for i := 0; i < n; i++ {
		for j := 0; j < i%7; j++ {
			edges = append(edges, [2]int64{int64((i + j + 1) % n), int64(i)})
		}
		edges = append(edges, [2]int64{int64(i), 0})
	}
	return graph.FromEdges(n, edges)
}

// allIDs lists every partitioner of the package.
var allIDs = []string{
	"partitioner.range", "partitioner.random", "partitioner.hash",
	"partitioner.metis", "partitioner.hongtu-2level", "partitioner.betty-reg",
}

func newPart(t *testing.T, id string) Partitioner {
	t.Helper()
	p, err := registry.New[Partitioner](id)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func counts(parts []int32, k int) []int {
	c := make([]int, k)
	for _, p := range parts {
		c[p]++
	}
	return c
}

func TestPartitionErrors(t *testing.T) {
	g := skewed(10)
	tests := []struct {
		name    string
		g       *graph.CSR
		k       int
		weights []int64
		want    string
	}{
		{"k zero", g, 0, nil, "k = 0 parts: k must be >= 1"},
		{"k negative", g, -3, nil, "k = -3"},
		{"k above n", g, 11, nil, "k = 11 parts for a graph of 10 nodes"},
		{"nil graph", nil, 2, nil, "nil graph"},
		{"short weights", g, 2, []int64{1, 2}, "2 node weights for 10 nodes"},
		{"negative weight", g, 2, []int64{1, 1, 1, -1, 1, 1, 1, 1, 1, 1}, "node 3 has negative weight -1"},
	}
	for _, id := range allIDs {
		p := newPart(t, id)
		for _, tt := range tests {
			t.Run(id+"/"+tt.name, func(t *testing.T) {
				_, err := p.Partition(context.Background(), tt.g, tt.k, tt.weights)
				if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), id+": ") {
					t.Fatalf("error = %v, want %q prefixed with %q", err, tt.want, id)
				}
			})
		}
		t.Run(id+"/cancelled", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if _, err := p.Partition(ctx, g, 2, nil); err == nil {
				t.Fatal("no error for a cancelled context")
			}
		})
	}
}

// TestPartitionCommon checks the invariants every partitioner keeps: one
// part per node, parts in [0,k), no empty part, the same result twice.
func TestPartitionCommon(t *testing.T) {
	for _, id := range allIDs {
		for _, n := range []int{1, 2, 7, 100, 1001} {
			for _, k := range []int{1, 2, 3, 7, n} {
				if k > n {
					continue
				}
				g := skewed(n)
				p := newPart(t, id)
				a, err := p.Partition(context.Background(), g, k, nil)
				if err != nil {
					t.Fatalf("%s n=%d k=%d: %v", id, n, k, err)
				}
				b, _ := newPart(t, id).Partition(context.Background(), g, k, nil)
				if len(a) != n || !slices.Equal(a, b) {
					t.Fatalf("%s n=%d k=%d: not deterministic or wrong length", id, n, k)
				}
				for i, c := range counts(a, k) {
					if c == 0 {
						t.Fatalf("%s n=%d k=%d: part %d is empty", id, n, k, i)
					}
				}
			}
		}
	}
}

func TestRangeNodes(t *testing.T) {
	for _, tt := range []struct{ n, k int }{{10, 3}, {100, 7}, {1000, 1000}, {5, 1}, {1 << 12, 64}} {
		parts, err := newPart(t, "partitioner.range").Partition(context.Background(), skewed(tt.n), tt.k, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.IsSorted(parts) {
			t.Fatalf("n=%d k=%d: ranges are not contiguous", tt.n, tt.k)
		}
		c := counts(parts, tt.k)
		if slices.Max(c)-slices.Min(c) > 1 {
			t.Fatalf("n=%d k=%d: sizes %v differ by more than one", tt.n, tt.k, c)
		}
	}
}

func TestRangeEdges(t *testing.T) {
	g := skewed(1000)
	r := &Range{Balance: "edges"}
	const k = 8
	parts, err := r.Partition(context.Background(), g, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSorted(parts) {
		t.Fatal("ranges are not contiguous")
	}
	load := make([]int64, k)
	var maxRow int64
	for i, p := range parts {
		l := g.Indptr[i+1] - g.Indptr[i]
		load[p] += l
		maxRow = max(maxRow, l)
	}
	ideal := g.NNZ() / k
	if m := slices.Max(load); m > ideal+maxRow {
		t.Fatalf("edge loads %v: max %d exceeds ideal %d + max row %d", load, m, ideal, maxRow)
	}
	// The hub (node 0, 1000 in-edges) makes the first range short by nodes.
	c := counts(parts, k)
	if c[0] >= c[k-1] {
		t.Fatalf("edge balance should shrink the hub's range: sizes %v", c)
	}
}

func TestRangeNodeWeights(t *testing.T) {
	g := skewed(10)
	w := []int64{9, 0, 0, 0, 0, 0, 0, 0, 0, 9}
	parts, err := (&Range{Balance: "nodes"}).Partition(context.Background(), g, 2, w)
	if err != nil {
		t.Fatal(err)
	}
	// Either boundary in [1,9] balances 9:9; the closest-to-half rule picks 1.
	if parts[0] != 0 || parts[9] != 1 {
		t.Fatalf("parts %v", parts)
	}
	// All-zero weights still give non-empty parts.
	parts, err = (&Range{Balance: "nodes"}).Partition(context.Background(), g, 4, make([]int64, 10))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range counts(parts, 4) {
		if c == 0 {
			t.Fatalf("part %d empty with zero weights: %v", i, parts)
		}
	}
}

func TestRangeBounds(t *testing.T) {
	tests := []struct {
		weights []int64
		k       int
		want    []int
	}{
		{[]int64{1, 1, 1, 1}, 2, []int{0, 2, 4}},
		{[]int64{1, 1, 1, 1, 1}, 2, []int{0, 2, 5}},
		{[]int64{10, 1, 1, 1, 1}, 2, []int{0, 1, 5}},
		{[]int64{1, 1, 1, 1, 10}, 2, []int{0, 4, 5}},
		{[]int64{0, 0, 0}, 3, []int{0, 1, 2, 3}},
		{[]int64{5}, 1, []int{0, 1}},
		{[]int64{1 << 60, 1 << 60, 1 << 60, 1 << 60}, 4, []int{0, 1, 2, 3, 4}},
	}
	for _, tt := range tests {
		prefix := make([]int64, len(tt.weights)+1)
		for i, w := range tt.weights {
			prefix[i+1] = prefix[i] + w
		}
		if got := RangeBounds(prefix, tt.k); !slices.Equal(got, tt.want) {
			t.Errorf("RangeBounds(%v, %d) = %v, want %v", tt.weights, tt.k, got, tt.want)
		}
	}
}

func TestRangeValidate(t *testing.T) {
	if err := (&Range{Balance: "vertices"}).Validate(); err == nil || !strings.Contains(err.Error(), `"nodes", "edges"`) {
		t.Fatalf("Validate = %v", err)
	}
	if _, err := registry.Ready(context.Background(), &Range{Balance: "x"}); err == nil || !strings.HasPrefix(err.Error(), "partitioner.range: ") {
		t.Fatalf("the lifecycle accepted a bad balance: %v", err)
	}
}

// pinnedRandom is the start of the seed-1, k=6 random partition of skewed(1001).
var pinnedRandom = []int32{0, 3, 1, 4, 4, 0, 4, 2}

func TestRandom(t *testing.T) {
	g := skewed(1001)
	const k = 6
	a, err := (&Random{Seed: 1}).Partition(context.Background(), g, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := (&Random{Seed: 1}).Partition(context.Background(), g, k, nil)
	c, _ := (&Random{Seed: 2}).Partition(context.Background(), g, k, nil)
	if !slices.Equal(a, b) {
		t.Fatal("same seed, different partition")
	}
	if slices.Equal(a, c) {
		t.Fatal("different seeds, same partition")
	}
	cnt := counts(a, k)
	if slices.Max(cnt)-slices.Min(cnt) > 1 {
		t.Fatalf("sizes %v differ by more than one", cnt)
	}
	if slices.IsSorted(a) {
		t.Fatal("random partition is sorted")
	}
	// Pinned values: the result must not change across Go versions.
	if got := a[:8]; !slices.Equal(got, pinnedRandom) {
		t.Logf("first parts: %#v", got)
		t.Fatalf("seed-1 partition changed: got %v, want %v", got, pinnedRandom)
	}
}

func TestHash(t *testing.T) {
	parts, err := (&Hash{}).Partition(context.Background(), skewed(10), 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{0, 1, 2, 0, 1, 2, 0, 1, 2, 0}; !slices.Equal(parts, want) {
		t.Fatalf("parts %v, want %v", parts, want)
	}
}

func TestRegistered(t *testing.T) {
	var ids []string
	for _, m := range registry.Namespace("partitioner") {
		ids = append(ids, m.ID)
		if m.Doc == "" {
			t.Errorf("%s has no doc", m.ID)
		}
	}
	for _, want := range allIDs {
		if !slices.Contains(ids, want) {
			t.Errorf("%s not registered (have %v)", want, ids)
		}
	}
	r := newPart(t, "partitioner.range").(*Range)
	if r.Balance != "nodes" {
		t.Fatalf("range default balance %q", r.Balance)
	}
}
