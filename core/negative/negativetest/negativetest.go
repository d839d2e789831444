// Package negativetest is a conformance suite for negative.Sampler. Test
// runs a sampler made by a constructor on small graphs and checks it
// against the contract of core/negative and against the law it declares
// (negative.Describer):
//
//   - Shape: len(src)*k pairs of node ids of the graph, an endpoint whose
//     law keeps it (Keep = 1) equal to the positive's; no positives, no
//     pairs; the input is not modified;
//   - Deterministic: the same seed gives the same pairs, on the same or a
//     fresh instance, with 32- or 64-bit column ids, and after a Bind to
//     another graph and back;
//   - Split: drawing positives [0, j) with seed and [j, m) with
//     negative.Offset(seed, j) gives the pairs of one draw over [0, m),
//     and changing one positive changes no other positive's negatives;
//   - Seeds: two seeds give different pairs (most of them);
//   - Distribution: the draws of one positive match the declared laws of
//     the source and the destination by a chi-square goodness-of-fit test
//     (ChiSquare: rejected at p < Alpha = 1e-6), and a node of probability
//     0 is never drawn;
//   - Exclusion: with exclude_positives (negative.Excluder), no negative
//     is an edge of the bound graph (a→b, a listed in row b) or a self
//     loop, whether rows are sorted or not, while the same draw without
//     exclusion has some; on a graph where every pair is an edge Draw
//     fails, naming exclude_positives;
//   - Errors: k = 0 and k < 0 (naming k), mismatched lengths, ids out of
//     range, Draw before Bind, a nil, non-square or empty graph and a
//     cancelled ctx are errors, not panics.
package negativetest

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"strata/core/graph"
	"strata/core/graph/graphtest"
	"strata/core/negative"
)

// Test runs the suite on samplers made by newSampler, which must return a
// fresh, configured (validated and provisioned) instance on every call,
// with exclude_positives off.
func Test(t *testing.T, newSampler func() negative.Sampler) {
	t.Run("Shape", func(t *testing.T) { testShape(t, newSampler) })
	t.Run("Deterministic", func(t *testing.T) { testDeterministic(t, newSampler) })
	t.Run("Split", func(t *testing.T) { testSplit(t, newSampler) })
	t.Run("Seeds", func(t *testing.T) { testSeeds(t, newSampler) })
	t.Run("Distribution", func(t *testing.T) { testDistribution(t, newSampler) })
	t.Run("Exclusion", func(t *testing.T) { testExclusion(t, newSampler) })
	t.Run("Errors", func(t *testing.T) { testErrors(t, newSampler) })
}

// graphs are the suite's graphs: a skewed R-MAT graph (64 nodes, degrees
// from 1 to about 60) and an undirected random graph whose second half is
// isolated (so a degree-based law has zeros).
func graphs() []graphtest.Named {
	return []graphtest.Named{
		{Name: "rmat", G: graphtest.RMAT(6, 8, 3)},
		{Name: "isolated", G: graphtest.WithIsolated(60, 5)},
	}
}

// Edges returns up to max edges of g as positives (src[i]→dst[i], src[i]
// listed in row dst[i]), spread over the rows, in a scrambled order.
func Edges(g *graph.CSR, max int) (src, dst []int32) {
	nnz := g.NNZ()
	if nnz == 0 {
		return nil, nil
	}
	rowOf := make([]int32, nnz)
	for r := range g.NumRows {
		for e := g.Indptr[r]; e < g.Indptr[r+1]; e++ {
			rowOf[e] = int32(r)
		}
	}
	for i := range min(int64(max), nnz) {
		e := i // every edge, in order, when max >= nnz
		if int64(max) < nnz {
			e = (i*2654435761 + 12345) % nnz
		}
		src = append(src, int32(g.Col(e)))
		dst = append(dst, rowOf[e])
	}
	return src, dst
}

// bind returns a fresh sampler bound to g.
func bind(t *testing.T, newSampler func() negative.Sampler, g *graph.CSR) negative.Sampler {
	t.Helper()
	s := newSampler()
	if err := s.Bind(context.Background(), g); err != nil {
		t.Fatalf("Bind: %v", err)
	}
	return s
}

