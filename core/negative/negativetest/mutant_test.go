package negativetest

import (
	"context"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"strata/core/graph"
	"strata/core/internal/mutanttest"
	"strata/core/negative"
)

// mutant is a uniform sampler (both endpoints uniform) on the base. Its
// flags break it.
type mutant struct {
	negative.Base
	ignoreSeed  bool // draws with seed 0 whatever the seed
	claimDegree bool // declares degree^0.75 for the destination, draws uniform
	skipZero    bool // never draws node 0 as the destination
	offByOne    bool // destinations in [1, n] instead of [0, n)
	dropExclude bool // ignores exclude_positives
	stateful    bool // a counter shifts the destinations from call to call
	batchSeed   bool // the streams depend on the batch length
	noKCheck    bool // k < 1 gives no pairs and no error

	n       int32
	degLaw  []float64
	counter *atomic.Int32
}

func (m *mutant) SetExclude(on bool) {
	if !m.dropExclude {
		m.Base.SetExclude(on)
	}
}

func (m *mutant) Bind(ctx context.Context, g *graph.CSR) error { return m.BindWith(ctx, m, g) }

func (m *mutant) Draw(ctx context.Context, src, dst []int32, k int, seed uint64) ([]int32, []int32, error) {
	switch {
	case m.noKCheck && k < 1:
		return nil, nil, nil
	case m.ignoreSeed:
		seed = 0
	case m.batchSeed:
		seed += uint64(len(src))
	}
	a, b, err := m.DrawWith(ctx, m, src, dst, k, seed)
	if m.offByOne {
		for j := range b {
			b[j]++
		}
	}
	return a, b, err
}

func (m *mutant) Prepare(_ context.Context, g *graph.CSR) error {
	m.n = int32(g.NumRows)
	in, out := graph.Degrees(g)
	m.degLaw = make([]float64, g.NumRows)
	sum := 0.0
	for v := range m.degLaw {
		m.degLaw[v] = math.Pow(float64(in[v]+out[v]), 0.75)
		sum += m.degLaw[v]
	}
	for v := range m.degLaw {
		m.degLaw[v] /= sum
	}
	return nil
}

func (m *mutant) DrawPair(r *rand.Rand, n, _, _ int32) (int32, int32) {
	a, b := r.Int32N(n), r.Int32N(n)
	switch {
	case m.skipZero:
		b = 1 + r.Int32N(n-1)
	case m.stateful:
		b = (b + m.counter.Add(1)) % n
	}
	return a, b
}

func (m *mutant) Marginals() (src, dst negative.Law) {
	u := make([]float64, m.n)
	for v := range u {
		u[v] = 1 / float64(m.n)
	}
	if m.claimDegree {
		return negative.Law{P: u}, negative.Law{P: m.degLaw}
	}
	return negative.Law{P: u}, negative.Law{P: u}
}

var mutants = map[string]mutant{
	"ignores-seed":    {ignoreSeed: true},
	"claims-degree":   {claimDegree: true},
	"skips-node-0":    {skipZero: true},
	"off-by-one":      {offByOne: true},
	"drops-exclusion": {dropExclude: true},
	"stateful":        {stateful: true},
	"batch-seed":      {batchSeed: true},
	"no-k-check":      {noKCheck: true},
}

func newMutant(name string) func() negative.Sampler {
	return func() negative.Sampler {
		m := mutants[name]
		m.counter = new(atomic.Int32)
		return &m
	}
}

// TestCorrect checks that the suite passes the correct sampler.
func TestCorrect(t *testing.T) { Test(t, newMutant("")) }

func TestMutantHelper(t *testing.T) {
	name := mutanttest.Name()
	if name == "" {
		t.Skip("run by TestMutants")
	}
	Test(t, newMutant(name))
}

// TestMutants checks that the suite fails each broken sampler where it
// should.
func TestMutants(t *testing.T) {
	mutanttest.Check(t, "TestMutantHelper", []mutanttest.Mutant{
		{Name: "ignores-seed", Fail: []string{"Seeds"}},
		{Name: "claims-degree", Fail: []string{"Distribution/rmat", "Distribution/isolated"}},
		{Name: "skips-node-0", Fail: []string{"Distribution/rmat"}},
		{Name: "off-by-one", Fail: []string{"Shape/rmat", "Distribution/rmat"}},
		{Name: "drops-exclusion", Fail: []string{"Exclusion"}},
		{Name: "stateful", Fail: []string{"Deterministic", "Split"}},
		{Name: "batch-seed", Fail: []string{"Split"}},
		{Name: "no-k-check", Fail: []string{"Errors/k=0", "Errors/k<0"}},
	})
}
