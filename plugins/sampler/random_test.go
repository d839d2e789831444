package sampler

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"strata/core/graph"
	"strata/core/graph/synth"
	"strata/core/registry"
	"strata/core/sampling"
	"strata/core/sampling/samplertest"

	"strata/internal/floattol"
)

// rmatGraph returns a symmetrised R-MAT graph (no features), cached.
var rmatCache sync.Map

func rmatGraph(t testing.TB, scale int) *graph.CSR {
	if g, ok := rmatCache.Load(scale); ok {
		return g.(*graph.CSR)
	}
	d, err := synth.RMAT(synth.RMATOptions{Scale: scale, EdgeFactor: 16, Seed: 7, CentroidScale: -1})
	if err != nil {
		t.Fatal(err)
	}
	g := graph.Symmetrize(d.Graph)
	rmatCache.Store(scale, g)
	return g
}

// spreadSeeds returns n distinct node ids spread over [0, nodes).
func spreadSeeds(n, nodes int) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = int32((uint64(i)*2654435761 + 12345) % uint64(nodes))
	}
	slices.Sort(s)
	return slices.Compact(s)
}

// kind describes how a sampler's rows relate to the graph. Whether it is
// random, samples with replacement or keeps to the graph's edges is what
// it declares (sampling.CapabilitiesOf).
type kind struct {
	name    string
	s       Sampler
	fanouts []int // per block (-1: every neighbour); nil for randomwalk
	topK    int   // randomwalk
	weights bool
}

func samplerKinds() []kind {
	return []kind{
		{name: "full", s: &Full{Hops: 2}, fanouts: []int{-1, -1}},
		{name: "full one layer", s: &Full{Hops: 1}, fanouts: []int{-1}},
		{name: "uniform", s: &Uniform{Fanouts: []int{3, 5}}, fanouts: []int{3, 5}},
		{name: "uniform replace", s: &Uniform{Fanouts: []int{4, 2}, Replace: true}, fanouts: []int{4, 2}},
		{name: "uniform all+3 layers", s: &Uniform{Fanouts: []int{2, -1, 40}}, fanouts: []int{2, -1, 40}},
		{name: "khop", s: &KHop{Fanouts: []int{3, 5}}, fanouts: []int{3, 5}},
		{name: "khop one layer", s: &KHop{Fanouts: []int{40}}, fanouts: []int{40}},
		{name: "randomwalk", s: &RandomWalk{NumLayers: 2, Walks: 4, WalkLength: 3, TopK: 3, Weights: true}, topK: 3, weights: true},
		{name: "randomwalk no weights", s: &RandomWalk{NumLayers: 3, Walks: 2, WalkLength: 2, TopK: 10}, topK: 10},
	}
}

