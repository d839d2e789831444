package cache

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/registry"
)

// dataset returns a 10-node dataset whose out-degrees are
// node: 0 1 2 3 4 5 6 7 8 9
// out:  1 3 0 3 1 0 0 2 0 0
func dataset() *graph.Dataset {
	edges := [][2]int64{
		{1, 0}, {1, 2}, {1, 3},
		{3, 0}, {3, 1}, {3, 2},
		{7, 5}, {7, 6},
		{0, 9}, {4, 8},
	}
	return &graph.Dataset{Name: "toy", NumNodes: 10, Graph: graph.FromEdges(10, edges)}
}

func rank(t *testing.T, id string, set func(registry.Module)) ([]int32, error) {
	t.Helper()
	p, err := registry.New[Policy](id)
	if err != nil {
		t.Fatal(err)
	}
	if set != nil {
		set(p.(registry.Module))
	}
	return p.Rank(context.Background(), dataset())
}

func TestPolicies(t *testing.T) {
	tests := []struct {
		name string
		id   string
		set  func(registry.Module)
		want []int32
	}{
		{"none", "cache.none", nil, []int32{}},
		{"degree default capacity 0.1", "cache.degree", nil, []int32{1}},
		{"degree half", "cache.degree", func(m registry.Module) { m.(*Degree).Capacity.Capacity = 0.5 }, []int32{1, 3, 7, 0, 4}},
		{"degree all, ties by id", "cache.degree", func(m registry.Module) { m.(*Degree).Capacity.Capacity = 1 }, []int32{1, 3, 7, 0, 4, 2, 5, 6, 8, 9}},
		{"degree zero", "cache.degree", func(m registry.Module) { m.(*Degree).Capacity.Capacity = 0 }, []int32{}},
		{"degree rounds down", "cache.degree", func(m registry.Module) { m.(*Degree).Capacity.Capacity = 0.29 }, []int32{1, 3}},
		{"random zero", "cache.random", func(m registry.Module) { m.(*Random).Capacity.Capacity = 0 }, []int32{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := rank(t, tt.id, tt.set)
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || !slices.Equal(got, tt.want) {
				t.Fatalf("Rank = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRandomPolicy(t *testing.T) {
	full := func(seed int64) []int32 {
		got, err := rank(t, "cache.random", func(m registry.Module) {
			m.(*Random).Capacity.Capacity, m.(*Random).Seed = 1, seed
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	a, b, c := full(7), full(7), full(8)
	if !slices.Equal(a, b) {
		t.Fatal("same seed, different ranking")
	}
	if slices.Equal(a, c) {
		t.Fatal("different seeds, same ranking")
	}
	s := slices.Clone(a)
	slices.Sort(s)
	if !slices.Equal(s, []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Fatalf("capacity 1 is not a permutation: %v", a)
	}
	half, _ := rank(t, "cache.random", func(m registry.Module) {
		m.(*Random).Capacity.Capacity, m.(*Random).Seed = 0.5, 7
	})
	if len(half) != 5 || !slices.Equal(half, a[:5]) {
		t.Fatalf("capacity 0.5 = %v, want the prefix of %v", half, a)
	}
}

func TestCapacityValidate(t *testing.T) {
	for _, c := range []float64{-0.1, 1.5, math.NaN(), math.Inf(1)} {
		err := (&Capacity{Capacity: c}).Validate()
		if err == nil || !strings.Contains(err.Error(), "must be in [0, 1]") {
			t.Errorf("capacity %v: %v", c, err)
		}
		// The lifecycle rejects it before use (Rank does not check again).
		if _, err := registry.Ready(context.Background(), &Degree{Capacity{Capacity: c}}); err == nil || !strings.HasPrefix(err.Error(), "cache.degree: capacity") {
			t.Errorf("cache.degree with capacity %v: %v", c, err)
		}
		if _, err := registry.Ready(context.Background(), &Random{Capacity: Capacity{Capacity: c}}); err == nil {
			t.Errorf("cache.random accepted capacity %v", c)
		}
	}
	for _, c := range []float64{0, 0.5, 1} {
		if err := (&Capacity{Capacity: c}).Validate(); err != nil {
			t.Errorf("capacity %v: %v", c, err)
		}
	}
}

func TestNoGraph(t *testing.T) {
	for _, id := range []string{"cache.none", "cache.degree", "cache.random"} {
		p, _ := registry.New[Policy](id)
		if _, err := p.Rank(context.Background(), &graph.Dataset{}); err == nil || !strings.Contains(err.Error(), id+": no graph") {
			t.Errorf("%s: %v", id, err)
		}
		if _, err := p.Rank(context.Background(), nil); err == nil {
			t.Errorf("%s: nil dataset accepted", id)
		}
	}
}

func TestRegistered(t *testing.T) {
	var ids []string
	for _, m := range registry.Namespace("cache") {
		ids = append(ids, m.ID)
	}
	for _, want := range []string{"cache.degree", "cache.none", "cache.random", "cache.rpagerank", "cache.weighted-rpagerank", "cache.presample", "cache.lru", "cache.clock", "cache.sieve", "cache.s3fifo"} {
		if !slices.Contains(ids, want) {
			t.Errorf("%s not registered (have %v)", want, ids)
		}
	}
}
