package cache

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/graph/synth"
	"strata/core/registry"
	"strata/plugins/sampler"

	"strata/internal/floattol"
)

// randomGraph returns n nodes and m random directed edges (some nodes end
// up with no in- or out-neighbours).
func randomGraph(n, m int, seed uint64) *graph.CSR {
	r := rand.New(rand.NewPCG(seed, 1))
	edges := make([][2]int64, m)
	for i := range edges {
		edges[i] = [2]int64{int64(r.IntN(n)), int64(r.IntN(n))}
	}
	return graph.FromEdges(n, edges)
}

// denseRPR is reverse PageRank by dense power iteration: M[u][v] =
// 1/in(v) when u is an in-neighbour of v (once per edge).
func denseRPR(g *graph.CSR, init []float64, iters int, d float64) []float64 {
	n := g.NumRows
	m := make([][]float64, n)
	for i := range m {
		m[i] = make([]float64, n)
	}
	for v := 0; v < n; v++ {
		deg := g.Indptr[v+1] - g.Indptr[v]
		for e := g.Indptr[v]; e < g.Indptr[v+1]; e++ {
			m[g.Col(e)][v] += 1 / float64(deg)
		}
	}
	x := slices.Clone(init)
	for range iters {
		y := make([]float64, n)
		for u := range y {
			s := 0.0
			for v := range n {
				s += m[u][v] * x[v]
			}
			y[u] = (1-d)/float64(n) + d*s
		}
		x = y
	}
	return x
}

func TestReversePageRankDense(t *testing.T) {
	for _, tc := range []struct{ n, m, iters int }{{1, 0, 3}, {5, 8, 5}, {30, 60, 5}, {40, 200, 30}, {64, 20, 10}} {
		g := randomGraph(tc.n, tc.m, uint64(tc.n*tc.m+1))
		init := make([]float64, tc.n)
		for i := range init {
			init[i] = 1 / float64(tc.n)
			if i%3 == 0 {
				init[i] *= 3
			}
		}
		for _, in := range [][]float64{nil, init} {
			got, err := ReversePageRank(context.Background(), g, in, tc.iters, 0.85)
			if err != nil {
				t.Fatal(err)
			}
			ref := in
			if ref == nil {
				ref = make([]float64, tc.n)
				for i := range ref {
					ref[i] = 1 / float64(tc.n)
				}
			}
			want := denseRPR(g, ref, tc.iters, 0.85)
			for i := range want {
				// Each iteration sums at most n in-edges and scales twice;
				// the 0.85-damped iteration does not grow earlier errors:
				// two orders within 2γ_{iters·(n+2)} of the scores' total
				// (their magnitude, at most max(1, Σ init)).
				if math.Abs(got[i]-want[i]) > floattol.Orders(floattol.Gamma(tc.iters*(tc.n+2), floattol.UFloat64))*math.Max(1, math.Abs(want[i])) {
					t.Fatalf("n=%d m=%d: score[%d] = %v, dense reference %v", tc.n, tc.m, i, got[i], want[i])
				}
			}
		}
	}
}

// TestReversePageRankDirection checks the direction on a chain 0 -> 1 -> 2
// (edges src -> dst; node 2 samples 1, which samples 0): rank flows from
// the sampled-from end to the start, so 0 ranks highest.
func TestReversePageRankDirection(t *testing.T) {
	g := graph.FromEdges(3, [][2]int64{{0, 1}, {1, 2}}) // {src, dst}
	s, err := ReversePageRank(context.Background(), g, nil, 20, 0.85)
	if err != nil {
		t.Fatal(err)
	}
	if !(s[0] > s[1] && s[1] > s[2]) {
		t.Fatalf("scores %v: want 0 > 1 > 2", s)
	}
}