// draw runs Draw and turns a panic into an error that says so.
func draw(s negative.Sampler, ctx context.Context, src, dst []int32, k int, seed uint64) (nsrc, ndst []int32, err error) {
	defer func() {
		if r := recover(); r != nil {
			nsrc, ndst, err = nil, nil, fmt.Errorf("panic: %v", r)
		}
	}()
	return s.Draw(ctx, src, dst, k, seed)
}

// mustDraw draws or fails t.
func mustDraw(t *testing.T, s negative.Sampler, src, dst []int32, k int, seed uint64) (nsrc, ndst []int32) {
	t.Helper()
	nsrc, ndst, err := draw(s, context.Background(), src, dst, k, seed)
	if err != nil {
		t.Fatalf("Draw(%d positives, k=%d, seed=%d): %v", len(src), k, seed, err)
	}
	if len(nsrc) != len(src)*k || len(ndst) != len(src)*k {
		t.Fatalf("Draw(%d positives, k=%d): %d sources and %d destinations, want %d each", len(src), k, len(nsrc), len(ndst), len(src)*k)
	}
	return nsrc, ndst
}

// laws returns s's declared laws, or fails t.
func laws(t *testing.T, s negative.Sampler, n int) (src, dst negative.Law) {
	t.Helper()
	d, ok := s.(negative.Describer)
	if !ok {
		t.Fatalf("%T does not declare its law (negative.Describer): every negative sampler must, for this suite", s)
	}
	src, dst = d.Marginals()
	for _, l := range []struct {
		name string
		law  negative.Law
	}{{"source", src}, {"destination", dst}} {
		if err := checkLaw(l.law, n); err != nil {
			t.Fatalf("the declared law of the %s: %v", l.name, err)
		}
	}
	return src, dst
}

// checkLaw checks that l is a distribution over n nodes.
func checkLaw(l negative.Law, n int) error {
	if !(l.Keep >= 0 && l.Keep <= 1) {
		return fmt.Errorf("Keep = %v, not in [0, 1]", l.Keep)
	}
	if l.Keep == 1 {
		return nil
	}
	if len(l.P) != n {
		return fmt.Errorf("P has %d entries for %d nodes", len(l.P), n)
	}
	sum := 0.0
	for v, p := range l.P {
		if !(p >= 0) || math.IsInf(p, 0) {
			return fmt.Errorf("P[%d] = %v", v, p)
		}
		sum += p
	}
	// n additions of values <= 1 round by at most n·eps.
	if math.Abs(sum-1) > float64(n+1)*0x1p-52 {
		return fmt.Errorf("P sums to %v, not 1", sum)
	}
	return nil
}

// onGraphs runs f in a subtest per graph of graphs(), with a fresh
// sampler bound to it and its declared laws.
func onGraphs(t *testing.T, newSampler func() negative.Sampler, f func(t *testing.T, g *graph.CSR, s negative.Sampler, lsrc, ldst negative.Law)) {
	for _, gr := range graphs() {
		t.Run(gr.Name, func(t *testing.T) {
			s := bind(t, newSampler, gr.G)
			lsrc, ldst := laws(t, s, gr.G.NumRows)
			f(t, gr.G, s, lsrc, ldst)
		})
	}
}

func testShape(t *testing.T, newSampler func() negative.Sampler) {
	onGraphs(t, newSampler, func(t *testing.T, g *graph.CSR, s negative.Sampler, lsrc, ldst negative.Law) {
		src, dst := Edges(g, 40)
		src0, dst0 := slices.Clone(src), slices.Clone(dst)
		for _, k := range []int{1, 3} {
			nsrc, ndst := mustDraw(t, s, src, dst, k, 7)
			if !slices.Equal(src, src0) || !slices.Equal(dst, dst0) {
				t.Fatalf("Draw modified the positives")
			}
			for j := range nsrc {
				i := j / k
				if nsrc[j] < 0 || int(nsrc[j]) >= g.NumRows || ndst[j] < 0 || int(ndst[j]) >= g.NumRows {
					t.Fatalf("k=%d: negative %d is (%d, %d), outside [0, %d)", k, j, nsrc[j], ndst[j], g.NumRows)
				}
				if lsrc.Keep == 1 && nsrc[j] != src[i] || ldst.Keep == 1 && ndst[j] != dst[i] {
					t.Fatalf("k=%d: negative %d of positive (%d, %d) is (%d, %d): the law keeps the positive's endpoint", k, j, src[i], dst[i], nsrc[j], ndst[j])
				}
			}
		}
		nsrc, ndst, err := draw(s, context.Background(), nil, nil, 2, 1)
		if err != nil || len(nsrc) != 0 || len(ndst) != 0 {
			t.Errorf("Draw of no positives: %d, %d pairs, %v; want none and no error", len(nsrc), len(ndst), err)
		}
	})
}