// checkBlocks verifies the documented block invariants and that every
// sampled edge exists in g, respecting the sampler's fanout rules.
func checkBlocks(t *testing.T, g *graph.CSR, seeds []int32, blocks []Block, k kind) {
	t.Helper()
	caps := sampling.CapabilitiesOf(k.s)
	if want := NumLayers(k.s); len(blocks) != want {
		t.Fatalf("%d blocks, want %d", len(blocks), want)
	}
	if !slices.Equal(blocks[len(blocks)-1].Dst, seeds) {
		t.Fatalf("last block Dst != seeds")
	}
	for l, b := range blocks {
		if len(b.Src) < len(b.Dst) || !slices.Equal(b.Src[:len(b.Dst)], b.Dst) {
			t.Fatalf("block %d: Src does not start with Dst", l)
		}
		if l+1 < len(blocks) && !slices.Equal(b.Dst, blocks[l+1].Src) {
			t.Fatalf("block %d Dst != block %d Src", l, l+1)
		}
		if len(setOf(b.Src)) != len(b.Src) {
			t.Fatalf("block %d: Src has duplicates", l)
		}
		if b.Adj.NumRows != len(b.Dst) || b.Adj.NumCols != len(b.Src) || b.Adj.Idx32 == nil && b.Adj.NNZ() > 0 {
			t.Fatalf("block %d Adj is %dx%d", l, b.Adj.NumRows, b.Adj.NumCols)
		}
		if err := b.Adj.Validate(); err != nil { // local ids in range
			t.Fatalf("block %d: %v", l, err)
		}
		if k.weights != (b.Adj.Values != nil) {
			t.Fatalf("block %d: Values = %v with weights %v", l, b.Adj.Values != nil, k.weights)
		}
		used := make([]bool, len(b.Src))
		for i, d := range b.Dst {
			// multiplicity of each in-neighbour in g
			inG := map[int32]int{}
			for e := g.Indptr[d]; e < g.Indptr[d+1]; e++ {
				inG[int32(g.Col(e))]++
			}
			deg := int(g.Indptr[d+1] - g.Indptr[d])
			lo, hi := b.Adj.Indptr[i], b.Adj.Indptr[i+1]
			got := map[int32]int{}
			var wsum float64
			for e := lo; e < hi; e++ {
				c := b.Adj.Col(e)
				used[c] = true
				got[b.Src[c]]++
				if b.Adj.Values != nil {
					wsum += float64(b.Adj.Values[e])
				}
			}
			n := int(hi - lo)
			for v, c := range got {
				if caps.Subset && inG[v] == 0 {
					t.Fatalf("block %d: sampled edge %d <- %d is not in the graph", l, d, v)
				}
				if caps.Subset && !caps.Replacement && c > inG[v] {
					t.Fatalf("block %d: node %d got neighbour %d %d times without replacement (%d in g)", l, d, v, c, inG[v])
				}
				if k.fanouts == nil && (c != 1 || v == d) {
					t.Fatalf("block %d: random-walk row of %d lists %d %d times", l, d, v, c)
				}
			}
			if k.fanouts != nil {
				f := k.fanouts[l]
				want := min(deg, f)
				switch {
				case f < 0:
					want = deg
				case caps.Replacement && deg > 0:
					want = f
				}
				if n != want {
					t.Fatalf("block %d: node %d (degree %d) has %d neighbours, want %d (fanout %d)", l, d, n, deg, want, f)
				}
			} else {
				if n > k.topK || deg > 0 && n == 0 {
					t.Fatalf("block %d: node %d has %d random-walk neighbours (top_k %d, degree %d)", l, d, n, k.topK, deg)
				}
				// n float32 weights, each within u32 of its share, summed
				// in float64.
				if b.Adj.Values != nil && n > 0 && math.Abs(wsum-1) > floattol.UFloat32+floattol.Gamma(n, floattol.UFloat64) {
					t.Fatalf("block %d: weights of node %d sum to %g", l, d, wsum)
				}
			}
		}
		for c := len(b.Dst); c < len(b.Src); c++ {
			if !used[c] {
				t.Fatalf("block %d: source %d (node %d) has no edge", l, c, b.Src[c])
			}
		}
	}
}

func TestRandomSamplersWellFormed(t *testing.T) {
	graphs := []struct {
		name  string
		g     *graph.CSR
		seeds []int32
	}{
		{"random multigraph", randomGraph(60, 400, 1), []int32{3, 17, 59, 0}},
		{"dense", randomGraph(12, 300, 4), []int32{0, 11}},
		{"rmat", rmatGraph(t, 10), spreadSeeds(100, 1024)},
		{"no edges", graph.FromEdges(5, nil), []int32{1, 4}},
		{"no seeds", randomGraph(10, 20, 5), []int32{}},
		{"path", graph.FromEdges(5, [][2]int64{{0, 1}, {1, 2}, {2, 3}, {3, 4}}), []int32{4}},
	}
	for _, k := range samplerKinds() {
		for _, gr := range graphs {
			t.Run(k.name+"/"+gr.name, func(t *testing.T) {
				for rng := uint64(0); rng < 5; rng++ {
					blocks, err := k.s.Sample(context.Background(), gr.g, gr.seeds, rng)
					if err != nil {
						t.Fatal(err)
					}
					checkBlocks(t, gr.g, gr.seeds, blocks, k)
				}
			})
		}
	}
}

// equalBlocks reports the first difference between two block lists.
func equalBlocks(a, b []Block) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d vs %d blocks", len(a), len(b))
	}
	for l := range a {
		x, y := a[l], b[l]
		switch {
		case !slices.Equal(x.Dst, y.Dst):
			return fmt.Errorf("block %d: Dst differs", l)
		case !slices.Equal(x.Src, y.Src):
			return fmt.Errorf("block %d: Src differs", l)
		case !slices.Equal(x.Adj.Indptr, y.Adj.Indptr):
			return fmt.Errorf("block %d: Indptr differs", l)
		case !slices.Equal(x.Adj.Idx32, y.Adj.Idx32):
			return fmt.Errorf("block %d: Idx32 differs", l)
		case !slices.Equal(x.Adj.Values, y.Adj.Values):
			return fmt.Errorf("block %d: Values differ", l)
		case x.Adj.NumRows != y.Adj.NumRows || x.Adj.NumCols != y.Adj.NumCols:
			return fmt.Errorf("block %d: shape differs", l)
		}
	}
	return nil
}

