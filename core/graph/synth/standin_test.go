package synth

import (
	"errors"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"strata/core/graph"
)

// Shapes measured on real graphs (formats' catalogue) and the ends of the
// feasible range.
var testShapes = []struct {
	name  string
	shape graph.DegreeShape
}{
	{"citation", graph.DegreeShape{Top1: 0.112, Top10: 0.489}},
	{"co-purchase", graph.DegreeShape{Top1: 0.141, Top10: 0.421}},
	{"social", graph.DegreeShape{Top1: 0.230, Top10: 0.641}},
	{"web", graph.DegreeShape{Top1: 0.313, Top10: 0.573}},
	{"mild", graph.DegreeShape{Top1: 0.02, Top10: 0.15}},
	{"uniform", graph.DegreeShape{Top1: 0.01, Top10: 0.1}},
}

func TestFitDegreeShape(t *testing.T) {
	for _, c := range testShapes {
		t.Run(c.name, func(t *testing.T) {
			m, err := FitDegreeShape(c.shape)
			if err != nil {
				t.Fatal(err)
			}
			// Bisection to 100+ halvings: the shares match to a few
			// float64 roundings of the g() differences.
			if d1, d10 := m.Share(0.01)-c.shape.Top1, m.Share(0.1)-c.shape.Top10; math.Abs(d1) > 1e-9 || math.Abs(d10) > 1e-9 {
				t.Errorf("model %+v: shares %g, %g, want %g, %g", m, m.Share(0.01), m.Share(0.1), c.shape.Top1, c.shape.Top10)
			}
			if s := m.Share(1); math.Abs(s-1) > 1e-12 {
				t.Errorf("Share(1) = %g", s)
			}
			for _, u := range []float64{0, 1e-6, 0.01, 0.3, 0.5, 0.99, 1 - 1e-9} {
				if x := m.Rank(u); x < 0 || x >= 1 || (u > 0 && u < 1-1e-6 && math.Abs(m.Share(x)-u) > 1e-9) {
					t.Errorf("Rank(%g) = %g, Share of it %g", u, x, m.Share(x))
				}
			}
		})
	}
	for _, bad := range []graph.DegreeShape{{Top1: 0.005, Top10: 0.2}, {Top1: 0.2, Top10: 0.05}, {Top1: 0.5, Top10: 0.4}, {Top1: 0.02, Top10: 0.5}, {Top1: 0.1, Top10: 1.5}, {Top1: math.NaN(), Top10: 0.2}} {
		if _, err := FitDegreeShape(bad); !errors.Is(err, graph.ErrRange) {
			t.Errorf("shape %+v: err %v, want ErrRange", bad, err)
		}
	}
}

// TestChungLuDraws: the endpoints drawn land on the nodes of model rank
// below k with probability Share(k/n), so their count is binomial; the
// test allows 6 standard deviations plus the flooring of ranks to nodes.
func TestChungLuDraws(t *testing.T) {
	const n, draws = 5000, 200_000
	for _, c := range testShapes {
		t.Run(c.name, func(t *testing.T) {
			m, err := FitDegreeShape(c.shape)
			if err != nil {
				t.Fatal(err)
			}
			perm := newCyclePerm(7, streamPerm, n)
			keys := make([]uint64, draws/2)
			drawEdgeKeys(m, perm, keys, true, 7, 0)
			for _, f := range []float64{0.01, 0.1, 0.5} {
				k := int(f * n)
				top := map[uint64]bool{}
				for r := range k {
					top[perm.apply(uint64(r))] = true
				}
				hits := 0
				for _, key := range keys {
					for _, v := range []uint64{key >> 32, key & 0xffffffff} {
						if top[v] {
							hits++
						}
					}
				}
				p := m.Share(float64(k) / n)
				got := float64(hits) / draws
				// Self loops are redrawn (one endpoint of each): at most
				// the chance of a self loop, sum of squared node shares,
				// below Share(1/n).
				tol := 6*math.Sqrt(p*(1-p)/draws) + m.Share(1.0/n)
				if math.Abs(got-p) > tol {
					t.Errorf("top %g: %.4f of the endpoints, want %.4f ± %.4f", f, got, p, tol)
				}
			}
		})
	}
}

func TestCyclePerm(t *testing.T) {
	for _, n := range []int{1, 2, 3, 17, 1000, 1 << 12} {
		p := newCyclePerm(3, streamSplits, n)
		seen := make([]bool, n)
		for i := range n {
			v := p.apply(uint64(i))
			if v >= uint64(n) || seen[v] {
				t.Fatalf("n %d: %d -> %d out of range or repeated", n, i, v)
			}
			seen[v] = true
		}
	}
}

var testStandIn = StandIn{Name: "test", Nodes: 3001, Edges: 24_000, FeatDim: 6, Classes: 5,
	Train: 300, Valid: 200, Test: 1000, Shape: graph.DegreeShape{Top1: 0.141, Top10: 0.421}}