func testDeterministic(t *testing.T, newSampler func() negative.Sampler) {
	g := graphs()[0].G
	src, dst := Edges(g, 50)
	s := bind(t, newSampler, g)
	a1, b1 := mustDraw(t, s, src, dst, 4, 11)
	a2, b2 := mustDraw(t, s, src, dst, 4, 11)
	if !slices.Equal(a1, a2) || !slices.Equal(b1, b2) {
		t.Fatalf("two draws with the same seed differ")
	}
	for _, c := range []struct {
		name string
		s    func() negative.Sampler
	}{
		{"fresh instance", func() negative.Sampler { return bind(t, newSampler, g) }},
		{"64-bit ids", func() negative.Sampler { return bind(t, newSampler, graphtest.Wide(g)) }},
		{"rebound", func() negative.Sampler {
			r := bind(t, newSampler, graphs()[1].G)
			if err := r.Bind(context.Background(), g); err != nil {
				t.Fatalf("Bind again: %v", err)
			}
			return r
		}},
	} {
		a, b := mustDraw(t, c.s(), src, dst, 4, 11)
		if !slices.Equal(a, a1) || !slices.Equal(b, b1) {
			t.Errorf("%s: the same seed gives other pairs", c.name)
		}
	}
}

func testSplit(t *testing.T, newSampler func() negative.Sampler) {
	g := graphs()[0].G
	src, dst := Edges(g, 60)
	m, k, seed := len(src), 3, uint64(5)
	s := bind(t, newSampler, g)
	a, b := mustDraw(t, s, src, dst, k, seed)
	for _, j := range []int{1, m / 3, m - 1} {
		a0, b0 := mustDraw(t, s, src[:j], dst[:j], k, seed)
		a1, b1 := mustDraw(t, s, src[j:], dst[j:], k, negative.Offset(seed, j))
		if !slices.Equal(slices.Concat(a0, a1), a) || !slices.Equal(slices.Concat(b0, b1), b) {
			t.Errorf("positives [0,%d) with seed and [%d,%d) with negative.Offset(seed, %d) differ from one draw of [0,%d)", j, j, m, j, m)
		}
	}
	// Another positive 0 leaves the others' negatives alone.
	src2, dst2 := slices.Clone(src), slices.Clone(dst)
	src2[0], dst2[0] = src[m-1], dst[m-1]
	a2, b2 := mustDraw(t, s, src2, dst2, k, seed)
	if !slices.Equal(a2[k:], a[k:]) || !slices.Equal(b2[k:], b[k:]) {
		t.Errorf("changing positive 0 changed the negatives of other positives")
	}
}

func testSeeds(t *testing.T, newSampler func() negative.Sampler) {
	g := graphs()[0].G
	src, dst := Edges(g, 64)
	s := bind(t, newSampler, g)
	a1, b1 := mustDraw(t, s, src, dst, 4, 1)
	a2, b2 := mustDraw(t, s, src, dst, 4, 2)
	same := 0
	for j := range a1 {
		if a1[j] == a2[j] && b1[j] == b2[j] {
			same++
		}
	}
	// Any law that draws a node from 64 (or over 30 with edges) repeats a
	// pair far less often than half the time.
	if same > len(a1)/2 {
		t.Errorf("seeds 1 and 2 give %d of %d pairs alike: the draw ignores the seed", same, len(a1))
	}
}

// drawsPerTest is the number of negatives the distribution test draws
// for one positive: at least 5 expected per bin for bins of probability
// 1/8000, and well under a second per sampler.
const drawsPerTest = 40000