func TestAllNeighboursEqualsFull(t *testing.T) {
	tests := []struct {
		name  string
		g     *graph.CSR
		seeds []int32
	}{
		{"multigraph", randomGraph(50, 300, 3), []int32{40, 2, 33, 7}},
		{"rmat", rmatGraph(t, 10), spreadSeeds(50, 1024)},
		{"no edges", graph.FromEdges(5, nil), []int32{1, 4}},
	}
	for _, tt := range tests {
		full, err := (&Full{Hops: 2}).Sample(context.Background(), tt.g, tt.seeds, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []Sampler{
			&Uniform{Fanouts: []int{-1, -1}},
			&Uniform{Fanouts: []int{1 << 20, -1}},
			&KHop{Fanouts: []int{-1, -1}},
			&KHop{Fanouts: []int{-1, 1 << 20}},
		} {
			got, err := s.Sample(context.Background(), tt.g, tt.seeds, 5)
			if err != nil {
				t.Fatal(err)
			}
			if err := equalBlocks(got, full); err != nil {
				t.Errorf("%s %T%v: %v", tt.name, s, s, err)
			}
		}
	}
}

func TestDeterminism(t *testing.T) {
	g := rmatGraph(t, 12)
	seeds := spreadSeeds(1500, g.NumRows)
	for _, k := range append(samplerKinds(), kind{name: "uniform wide fanout", s: &Uniform{Fanouts: []int{10, 40}}}) {
		t.Run(k.name, func(t *testing.T) {
			var ref []Block
			for _, procs := range []int{1, 4, 2, 4} {
				old := runtime.GOMAXPROCS(procs)
				got, err := k.s.Sample(context.Background(), g, seeds, 42)
				runtime.GOMAXPROCS(old)
				if err != nil {
					t.Fatal(err)
				}
				if ref == nil {
					ref = got
					continue
				}
				if err := equalBlocks(got, ref); err != nil {
					t.Fatalf("GOMAXPROCS %d: %v", procs, err)
				}
			}
			other, err := k.s.Sample(context.Background(), g, seeds, 43)
			if err != nil {
				t.Fatal(err)
			}
			diff := equalBlocks(other, ref)
			if random := sampling.CapabilitiesOf(k.s).Random; random && diff == nil {
				t.Fatalf("rng 42 and 43 give the same blocks")
			} else if !random && diff != nil {
				t.Fatalf("a deterministic sampler: rng 42 and 43 give other blocks: %v", diff)
			}
		})
	}
}

// TestWideGraph checks that a graph with 64-bit column ids gives the same
// blocks as its 32-bit twin.
func TestWideGraph(t *testing.T) {
	g := randomGraph(80, 900, 11)
	wide := &graph.CSR{NumRows: g.NumRows, NumCols: g.NumCols, Indptr: g.Indptr, Idx64: make([]int64, len(g.Idx32))}
	for i, c := range g.Idx32 {
		wide.Idx64[i] = int64(c)
	}
	seeds := []int32{1, 5, 70, 33}
	for _, k := range samplerKinds() {
		a, err1 := k.s.Sample(context.Background(), g, seeds, 3)
		b, err2 := k.s.Sample(context.Background(), wide, seeds, 3)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if err := equalBlocks(a, b); err != nil {
			t.Errorf("%s: %v", k.name, err)
		}
	}
}

// TestUniformity checks that every in-neighbour of a node is picked with
// frequency fanout/degree: a chi-square statistic over many rng values,
// with a bound far in the tail (mean = degree-1, sd ~ sqrt(2(degree-1))).
func TestUniformity(t *testing.T) {
	tests := []struct {
		name    string
		s       Sampler
		deg, k  int
		trials  int
		replace bool
	}{
		{"uniform floyd mask", &Uniform{Fanouts: []int{10}}, 40, 10, 3000, false},
		{"uniform floyd", &Uniform{Fanouts: []int{10}}, 100, 10, 3000, false},
		{"uniform floyd large degree", &Uniform{Fanouts: []int{25}}, 5000, 25, 2000, false},
		{"uniform floyd large degree hashed", &Uniform{Fanouts: []int{40}}, 5000, 40, 1250, false},
		{"uniform floyd hashed", &Uniform{Fanouts: []int{50}}, 120, 50, 1500, false},
		{"uniform replace", &Uniform{Fanouts: []int{10}, Replace: true}, 100, 10, 3000, true},
		{"khop mask", &KHop{Fanouts: []int{10}}, 40, 10, 3000, false},
		{"khop", &KHop{Fanouts: []int{10}}, 100, 10, 3000, false},
		{"khop large degree", &KHop{Fanouts: []int{25}}, 5000, 25, 2000, false},
		{"khop near degree", &KHop{Fanouts: []int{45}}, 50, 45, 2000, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// node 0 has in-neighbours 1..deg
			edges := make([][2]int64, tt.deg)
			for i := range edges {
				edges[i] = [2]int64{int64(i + 1), 0}
			}
			g := graph.FromEdges(tt.deg+1, edges)
			counts := make([]float64, tt.deg+1)
			for r := range tt.trials {
				blocks, err := tt.s.Sample(context.Background(), g, []int32{0}, uint64(r)*0x9e3779b9+1)
				if err != nil {
					t.Fatal(err)
				}
				b := blocks[0]
				if int(b.NumEdges()) != tt.k {
					t.Fatalf("%d edges, want %d", b.NumEdges(), tt.k)
				}
				for e := range b.NumEdges() {
					counts[b.Src[b.Adj.Col(e)]]++
				}
			}
			expect := float64(tt.trials*tt.k) / float64(tt.deg)
			var chi2 float64
			for v := 1; v <= tt.deg; v++ {
				d := counts[v] - expect
				chi2 += d * d / expect
			}
			// Without replacement the per-neighbour counts are
			// hypergeometric-like with variance below the multinomial's, so
			// the usual chi-square statistic is smaller still.
			dof := float64(tt.deg - 1)
			bound := dof + 6*math.Sqrt(2*dof)
			if chi2 > bound {
				t.Fatalf("chi-square %.1f > %.1f (dof %.0f): counts %v", chi2, bound, dof, counts[1:])
			}
			// and not suspiciously perfect for a random sampler
			if chi2 < 0.05*dof && tt.k < tt.deg/2 {
				t.Fatalf("chi-square %.2f is implausibly small", chi2)
			}
		})
	}
}

