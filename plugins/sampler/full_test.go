package sampler

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/registry"
)

// randomGraph returns an n-node graph with m pseudo-random edges (self
// loops and duplicates included).
func randomGraph(n, m int, seed uint64) *graph.CSR {
	edges := make([][2]int64, m)
	s := seed
	next := func() int64 {
		s = s*6364136223846793005 + 1442695040888963407
		return int64((s >> 33) % uint64(n))
	}
	for i := range edges {
		edges[i] = [2]int64{next(), next()}
	}
	return graph.FromEdges(n, edges)
}

// bfs returns the sets reached in h = 0..layers in-hops from seeds.
func bfs(g *graph.CSR, seeds []int32, layers int) []map[int32]bool {
	sets := []map[int32]bool{{}}
	for _, s := range seeds {
		sets[0][s] = true
	}
	for h := 0; h < layers; h++ {
		next := maps.Clone(sets[h])
		for v := range sets[h] {
			for e := g.Indptr[v]; e < g.Indptr[v+1]; e++ {
				next[int32(g.Col(e))] = true
			}
		}
		sets = append(sets, next)
	}
	return sets
}

func setOf(ids []int32) map[int32]bool {
	m := map[int32]bool{}
	for _, v := range ids {
		m[v] = true
	}
	return m
}

func TestFullAgainstBFS(t *testing.T) {
	tests := []struct {
		name   string
		g      *graph.CSR
		seeds  []int32
		layers int
	}{
		{"one hop", randomGraph(30, 60, 1), []int32{3, 17}, 1},
		{"two hops", randomGraph(30, 60, 2), []int32{5}, 2},
		{"three hops unsorted seeds", randomGraph(50, 120, 3), []int32{40, 2, 33, 7}, 3},
		{"dense", randomGraph(12, 200, 4), []int32{0, 11}, 2},
		{"no edges", graph.FromEdges(5, nil), []int32{1, 4}, 2},
		{"no seeds", randomGraph(10, 20, 5), []int32{}, 2},
		{"path", graph.FromEdges(5, [][2]int64{{0, 1}, {1, 2}, {2, 3}, {3, 4}}), []int32{4}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := registry.New[Sampler]("sampler.full")
			if err != nil {
				t.Fatal(err)
			}
			s.(*Full).Hops = tt.layers
			blocks, err := s.Sample(context.Background(), tt.g, tt.seeds, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(blocks) != tt.layers {
				t.Fatalf("%d blocks, want %d", len(blocks), tt.layers)
			}
			sets := bfs(tt.g, tt.seeds, tt.layers)
			if !slices.Equal(blocks[tt.layers-1].Dst, tt.seeds) {
				t.Fatalf("last block Dst %v, want the seeds %v", blocks[tt.layers-1].Dst, tt.seeds)
			}
			for l, b := range blocks {
				h := tt.layers - 1 - l // hops from the seeds to b.Dst
				if !maps.Equal(setOf(b.Dst), sets[h]) || len(b.Dst) != len(sets[h]) {
					t.Fatalf("block %d Dst %v, want the %d-hop set %v", l, b.Dst, h, sets[h])
				}
				if !maps.Equal(setOf(b.Src), sets[h+1]) || len(b.Src) != len(sets[h+1]) {
					t.Fatalf("block %d Src %v, want the %d-hop set %v (no duplicates)", l, b.Src, h+1, sets[h+1])
				}
				if !slices.Equal(b.Src[:len(b.Dst)], b.Dst) {
					t.Fatalf("block %d: Src does not start with Dst", l)
				}
				if l+1 < len(blocks) && !slices.Equal(b.Dst, blocks[l+1].Src) {
					t.Fatalf("block %d Dst != block %d Src", l, l+1)
				}
				if b.Adj.NumRows != len(b.Dst) || b.Adj.NumCols != len(b.Src) {
					t.Fatalf("block %d Adj is %dx%d", l, b.Adj.NumRows, b.Adj.NumCols)
				}
				if err := b.Adj.Validate(); err != nil {
					t.Fatalf("block %d: %v", l, err)
				}
				var total int64
				for i, d := range b.Dst {
					var got, want []int32
					for e := b.Adj.Indptr[i]; e < b.Adj.Indptr[i+1]; e++ {
						got = append(got, b.Src[b.Adj.Col(e)])
					}
					for e := tt.g.Indptr[d]; e < tt.g.Indptr[d+1]; e++ {
						want = append(want, int32(tt.g.Col(e)))
					}
					if !slices.Equal(got, want) {
						t.Fatalf("block %d row of node %d: sources %v, want %v", l, d, got, want)
					}
					total += int64(len(want))
				}
				if b.NumEdges() != total {
					t.Fatalf("block %d: NumEdges %d, want %d", l, b.NumEdges(), total)
				}
			}
			again, _ := s.Sample(context.Background(), tt.g, tt.seeds, 99)
			for l := range blocks {
				if !slices.Equal(blocks[l].Src, again[l].Src) || !slices.Equal(blocks[l].Adj.Idx32, again[l].Adj.Idx32) {
					t.Fatalf("block %d differs between calls", l)
				}
			}
		})
	}
}

func TestFullErrors(t *testing.T) {
	g := randomGraph(10, 20, 1)
	tests := []struct {
		name   string
		g      *graph.CSR
		seeds  []int32
		layers int
		want   string
	}{
		{"nil graph", nil, []int32{1}, 2, "nil graph"},
		{"not square", &graph.CSR{NumRows: 2, NumCols: 3, Indptr: []int64{0, 0, 0}, Idx32: []int32{}}, []int32{0}, 1, "2 x 3"},
		{"seed out of range", g, []int32{1, 10}, 2, "seed 10 (position 1) is outside [0,10)"},
		{"negative seed", g, []int32{-1}, 2, "seed -1"},
		{"duplicate seed", g, []int32{4, 2, 4}, 2, "seed 4 is listed twice"},
		{"zero layers", g, []int32{1}, 0, "layers = 0: must be >= 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Options are checked once, by the lifecycle; the
			// arguments on every call.
			f := &Full{Hops: tt.layers}
			_, err := registry.Ready(context.Background(), f)
			if err == nil {
				_, err = f.Sample(context.Background(), tt.g, tt.seeds, 0)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "sampler.full: ") {
				t.Fatalf("error = %v, want %q", err, tt.want)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (&Full{Hops: 2}).Sample(ctx, g, []int32{1}, 0); err == nil {
		t.Fatal("no error for a cancelled context")
	}
}

func TestFullRegistered(t *testing.T) {
	info, err := registry.Lookup("sampler.full")
	if err != nil {
		t.Fatal(err)
	}
	f := info.New().(*Full)
	if f.Hops != 2 || f.Validate() != nil {
		t.Fatalf("defaults: %+v", f)
	}
}