func testDistribution(t *testing.T, newSampler func() negative.Sampler) {
	onGraphs(t, newSampler, func(t *testing.T, g *graph.CSR, s negative.Sampler, lsrc, ldst negative.Law) {
		e1, e2 := Edges(g, 1)
		ps, pd := e1[0], e2[0]
		const k = 8
		m := drawsPerTest / k
		src, dst := slices.Repeat([]int32{ps}, m), slices.Repeat([]int32{pd}, m)
		nsrc, ndst := mustDraw(t, s, src, dst, k, 3)
		for _, c := range []struct {
			name string
			law  negative.Law
			kept int32
			got  []int32
		}{{"source", lsrc, ps, nsrc}, {"destination", ldst, pd, ndst}} {
			obs := make([]int, g.NumRows)
			for _, v := range c.got {
				obs[v]++
			}
			stat, crit, df, err := ChiSquare(obs, Expected(c.law, c.kept, g.NumRows))
			if err != nil {
				t.Errorf("%s of positive (%d, %d): %v", c.name, ps, pd, err)
				continue
			}
			t.Logf("%s: chi-square %.1f, df %d, critical %.1f", c.name, stat, df, crit)
		}
	})
}

// Expected returns the probability of each of n nodes under l for a
// positive whose endpoint is kept.
func Expected(l negative.Law, kept int32, n int) []float64 {
	p := make([]float64, n)
	if l.Keep < 1 {
		for v := range p {
			p[v] = (1 - l.Keep) * l.P[v]
		}
	}
	p[kept] += l.Keep
	return p
}

// Alpha is the significance level of ChiSquare: a correct sampler fails
// it with probability 1e-6 (and, the suite's seeds being fixed, the same
// way on every run).
const Alpha = 1e-6

// minExpected is the smallest expected count of a bin (the usual rule of
// validity of the chi-square approximation).
const minExpected = 5

// ChiSquare tests counts obs against probabilities p (same length,
// summing to 1): categories are merged in order into bins of expected
// count >= 5 (the remainder into the last bin), and the statistic
// sum (O-E)²/E is compared with the (1 - Alpha) quantile of the
// chi-square distribution with bins-1 degrees of freedom (gonum's
// distuv.ChiSquared). A category of probability 0 with a count is an
// error of its own. With a single bin there is nothing to test beyond
// that (df = 0).
func ChiSquare(obs []int, p []float64) (stat, critical float64, df int, err error) {
	total := 0
	for _, o := range obs {
		total += o
	}
	var eb, ob []float64
	var e, o float64
	for v := range obs {
		if p[v] == 0 && obs[v] > 0 {
			return 0, 0, 0, fmt.Errorf("node %d drawn %d times, but its declared probability is 0", v, obs[v])
		}
		e += p[v] * float64(total)
		o += float64(obs[v])
		if e >= minExpected {
			eb, ob = append(eb, e), append(ob, o)
			e, o = 0, 0
		}
	}
	if len(eb) == 0 {
		eb, ob = []float64{0}, []float64{0}
	}
	eb[len(eb)-1] += e
	ob[len(ob)-1] += o
	for b := range eb {
		d := ob[b] - eb[b]
		stat += d * d / eb[b]
	}
	df = len(eb) - 1
	if df == 0 {
		return stat, 0, 0, nil
	}
	critical = distuv.ChiSquared{K: float64(df)}.Quantile(1 - Alpha)
	if stat > critical {
		return stat, critical, df, fmt.Errorf("chi-square %.1f > %.1f (df %d, p < %g): the draws do not follow the declared law", stat, critical, df, Alpha)
	}
	return stat, critical, df, nil
}

// excluded reports whether a→b is an edge of g or a self loop.
func excluded(g *graph.CSR, a, b int32) bool {
	if a == b {
		return true
	}
	for e := g.Indptr[b]; e < g.Indptr[b+1]; e++ {
		if g.Col(e) == int64(a) {
			return true
		}
	}
	return false
}

// unsorted returns g with every row reversed (the same edges).
func unsorted(g *graph.CSR) *graph.CSR {
	u := graphtest.Clone(g)
	for r := range u.NumRows {
		slices.Reverse(u.Idx32[u.Indptr[r]:u.Indptr[r+1]])
	}
	return u
}

// excluding returns a fresh sampler with exclude_positives set, bound to
// g.
func excluding(t *testing.T, newSampler func() negative.Sampler, g *graph.CSR) negative.Sampler {
	t.Helper()
	s := newSampler()
	x, ok := s.(negative.Excluder)
	if !ok {
		t.Fatalf("%T has no exclude_positives (negative.Excluder): embed negative.Base", s)
	}
	x.SetExclude(true)
	if err := s.Bind(context.Background(), g); err != nil {
		t.Fatalf("Bind with exclude_positives: %v", err)
	}
	return s
}