// bruteWalkTop simulates the walks of row v of block l with maps and a
// full sort, as the reference for sampler.randomwalk.
func bruteWalkTop(g *graph.CSR, rng uint64, l int, v int32, walks, length, k int) ([]int32, []float32) {
	r := newRNG(rng, l, v)
	visits := map[int32]int{}
	// walks in lockstep: hop by hop, then walk by walk; -1 = stopped
	cur := make([]int32, walks)
	for w := range cur {
		cur[w] = v
	}
	for range length {
		for w := range cur {
			if cur[w] < 0 {
				continue
			}
			var nb []int32
			for e := g.Indptr[cur[w]]; e < g.Indptr[cur[w]+1]; e++ {
				nb = append(nb, int32(g.Col(e)))
			}
			if len(nb) == 0 {
				cur[w] = -1
				continue
			}
			cur[w] = nb[r.below(int64(len(nb)))]
			if cur[w] != v {
				visits[cur[w]]++
			}
		}
	}
	var nodes []int32
	for u := range visits {
		nodes = append(nodes, u)
	}
	slices.SortFunc(nodes, func(a, b int32) int {
		if visits[a] != visits[b] {
			return visits[b] - visits[a]
		}
		return int(a) - int(b)
	})
	nodes = nodes[:min(k, len(nodes))]
	total := 0
	for _, u := range nodes {
		total += visits[u]
	}
	w := make([]float32, len(nodes))
	for i, u := range nodes {
		w[i] = float32(visits[u]) / float32(total)
	}
	return nodes, w
}

