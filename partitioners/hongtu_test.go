package partitioners

import (
	"context"
	"slices"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/registry"
)

func TestHongTu(t *testing.T) {
	g := gridPlus(30, 30, 300, 4)
	tests := []struct{ m, k int }{{1, 1}, {1, 6}, {2, 2}, {2, 8}, {3, 9}, {4, 4}, {4, 16}}
	for _, tt := range tests {
		h := newPart(t, "partitioner.hongtu-2level").(*HongTu2Level)
		h.M, h.Seed = tt.m, 3
		parts, err := h.Partition(context.Background(), g, tt.k, nil)
		if err != nil {
			t.Fatalf("m=%d k=%d: %v", tt.m, tt.k, err)
		}
		c := tt.k / tt.m
		// Level 1: chunk / c is the METIS partition.
		level1 := make([]int32, g.NumRows)
		if tt.m > 1 {
			w := make([]int64, g.NumRows)
			for v := range w {
				w[v] = g.Indptr[v+1] - g.Indptr[v]
			}
			level1, err = (&Metis{MetisOptions: h.MetisOptions}).Partition(context.Background(), g, tt.m, w)
			if err != nil {
				t.Fatal(err)
			}
		}
		load := make([]int64, tt.k)
		last := slices.Repeat([]int32{-1}, tt.m)
		var maxRow int64
		for v, p := range parts {
			if p < 0 || int(p) >= tt.k || p/int32(c) != level1[v] {
				t.Fatalf("m=%d k=%d: node %d in chunk %d, METIS partition %d", tt.m, tt.k, v, p, level1[v])
			}
			// Level 2: id ranges, so chunk ids grow with node ids in a partition.
			if p < last[level1[v]] {
				t.Fatalf("m=%d k=%d: chunks of partition %d are not id ranges", tt.m, tt.k, level1[v])
			}
			last[level1[v]] = p
			l := g.Indptr[v+1] - g.Indptr[v]
			load[p] += l
			maxRow = max(maxRow, l)
		}
		// Edge balance inside each partition.
		for i := 0; i < tt.m; i++ {
			chunk := load[i*c : (i+1)*c]
			var total int64
			for _, x := range chunk {
				total += x
			}
			if slices.Max(chunk) > total/int64(c)+maxRow {
				t.Fatalf("m=%d k=%d: partition %d chunk loads %v", tt.m, tt.k, i, chunk)
			}
		}
		for p, n := range counts(parts, tt.k) {
			if n == 0 {
				t.Fatalf("m=%d k=%d: chunk %d empty", tt.m, tt.k, p)
			}
		}
	}
}

func TestHongTuM1IsEdgeRange(t *testing.T) {
	g := skewed(500)
	h := newPart(t, "partitioner.hongtu-2level").(*HongTu2Level)
	a, err := h.Partition(context.Background(), g, 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := (&Range{Balance: "edges"}).Partition(context.Background(), g, 5, nil)
	if !slices.Equal(a, b) {
		t.Fatal("m = 1 differs from the edge-balanced range partition")
	}
}

func TestHongTuErrors(t *testing.T) {
	g := gridPlus(6, 6, 0, 0)
	tests := []struct {
		m, k int
		want string
	}{
		{2, 5, "k = 5 chunks is not a multiple of m = 2 partitions"},
		{4, 2, "k = 2 chunks is not a multiple of m = 4"},
		{0, 4, "m = 0 partitions"},
		{2, 4, `balance = "vertices"`},
		{2, 0, "k = 0 parts"},
		{2, 40, "k = 40 parts for a graph of 36 nodes"},
	}
	for _, tt := range tests {
		h := &HongTu2Level{M: tt.m, Balance: "edges", MetisOptions: defaultMetisOptions()}
		if strings.Contains(tt.want, "balance") {
			h.Balance = "vertices"
		}
		// Options are checked once, by the lifecycle; the arguments
		// on every call.
		_, err := registry.Ready(context.Background(), h)
		if err == nil {
			_, err = h.Partition(context.Background(), g, tt.k, nil)
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "partitioner.hongtu-2level: ") {
			t.Errorf("m=%d k=%d: error %v, want %q", tt.m, tt.k, err, tt.want)
		}
	}
}

// TestHongTuBalance checks that balancing edges in METIS evens out the
// chunk loads of a skewed graph across partitions.
func TestHongTuBalance(t *testing.T) {
	// A 40x50 grid whose top 10 rows read their left neighbour 10 more
	// times (duplicate in-edges: heavy rows, the same METIS structure).
	edges := edgesOf(gridPlus(40, 50, 0, 0))
	for v := 1; v < 400; v++ {
		for r := 0; r < 10; r++ {
			edges = append(edges, [2]int64{int64(v - 1), int64(v)})
		}
	}
	g := graph.FromEdges(2000, edges)
	const m, k = 4, 8
	bal := map[string]float64{}
	for _, b := range []string{"edges", "nodes"} {
		h := &HongTu2Level{M: m, Balance: b, MetisOptions: defaultMetisOptions()}
		parts, err := h.Partition(context.Background(), g, k, nil)
		if err != nil {
			t.Fatal(err)
		}
		bal[b] = Quality(g, parts, k).EdgeBalance
	}
	t.Logf("edge balance of the chunks: %v", bal)
	if bal["edges"] > bal["nodes"] || bal["edges"] > 1.3 {
		t.Fatalf("edge balance of the chunks: %v", bal)
	}
}