func testExclusion(t *testing.T, newSampler func() negative.Sampler) {
	// 20 nodes, about 100 directed edges: a quarter of the pairs.
	g := graphtest.Random(20, 110, 9, false)
	src, dst := Edges(g, int(g.NNZ()))
	const k, seed = 5, 13
	hits := 0
	a, b := mustDraw(t, bind(t, newSampler, g), src, dst, k, seed)
	for j := range a {
		if excluded(g, a[j], b[j]) {
			hits++
		}
	}
	if hits == 0 {
		t.Fatalf("without exclusion no negative of %d is an edge or a self loop: the test graph cannot show exclusion", len(a))
	}
	for _, c := range []graphtest.Named{{Name: "sorted", G: g}, {Name: "unsorted rows", G: unsorted(g)}, {Name: "64-bit ids", G: graphtest.Wide(unsorted(g))}} {
		a, b := mustDraw(t, excluding(t, newSampler, c.G), src, dst, k, seed)
		for j := range a {
			if excluded(g, a[j], b[j]) {
				t.Fatalf("%s: with exclude_positives, negative %d of positive (%d, %d) is (%d, %d), an edge or a self loop", c.Name, j, src[j/k], dst[j/k], a[j], b[j])
			}
		}
	}
	// Every pair an edge: nothing is left to draw.
	var all [][2]int64
	for u := range 5 {
		for v := range 5 {
			all = append(all, [2]int64{int64(u), int64(v)})
		}
	}
	full := graph.FromEdges(5, all)
	fs, fd := Edges(full, 3)
	_, _, err := draw(excluding(t, newSampler, full), context.Background(), fs, fd, 2, 1)
	if err == nil || strings.Contains(err.Error(), "panic") || !strings.Contains(err.Error(), "exclude_positives") {
		t.Errorf("Draw with exclude_positives on a complete graph: %v; want an error naming exclude_positives", err)
	}
}

func testErrors(t *testing.T, newSampler func() negative.Sampler) {
	g := graphs()[0].G
	n := int32(g.NumRows)
	src, dst := Edges(g, 10)
	bad := func(i int, v int32) []int32 { c := slices.Clone(src); c[i] = v; return c }
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	bg := context.Background()
	for _, c := range []struct {
		name     string
		ctx      context.Context
		src, dst []int32
		k        int
		want     string // a fragment the error must hold
	}{
		{"k=0", bg, src, dst, 0, "k = 0"},
		{"k<0", bg, src, dst, -2, "k = -2"},
		{"lengths", bg, src, dst[:5], 1, ""},
		{"src<0", bg, bad(3, -1), dst, 1, ""},
		{"src=n", bg, bad(3, n), dst, 1, ""},
		{"dst=n", bg, src, bad(2, n), 1, ""},
		{"cancelled", cancelled, src, dst, 1, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := bind(t, newSampler, g)
			_, _, err := draw(s, c.ctx, c.src, c.dst, c.k, 1)
			if err == nil || strings.Contains(err.Error(), "panic") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Draw: %v; want an error (holding %q)", err, c.want)
			}
		})
	}
	t.Run("unbound", func(t *testing.T) {
		if _, _, err := draw(newSampler(), bg, src, dst, 1, 1); err == nil || strings.Contains(err.Error(), "panic") {
			t.Errorf("Draw before Bind: %v; want an error", err)
		}
	})
	for _, c := range []graphtest.Named{{Name: "nil"}, {Name: "non-square", G: graphtest.Bipartite(5, 7, 10, 1)}, {Name: "no nodes", G: graph.FromEdges(0, nil)}} {
		t.Run("bind "+c.Name, func(t *testing.T) {
			if err := bindErr(newSampler(), c.G); err == nil || strings.Contains(err.Error(), "panic") {
				t.Errorf("Bind: %v; want an error", err)
			}
		})
	}
}

// bindErr runs Bind and turns a panic into an error that says so.
func bindErr(s negative.Sampler, g *graph.CSR) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return s.Bind(context.Background(), g)
}