func TestRandomWalkTopK(t *testing.T) {
	tests := []struct {
		name  string
		g     *graph.CSR
		seeds []int32
		rw    RandomWalk
	}{
		{"small", randomGraph(20, 60, 2), []int32{0, 5, 19}, RandomWalk{NumLayers: 2, Walks: 6, WalkLength: 3, TopK: 3, Weights: true}},
		{"ties", graph.FromEdges(6, [][2]int64{{1, 0}, {2, 0}, {3, 0}, {4, 0}, {0, 1}, {0, 2}, {0, 3}, {0, 4}, {5, 4}}), []int32{0}, RandomWalk{NumLayers: 2, Walks: 3, WalkLength: 1, TopK: 2, Weights: true}},
		{"long walks", randomGraph(40, 100, 8), []int32{1, 2, 3}, RandomWalk{NumLayers: 1, Walks: 50, WalkLength: 8, TopK: 5, Weights: true}},
		{"dead ends", graph.FromEdges(6, [][2]int64{{1, 0}, {2, 1}, {3, 0}}), []int32{0}, RandomWalk{NumLayers: 2, Walks: 10, WalkLength: 4, TopK: 10, Weights: true}},
		{"rmat", rmatGraph(t, 10), spreadSeeds(40, 1024), RandomWalk{NumLayers: 2, Walks: 10, WalkLength: 3, TopK: 5, Weights: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for rng := uint64(0); rng < 4; rng++ {
				blocks, err := tt.rw.Sample(context.Background(), tt.g, tt.seeds, rng)
				if err != nil {
					t.Fatal(err)
				}
				for l, b := range blocks {
					for i, d := range b.Dst {
						wantN, wantW := bruteWalkTop(tt.g, rng, l, d, tt.rw.Walks, tt.rw.WalkLength, tt.rw.TopK)
						var gotN []int32
						for e := b.Adj.Indptr[i]; e < b.Adj.Indptr[i+1]; e++ {
							gotN = append(gotN, b.Src[b.Adj.Col(e)])
						}
						gotW := b.Adj.Values[b.Adj.Indptr[i]:b.Adj.Indptr[i+1]]
						if !slices.Equal(gotN, wantN) || !slices.Equal(gotW, wantW) {
							t.Fatalf("rng %d block %d node %d: got %v %v, want %v %v", rng, l, d, gotN, gotW, wantN, wantW)
						}
					}
				}
			}
		})
	}
}

