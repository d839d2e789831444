package partitionertest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"strata/core/graph"
	"strata/core/internal/mutanttest"
	"strata/core/partition"
)

// modulo is a partitioner: node i in part i mod k. Its flags break it.
type modulo struct {
	outOfRange bool // the last node goes to part k
	noChecks   bool // no argument checks
	random     bool // parts rotated by a random offset
	square     bool // rejects non-square graphs without saying SquareOnly
	mutate     bool // zeroes the node weights it is given
	stages     bool // a Staged partitioner
	noDone     bool // ...that does not report "done"
	report     func(string)
}

func (m *modulo) Partition(ctx context.Context, g *graph.CSR, k int, w []int64) ([]int32, error) {
	if !m.noChecks {
		if g == nil || k <= 0 || k > g.NumRows {
			return nil, fmt.Errorf("bad input")
		}
		if w != nil && len(w) != g.NumRows {
			return nil, fmt.Errorf("bad weights")
		}
		for _, x := range w {
			if x < 0 {
				return nil, fmt.Errorf("negative weight")
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	if m.square && g.NumRows != g.NumCols {
		return nil, fmt.Errorf("not square")
	}
	if m.report != nil {
		m.report("first")
	}
	off := 0
	if m.random {
		off = rand.IntN(k)
	}
	parts := make([]int32, g.NumRows)
	for i := range parts {
		parts[i] = int32((i + off) % k)
	}
	if m.outOfRange {
		parts[len(parts)-1] = int32(k)
	}
	if m.mutate {
		clear(w)
	}
	if m.report != nil && !m.noDone {
		m.report("done")
	}
	return parts, nil
}

type staged struct{ *modulo }

func (s staged) Stages() []string            { return []string{"first", "second"} }
func (s staged) ReportStages(f func(string)) { s.report = f }

var mutants = map[string]func() partition.Partitioner{
	"out-of-range": func() partition.Partitioner { return &modulo{outOfRange: true} },
	"no-checks":    func() partition.Partitioner { return &modulo{noChecks: true} },
	"random":       func() partition.Partitioner { return &modulo{random: true} },
	"square":       func() partition.Partitioner { return &modulo{square: true} },
	"mutate":       func() partition.Partitioner { return &modulo{mutate: true} },
	"no-done":      func() partition.Partitioner { return staged{&modulo{noDone: true}} },
}

// TestCorrect checks that the suite passes correct partitioners.
func TestCorrect(t *testing.T) {
	Test(t, func() partition.Partitioner { return &modulo{} })
	Test(t, func() partition.Partitioner { return staged{&modulo{}} })
}

func TestMutantHelper(t *testing.T) {
	name := mutanttest.Name()
	if name == "" {
		t.Skip("run by TestMutants")
	}
	Test(t, mutants[name])
}

// TestMutants checks that the suite fails each broken partitioner where
// it should.
func TestMutants(t *testing.T) {
	mutanttest.Check(t, "TestMutantHelper", []mutanttest.Mutant{
		{Name: "out-of-range", Fail: []string{"Parts", "Parts/path/k=2", "Bipartite"}},
		{Name: "no-checks", Fail: []string{"Errors/k=0", "Errors/k>n", "Errors/negative_weight", "Errors/cancelled_ctx", "Errors/nil_graph"}},
		{Name: "random", Fail: []string{"Deterministic"}},
		{Name: "square", Fail: []string{"Bipartite/k=2"}},
		{Name: "mutate", Fail: []string{"Deterministic/random/k=2"}},
		{Name: "no-done", Fail: []string{"Stages/rmat/k=2"}},
	})
}
