package cachetest

import (
	"cmp"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"strata/core/caching"
	"strata/core/graph"
	"strata/core/internal/mutanttest"
)

// scored is a Sized Scorer policy: score(i) = i mod 5 (many ties). Its
// flags break it.
type scored struct {
	f          float64
	dup        bool // ranks a node twice
	random     bool // shuffles the ranking
	noPrefix   bool // rotates the ranking by a length-dependent amount
	descTies   bool // ties by descending id
	noNilCheck bool
}

func (p *scored) SetFraction(f float64) { p.f = f }

func (p *scored) Scores(ctx context.Context, d *graph.Dataset) ([]float64, error) {
	if !p.noNilCheck && (d == nil || d.Graph == nil) {
		return nil, errors.New("no graph")
	}
	s := make([]float64, d.NumNodes)
	for i := range s {
		s[i] = float64(i % 5)
	}
	return s, ctx.Err()
}

func (p *scored) Rank(ctx context.Context, d *graph.Dataset) ([]int32, error) {
	s, err := p.Scores(ctx, d)
	if err != nil {
		return nil, err
	}
	ids := make([]int32, len(s))
	for i := range ids {
		ids[i] = int32(i)
	}
	slices.SortFunc(ids, func(a, b int32) int {
		if c := cmp.Compare(s[b], s[a]); c != 0 {
			return c
		}
		if p.descTies {
			return cmp.Compare(b, a)
		}
		return cmp.Compare(a, b)
	})
	k := int(math.Floor(p.f * float64(len(ids))))
	out := ids[:k]
	switch {
	case p.dup && k >= 2:
		out[1] = out[0]
	case p.random:
		rand.Shuffle(k, func(i, j int) { out[i], out[j] = out[j], out[i] })
	case p.noPrefix && k >= 2:
		out = append(out[k/2:], out[:k/2]...)
	}
	return out, nil
}

func newScored(p scored) func() caching.Policy {
	return func() caching.Policy { q := p; q.f = 0.1; return &q }
}

// lru is a Sized LRU cache. Its flags break it.
type lru struct {
	f         float64
	unbounded bool // ignores the capacity
	noReset   bool // Init keeps what was cached
	coldHits  bool // a first access hits
	size      int
	list      []int32 // most recent last
}

func (c *lru) SetFraction(f float64) { c.f = f }

func (c *lru) Init(d *graph.Dataset) error {
	if d == nil {
		return errors.New("no dataset")
	}
	c.size = int(math.Floor(c.f * float64(d.NumNodes)))
	if c.unbounded {
		c.size = d.NumNodes
	}
	if !c.noReset {
		c.list = c.list[:0]
	}
	return nil
}

func (c *lru) Access(ids []int32) (hits int) {
	for _, v := range ids {
		if i := slices.Index(c.list, v); i >= 0 {
			hits++
			c.list = append(slices.Delete(c.list, i, i+1), v)
			continue
		}
		if c.coldHits {
			hits++
		}
		if c.size == 0 {
			continue
		}
		if len(c.list) == c.size {
			c.list = c.list[1:]
		}
		c.list = append(c.list, v)
	}
	return hits
}

func newLRU(c lru) func() caching.Dynamic {
	return func() caching.Dynamic { d := c; d.f = 0.1; d.list = nil; return &d }
}

var policyMutants = map[string]func() caching.Policy{
	"dup":       newScored(scored{dup: true}),
	"random":    newScored(scored{random: true}),
	"no-prefix": newScored(scored{noPrefix: true}),
	"desc-ties": newScored(scored{descTies: true}),
	"nil-panic": newScored(scored{noNilCheck: true}),
}

var dynamicMutants = map[string]func() caching.Dynamic{
	"unbounded": newLRU(lru{unbounded: true}),
	"no-reset":  newLRU(lru{noReset: true}),
	"cold-hits": newLRU(lru{coldHits: true}),
}

// TestCorrect checks that the suite passes correct policies.
func TestCorrect(t *testing.T) {
	TestPolicy(t, newScored(scored{}))
	TestDynamic(t, newLRU(lru{}))
}

func TestMutantHelper(t *testing.T) {
	name := mutanttest.Name()
	if name == "" {
		t.Skip("run by TestMutants")
	}
	if p, ok := policyMutants[name]; ok {
		TestPolicy(t, p)
	} else {
		TestDynamic(t, dynamicMutants[name])
	}
}

// TestMutants checks that the suite fails each broken policy where it
// should.
func TestMutants(t *testing.T) {
	mutanttest.Check(t, "TestMutantHelper", []mutanttest.Mutant{
		{Name: "dup", Fail: []string{"Rank/rmat"}},
		{Name: "random", Fail: []string{"Rank/rmat", "Scorer/rmat"}},
		{Name: "no-prefix", Fail: []string{"Sized/rmat"}},
		{Name: "desc-ties", Fail: []string{"Scorer/rmat"}},
		{Name: "nil-panic", Fail: []string{"Errors/nil_dataset", "Errors/no_graph"}},
		{Name: "unbounded", Fail: []string{"Capacity/rmat-dataset/fraction=0.5", "Capacity/path/fraction=0"}},
		{Name: "no-reset", Fail: []string{"Access/rmat-dataset"}},
		{Name: "cold-hits", Fail: []string{"Access/path", "Capacity/path/fraction=0"}},
	})
}