func TestGenerateStandIn(t *testing.T) {
	directed := testStandIn
	directed.Directed, directed.Shape = true, graph.DegreeShape{Top1: 0.313, Top10: 0.573}
	dense := testStandIn
	dense.Nodes, dense.Edges, dense.Train, dense.Valid, dense.Test, dense.Shape = 200, 5000, 20, 20, 100, graph.DegreeShape{Top1: 0.23, Top10: 0.641}
	cases := []struct {
		name string
		s    StandIn
		o    StandInOptions
	}{
		{"undirected", testStandIn, StandInOptions{Seed: 1}},
		{"directed", directed, StandInOptions{Seed: 2}},
		{"divided", testStandIn, StandInOptions{Divisor: 7, Seed: 3}},
		{"dense, many duplicates redrawn", dense, StandInOptions{Seed: 4}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := GenerateStandIn(c.s, c.o)
			if err != nil {
				t.Fatal(err)
			}
			want := c.s.Scaled(c.o.Divisor)
			g := d.Graph
			if int64(d.NumNodes) != want.Nodes || g.NNZ() != want.Edges || d.FeatDim != want.FeatDim || len(d.Features) != d.NumNodes*d.FeatDim {
				t.Fatalf("%d nodes, %d edges, %d features; want %d, %d, %d", d.NumNodes, g.NNZ(), d.FeatDim, want.Nodes, want.Edges, want.FeatDim)
			}
			pairs := map[[2]int32]bool{}
			for r := range g.NumRows {
				for _, c := range g.Idx32[g.Indptr[r]:g.Indptr[r+1]] {
					key := [2]int32{c, int32(r)}
					if !want.Directed && c > int32(r) {
						key = [2]int32{int32(r), c}
					}
					if c == int32(r) || pairs[key] {
						t.Fatalf("edge %d-%d is a self loop or a duplicate", c, r)
					}
					pairs[key] = true
				}
			}
			checkSplit(t, d, want)
			if sh := g.Shape(); sh.Top1 < 0.01 || sh.Top10 < sh.Top1 {
				t.Errorf("shape %+v", sh)
			}
		})
	}
}

// checkSplit checks the split sizes, order and disjointness and the labels.
func checkSplit(t *testing.T, d *graph.Dataset, want StandIn) {
	t.Helper()
	if int64(len(d.Train)) != want.Train || int64(len(d.Valid)) != want.Valid || int64(len(d.Test)) != want.Test {
		t.Errorf("split %d/%d/%d, want %d/%d/%d", len(d.Train), len(d.Valid), len(d.Test), want.Train, want.Valid, want.Test)
	}
	seen := map[int32]bool{}
	for _, part := range [][]int32{d.Train, d.Valid, d.Test} {
		if !slices.IsSorted(part) {
			t.Error("a split part is not ascending")
		}
		for _, v := range part {
			if seen[v] {
				t.Fatalf("node %d in two split parts", v)
			}
			seen[v] = true
		}
	}
	for _, l := range d.Labels {
		if l < 0 || int(l) >= want.Classes {
			t.Fatalf("label %d outside [0,%d)", l, want.Classes)
		}
	}
}

// TestStandInTopShare: the nodes of highest realised degree hold at least
// the endpoints of the model's top ranks (any set of that size holds no
// more), whose count is binomial: at least the model's share less 6
// standard deviations and the duplicates' share (each redrawn duplicate
// moves at most two of the 2m endpoints).
func TestStandInTopShare(t *testing.T) {
	s := testStandIn
	s.Nodes, s.Edges = 20_000, 160_000
	for _, c := range testShapes {
		t.Run(c.name, func(t *testing.T) {
			s.Shape = c.shape
			d, err := GenerateStandIn(s, StandInOptions{Seed: 5})
			if err != nil {
				t.Fatal(err)
			}
			m, _ := FitDegreeShape(c.shape)
			got := d.Graph.Shape()
			for _, f := range []struct{ frac, got float64 }{{0.01, got.Top1}, {0.1, got.Top10}} {
				p := m.Share(f.frac)
				draws := float64(2 * s.Edges)
				// Expected duplicates among m draws: at most m²/2 times
				// the largest key probability, 2·Share(1/n)².
				s0 := m.Share(1 / float64(s.Nodes))
				dups := float64(s.Edges) * float64(s.Edges) * s0 * s0
				floor := p - 6*math.Sqrt(p*(1-p)/draws) - 2*dups/draws
				if f.got < floor {
					t.Errorf("top %g holds %.4f of the endpoints, want >= %.4f (model %.4f)", f.frac, f.got, floor, p)
				}
			}
		})
	}
}

func TestStandInDeterministic(t *testing.T) {
	gen := func(procs int, seed uint64) *graph.Dataset {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		d, err := GenerateStandIn(testStandIn, StandInOptions{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	a, b := gen(1, 9), gen(4, 9)
	if !slices.Equal(a.Graph.Indptr, b.Graph.Indptr) || !slices.Equal(a.Graph.Idx32, b.Graph.Idx32) ||
		!slices.Equal(a.Features, b.Features) || !slices.Equal(a.Labels, b.Labels) || !slices.Equal(a.Train, b.Train) {
		t.Fatal("same stand-in and seed, different datasets under GOMAXPROCS 1 and 4")
	}
	if c := gen(2, 10); slices.Equal(a.Graph.Idx32, c.Graph.Idx32) || slices.Equal(a.Train, c.Train) {
		t.Error("different seeds give the same graph or split")
	}
}

func TestStandInBadCounts(t *testing.T) {
	cases := []struct {
		name string
		edit func(*StandIn)
		want string
	}{
		{"one node", func(s *StandIn) { s.Nodes = 1 }, "nodes outside"},
		{"too dense", func(s *StandIn) { s.Nodes, s.Edges = 100, 4000 }, "too dense"},
		{"hubs saturate", func(s *StandIn) {
			s.Nodes, s.Edges, s.Train, s.Valid, s.Test, s.Shape = 100, 2400, 10, 10, 10, graph.DegreeShape{Top1: 0.3, Top10: 0.9}
		}, "too concentrated"},
		{"split too large", func(s *StandIn) { s.Train = s.Nodes }, "does not fit"},
		{"feature overflow", func(s *StandIn) { s.Nodes, s.FeatDim = 1<<30, 1<<16 }, "too large"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := testStandIn
			c.edit(&s)
			_, err := GenerateStandIn(s, StandInOptions{})
			if !errors.Is(err, graph.ErrRange) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err %v, want ErrRange with %q", err, c.want)
			}
		})
	}
}