func rmat(t testing.TB, scale int) *graph.Dataset {
	t.Helper()
	d, err := synth.RMAT(synth.RMATOptions{Scale: scale, EdgeFactor: 8, FeatDim: 4, NumClasses: 2, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestScorersDeterministic(t *testing.T) {
	d := rmat(t, 13)
	for _, id := range []string{"cache.rpagerank", "cache.weighted-rpagerank", "cache.presample", "cache.degree", "cache.random"} {
		run := func(procs int) []int32 {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			p, err := registry.New[Policy](id)
			if err != nil {
				t.Fatal(err)
			}
			r, err := p.Rank(context.Background(), d)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		a, b := run(1), run(4)
		if !slices.Equal(a, b) || len(a) != d.NumNodes/10 {
			t.Errorf("%s: GOMAXPROCS 1 and 4 rank differently (or length %d)", id, len(a))
		}
	}
}

func TestWeightedRPageRankAlg1(t *testing.T) {
	d := rmat(t, 8)
	p := &WeightedRPageRank{Capacity{Capacity: 1}, PageRankOptions{Iterations: 5, Damping: 0.85}}
	got, err := p.Scores(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	n := d.NumNodes
	init := make([]float64, n)
	for i := range init {
		init[i] = 1 / float64(n)
	}
	for _, v := range d.Train {
		init[v] *= float64(n) / float64(len(d.Train))
	}
	want := denseRPR(d.Graph, init, 5, 0.85)
	for i := range want {
		// 5 iterations over at most every node (see TestReversePageRankDense).
		if math.Abs(got[i]-want[i]) > floattol.Orders(floattol.Gamma(5*(n+2), floattol.UFloat64)) {
			t.Fatalf("score[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	r, _ := p.Rank(context.Background(), d)
	if !slices.Equal(r, RankByScore(want, n)) && len(r) == n {
		// ties could differ only by rounding; check order is by score
		for i := 1; i < len(r); i++ {
			if got[r[i]] > got[r[i-1]] {
				t.Fatalf("rank not by descending score at %d", i)
			}
		}
	}
}

// TestPresampleCounts compares AccessCounts with a brute-force count: for
// every node, the number of batches whose blocks[0].Src lists it.
func TestPresampleCounts(t *testing.T) {
	d := rmat(t, 10)
	s := &sampler.Uniform{Fanouts: []int{3, 2}}
	const batch, epochs, seed = 37, 3, 11
	got, err := AccessCounts(context.Background(), d.Graph, d.Train, s, batch, epochs, seed)
	if err != nil {
		t.Fatal(err)
	}
	var srcs [][]int32
	var seen []int32
	for e := range epochs {
		err := Epoch(context.Background(), d.Graph, d.Train, s, batch, seed, e, func(_ int, b []sampler.Block) error {
			srcs = append(srcs, slices.Clone(b[0].Src))
			seen = append(seen, b[len(b)-1].Dst...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if want := (len(d.Train) + batch - 1) / batch * epochs; len(srcs) != want {
		t.Fatalf("%d batches, want %d", len(srcs), want)
	}
	slices.Sort(seen)
	for e := 0; e < epochs; e++ { // every epoch covers every training node once
		for i, v := range d.Train {
			if seen[i*epochs+e] != v {
				t.Fatalf("epoch seeds are not a permutation of the training nodes")
			}
		}
	}
	for v := range d.NumNodes {
		want := int64(0)
		for _, src := range srcs {
			for _, u := range src {
				if int(u) == v {
					want++
					break
				}
			}
		}
		if got[v] != want {
			t.Fatalf("count[%d] = %d, brute force %d", v, got[v], want)
		}
	}
	p := &Presample{Capacity: Capacity{Capacity: 1}, Epochs: epochs, Fanouts: []int{3, 2}, BatchSize: batch, Seed: seed}
	c, err := p.Counts(context.Background(), d)
	if err != nil || !slices.Equal(c, got) {
		t.Fatalf("Presample.Counts differs from AccessCounts: %v", err)
	}
	r, _ := p.Rank(context.Background(), d)
	for i := 1; i < len(r); i++ {
		if c[r[i]] > c[r[i-1]] {
			t.Fatalf("presample rank not by count at %d", i)
		}
	}
}

func TestHitCurve(t *testing.T) {
	r := &Reads{Counts: []int64{5, 0, 3, 2, 0, 0, 0, 0, 0, 0}, Total: 10}
	rank := []int32{0, 2, 3, 1, 4, 5, 6, 7, 8, 9}
	got := r.Curve(rank, []float64{0, 10, 20, 30, 100})
	want := []float64{0, 0.5, 0.8, 1, 1}
	for i := range want {
		// Integer hits over an integer total, divided once: correctly
		// rounded, as the literals.
		if got[i] != want[i] {
			t.Fatalf("Reads.Curve = %v, want %v", got, want)
		}
	}
}

func TestCapacityBytes(t *testing.T) {
	d := rmat(t, 8) // 256 nodes, 4 features = 16 bytes a row
	for _, tc := range []struct {
		bytes int64
		want  int
	}{{16, 1}, {100, 6}, {1 << 30, 256}} {
		p := &Degree{Capacity{Capacity: 0.5, CapacityBytes: tc.bytes}}
		r, err := p.Rank(context.Background(), d)
		if err != nil || len(r) != tc.want {
			t.Errorf("capacity_bytes %d: %d rows (%v), want %d", tc.bytes, len(r), err, tc.want)
		}
	}
	d.FeatDim, d.Features = 0, nil
	if _, err := (&RPageRank{Capacity{CapacityBytes: 64}, PageRankOptions{5, 0.85}}).Rank(context.Background(), d); err == nil || !strings.Contains(err.Error(), "no features") {
		t.Errorf("capacity_bytes without features: %v", err)
	}
	if err := (&Capacity{CapacityBytes: -1}).Validate(); err == nil {
		t.Error("negative capacity_bytes accepted")
	}
}

// refLRU is a slice-based LRU (most recent last).
type refLRU struct {
	k    int
	list []int32
}

func (r *refLRU) access(ids []int32) (hits int) {
	for _, v := range ids {
		if i := slices.Index(r.list, v); i >= 0 {
			hits++
			r.list = append(slices.Delete(r.list, i, i+1), v)
			continue
		}
		if r.k == 0 {
			continue
		}
		if len(r.list) == r.k {
			r.list = r.list[1:]
		}
		r.list = append(r.list, v)
	}
	return hits
}

// refClock is a CLOCK with the textbook loop, on explicit slices.
type refClock struct {
	node []int32
	ref  []bool
	hand int
}

func (r *refClock) access(ids []int32) (hits int) {
	for _, v := range ids {
		if i := slices.Index(r.node, v); i >= 0 {
			hits++
			r.ref[i] = true
			continue
		}
		if len(r.node) == 0 {
			continue
		}
		for {
			if r.node[r.hand] == -1 || !r.ref[r.hand] {
				break
			}
			r.ref[r.hand] = false
			r.hand = (r.hand + 1) % len(r.node)
		}
		r.node[r.hand], r.ref[r.hand] = v, false
		r.hand = (r.hand + 1) % len(r.node)
	}
	return hits
}

func TestDynamic(t *testing.T) {
	d := dataset()
	d.FeatDim = 1
	d.Features = make([]float32, 10)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, capa := range []float64{0, 0.1, 0.3, 0.5, 1} {
		lru := &LRU{Capacity: Capacity{Capacity: capa}}
		clk := &Clock{Capacity: Capacity{Capacity: capa}}
		if err := lru.Init(d); err != nil {
			t.Fatal(err)
		}
		if err := clk.Init(d); err != nil {
			t.Fatal(err)
		}
		k := int(capa * 10)
		rl := &refLRU{k: k}
		rc := &refClock{node: slices.Repeat([]int32{-1}, k), ref: make([]bool, k)}
		for range 200 {
			ids := make([]int32, rng.IntN(6))
			for i := range ids {
				ids[i] = int32(min(rng.IntN(10), rng.IntN(10))) // skewed
			}
			if a, b := lru.Access(ids), rl.access(ids); a != b {
				t.Fatalf("capacity %v: LRU hits %d, reference %d", capa, a, b)
			}
			if a, b := clk.Access(ids), rc.access(ids); a != b {
				t.Fatalf("capacity %v: CLOCK hits %d, reference %d", capa, a, b)
			}
		}
	}
	var _ Dynamic = (*LRU)(nil)
	var _ Dynamic = (*Clock)(nil)
	for _, id := range []string{"cache.lru", "cache.clock"} {
		if _, err := registry.New[Dynamic](id); err != nil {
			t.Error(err)
		}
	}
}

func BenchmarkReversePageRank(b *testing.B) {
	d := rmat(b, 16)
	b.ResetTimer()
	for range b.N {
		if _, err := ReversePageRank(context.Background(), d.Graph, nil, 5, 0.85); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(5*d.Graph.NNZ())*float64(b.N)/b.Elapsed().Seconds(), "edges/s")
}