func TestSamplerConfigErrors(t *testing.T) {
	tests := []struct {
		id   string
		s    Sampler
		want string
	}{
		{"sampler.uniform", &Uniform{}, "fanouts is empty"},
		{"sampler.uniform", &Uniform{Fanouts: []int{10, 0}}, "fanouts[1] = 0: must be >= 1, or -1"},
		{"sampler.uniform", &Uniform{Fanouts: []int{-2}}, "fanouts[0] = -2"},
		{"sampler.khop", &KHop{Fanouts: nil}, "fanouts is empty"},
		{"sampler.khop", &KHop{Fanouts: []int{5, -7}}, "fanouts[1] = -7"},
		{"sampler.randomwalk", &RandomWalk{NumLayers: 2, Walks: 4, WalkLength: 0, TopK: 5}, "walk_length = 0: must be >= 1"},
		{"sampler.randomwalk", &RandomWalk{NumLayers: 2, Walks: 4, WalkLength: 3, TopK: 0}, "top_k = 0: must be >= 1"},
		{"sampler.randomwalk", &RandomWalk{NumLayers: 2, Walks: 0, WalkLength: 3, TopK: 5}, "walks = 0: must be >= 1"},
		{"sampler.randomwalk", &RandomWalk{NumLayers: 0, Walks: 4, WalkLength: 3, TopK: 5}, "layers = 0: must be >= 1"},
	}
	g := randomGraph(10, 20, 1)
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if err := tt.s.(registry.Validator).Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want %q", err, tt.want)
			}
			// The lifecycle rejects it before use; Sample does not check
			// its options again on every call.
			_, err := registry.Ready(context.Background(), tt.s.(registry.Module))
			if err == nil || !strings.HasPrefix(err.Error(), tt.id+": ") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("registry.Ready error = %v, want %q", err, tt.want)
			}
			_ = g
		})
	}
	// input errors are shared with sampler.full
	for _, k := range samplerKinds() {
		if _, err := k.s.Sample(context.Background(), g, []int32{4, 4}, 0); err == nil || !strings.Contains(err.Error(), "seed 4 is listed twice") {
			t.Errorf("%s: duplicate seeds: %v", k.name, err)
		}
		if _, err := k.s.Sample(context.Background(), nil, []int32{1}, 0); err == nil || !strings.Contains(err.Error(), "nil graph") {
			t.Errorf("%s: nil graph: %v", k.name, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := k.s.Sample(ctx, g, []int32{1}, 0); err == nil {
			t.Errorf("%s: no error for a cancelled context", k.name)
		}
	}
}

func TestSamplersRegistered(t *testing.T) {
	for _, tt := range []struct {
		id     string
		layers int
	}{{"sampler.full", 2}, {"sampler.uniform", 2}, {"sampler.khop", 2}, {"sampler.randomwalk", 2}} {
		info, err := registry.Lookup(tt.id)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(info.Doc, "\n") {
			t.Errorf("%s: Doc has several lines", tt.id)
		}
		m := info.New()
		if err := m.(registry.Validator).Validate(); err != nil {
			t.Errorf("%s defaults: %v", tt.id, err)
		}
		if got := NumLayers(m.(Sampler)); got != tt.layers {
			t.Errorf("%s: NumLayers = %d, want %d", tt.id, got, tt.layers)
		}
	}
	if u := (&Uniform{Fanouts: []int{5, 10, 15}}); u.Layers() != 3 {
		t.Errorf("Uniform.Layers() = %d", u.Layers())
	}
	if u := (&Uniform{}); u.Layers() != 0 {
		t.Errorf("empty Uniform.Layers() = %d", u.Layers())
	}
}

// TestConcurrentCalls runs one sampler from several goroutines (the
// scratch buffers are per call) and compares with sequential results.
func TestConcurrentCalls(t *testing.T) {
	g := rmatGraph(t, 11)
	for _, k := range samplerKinds() {
		want := make([][]Block, 6)
		for i := range want {
			b, err := k.s.Sample(context.Background(), g, spreadSeeds(300+i, g.NumRows), uint64(i))
			if err != nil {
				t.Fatal(err)
			}
			want[i] = b
		}
		var wg sync.WaitGroup
		errs := make([]error, len(want))
		for i := range want {
			wg.Add(1)
			go func() {
				defer wg.Done()
				b, err := k.s.Sample(context.Background(), g, spreadSeeds(300+i, g.NumRows), uint64(i))
				if err == nil {
					err = equalBlocks(b, want[i])
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("%s call %d: %v", k.name, i, err)
			}
		}
	}
}

// TestSubsetUniformity checks the joint distribution: every 3-subset of a
// node's 6 in-neighbours is equally likely (Floyd and rejection sampling
// both draw a uniform subset, not just uniform marginals).
func TestSubsetUniformity(t *testing.T) {
	const deg, k, trials = 6, 3, 4000
	edges := make([][2]int64, deg)
	for i := range edges {
		edges[i] = [2]int64{int64(i + 1), 0}
	}
	g := graph.FromEdges(deg+1, edges)
	for _, s := range []Sampler{&Uniform{Fanouts: []int{k}}, &KHop{Fanouts: []int{k}}} {
		counts := map[uint32]float64{}
		for r := range trials {
			blocks, err := s.Sample(context.Background(), g, []int32{0}, uint64(r)+1000)
			if err != nil {
				t.Fatal(err)
			}
			var mask uint32
			b := blocks[0]
			for e := range b.NumEdges() {
				mask |= 1 << b.Src[b.Adj.Col(e)]
			}
			counts[mask]++
		}
		const subsets = 20 // C(6,3)
		if len(counts) != subsets {
			t.Fatalf("%T: %d distinct subsets, want %d", s, len(counts), subsets)
		}
		expect := float64(trials) / subsets
		var chi2 float64
		for _, c := range counts {
			chi2 += (c - expect) * (c - expect) / expect
		}
		if dof := float64(subsets - 1); chi2 > dof+6*math.Sqrt(2*dof) {
			t.Fatalf("%T: chi-square %.1f over the subsets (dof %.0f): %v", s, chi2, dof, counts)
		}
	}
}

// TestConformance runs the sampler conformance suite on every sampler
// configuration of the table (plugins/all runs it on the registered
// defaults).
func TestConformance(t *testing.T) {
	for _, k := range samplerKinds() {
		t.Run(k.name, func(t *testing.T) {
			samplertest.Test(t, func() sampling.Sampler { return k.s })
		})
	}
}
