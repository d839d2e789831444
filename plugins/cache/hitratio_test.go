package cache

import (
	"context"
	"slices"
	"testing"

	"strata/core/registry"
	"strata/plugins/sampler"
)

// TestMeasureReads: the reads of two epochs are AccessCounts', their total
// the sum of the counts, and the kept batches the first epoch's input
// nodes (Epoch 0).
func TestMeasureReads(t *testing.T) {
	d := rmat(t, 10)
	s := &sampler.Uniform{Fanouts: []int{3, 2}}
	const batch, seed = 37, 11
	r, err := MeasureReads(context.Background(), d.Graph, d.Train, s, batch, 2, seed)
	if err != nil {
		t.Fatal(err)
	}
	counts, err := AccessCounts(context.Background(), d.Graph, d.Train, s, batch, 2, seed)
	if err != nil {
		t.Fatal(err)
	}
	var first [][]int32
	err = Epoch(context.Background(), d.Graph, d.Train, s, batch, seed, 0, func(_ int, b []sampler.Block) error {
		first = append(first, b[0].Src)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, c := range counts {
		total += c
	}
	if !slices.Equal(r.Counts, counts) || r.Total != total || !slices.EqualFunc(r.Batches, first, slices.Equal) {
		t.Fatalf("reads: counts equal %v, total %d want %d, %d batches want %d", slices.Equal(r.Counts, counts), r.Total, total, len(r.Batches), len(first))
	}
	if _, err := MeasureReads(context.Background(), d.Graph, d.Train, s, batch, 0, seed); err == nil {
		t.Error("0 epochs measured")
	}
}

// TestServedAndOracle: a hand-counted case.
func TestServedAndOracle(t *testing.T) {
	r := &Reads{Counts: []int64{1, 7, 0, 4, 2}, Total: 14}
	for _, tc := range []struct {
		rank   []int32
		served int64
	}{{nil, 0}, {[]int32{0}, 1}, {[]int32{3, 1}, 11}, {[]int32{0, 1, 2, 3, 4}, 14}} {
		if got := r.Served(tc.rank); got != tc.served {
			t.Errorf("Served(%v) = %d, want %d", tc.rank, got, tc.served)
		}
	}
	if got := r.Oracle(2); got != 11 {
		t.Errorf("Oracle(2) = %d, want 11", got)
	}
	if got := r.Ratio(7); got != 0.5 {
		t.Errorf("Ratio(7) = %v, want 0.5", got)
	}
}

// TestFullRanking: the full ranking keeps the policy's options but not its
// capacity, leaves the policy as it was, and the policy's own ranking is
// its prefix.
func TestFullRanking(t *testing.T) {
	d := rmat(t, 9)
	for _, id := range []string{"cache.degree", "cache.random", "cache.presample"} {
		p, err := registry.New[Policy](id)
		if err != nil {
			t.Fatal(err)
		}
		if rs, ok := p.(*Random); ok {
			rs.Seed = 5
		}
		before := *CapacityOf(p.(registry.Module))
		full, err := FullRanking(context.Background(), p, d)
		if err != nil {
			t.Fatal(err)
		}
		own, err := p.Rank(context.Background(), d)
		if err != nil {
			t.Fatal(err)
		}
		if len(full) != d.NumNodes || *CapacityOf(p.(registry.Module)) != before || !slices.Equal(full[:len(own)], own) {
			t.Errorf("%s: %d ranked of %d, capacity %v -> %v, own ranking a prefix: %v", id, len(full), d.NumNodes, before, *CapacityOf(p.(registry.Module)), slices.Equal(full[:len(own)], own))
		}
	}
}

// TestReplay: an online cache replays from cold on a copy, so two replays
// serve the same.
func TestReplay(t *testing.T) {
	d := rmat(t, 9)
	c, err := registry.New[Dynamic]("cache.lru")
	if err != nil {
		t.Fatal(err)
	}
	batches := [][]int32{{1, 2, 3}, {2, 3, 4}, {1, 5}}
	c.(interface{ SetBytes(int64) }).SetBytes(int64(3 * d.FeatDim * 4))
	first, err := Replay(c, d, batches)
	if err != nil {
		t.Fatal(err)
	}
	second, err := Replay(c, d, batches)
	if err != nil || first != second || first != 2 {
		t.Errorf("replays served %d and %d (%v), want 2 both times (2 and 3 in the second batch)", first, second, err)
	}
}
