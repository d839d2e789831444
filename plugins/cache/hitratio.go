package cache

import (
	"context"
	"fmt"
	"reflect"

	"strata/core/graph"
	"strata/core/registry"
	"strata/core/sampling"
)

// This file is the one hit-ratio computation (tiering Fig. 7): the reads
// of sampled epochs, the full ranking of a static policy and the reads a
// prefix of it serves, and the replay through an online cache. `strata
// hitratio` (its curves and traffic table) and the experiment kind
// hitratio (experiments/runner) both call it.

// Reads are the feature reads of sampled epochs: an access is one
// occurrence of a node among a batch's input nodes (blocks[0].Src).
type Reads struct {
	// Batches are the input nodes of every batch of the FIRST epoch, in
	// order (what a cache of that epoch is replayed with).
	Batches [][]int32
	// Counts are the accesses of every node over all the epochs.
	Counts []int64
	// Total is the sum of Counts.
	Total int64
}

// MeasureReads runs epochs sampling epochs of s over seeds (Epoch, epochs
// 0..epochs-1, seed seed) on g and records their reads.
func MeasureReads(ctx context.Context, g *graph.CSR, seeds []int32, s sampling.Sampler, batchSize, epochs int, seed uint64) (*Reads, error) {
	if epochs < 1 {
		return nil, fmt.Errorf("%d epochs: must be >= 1", epochs)
	}
	return readEpochs(ctx, g, seeds, s, batchSize, epochs, seed, true)
}

// readEpochs is MeasureReads; keep = false records no batches.
func readEpochs(ctx context.Context, g *graph.CSR, seeds []int32, s sampling.Sampler, batchSize, epochs int, seed uint64, keep bool) (*Reads, error) {
	r := &Reads{Counts: make([]int64, g.NumRows)}
	for e := range epochs {
		err := Epoch(ctx, g, seeds, s, batchSize, seed, e, func(_ int, b []sampling.Block) error {
			if len(b) == 0 {
				return nil
			}
			if keep && e == 0 {
				r.Batches = append(r.Batches, b[0].Src)
			}
			for _, v := range b[0].Src {
				r.Counts[v]++
			}
			r.Total += int64(len(b[0].Src))
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Served returns the accesses that fall on the nodes of rank (a cache
// holding exactly them).
func (r *Reads) Served(rank []int32) int64 {
	var hits int64
	for _, v := range rank {
		hits += r.Counts[v]
	}
	return hits
}

// Oracle returns the accesses the k nodes read most serve: the most any
// static cache of k rows serves.
func (r *Reads) Oracle(k int) int64 { return r.Served(RankByScore(r.Counts, k)) }

// Curve returns, for each percentage p in pcts, the share of all
// accesses served by the first floor(p/100 · N) nodes of rank (N nodes,
// the rows of a cache of capacity p/100: Capacity.Count); a rank shorter
// than that is used whole.
func (r *Reads) Curve(rank []int32, pcts []float64) []float64 {
	out := make([]float64, len(pcts))
	for i, p := range pcts {
		k := min(len(rank), (&Capacity{Capacity: p / 100}).Count(len(r.Counts)))
		out[i] = r.Ratio(r.Served(rank[:k]))
	}
	return out
}

// Ratio returns hits as a share of all accesses (0 without accesses).
func (r *Reads) Ratio(hits int64) float64 {
	if r.Total == 0 {
		return 0
	}
	return float64(hits) / float64(r.Total)
}

// CapacityOf returns the Capacity a policy module embeds (nil for none).
func CapacityOf(m registry.Module) *Capacity {
	v := reflect.ValueOf(m)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	f := v.Elem().FieldByName("Capacity")
	if !f.IsValid() || f.Type() != reflect.TypeFor[Capacity]() {
		return nil
	}
	return f.Addr().Interface().(*Capacity)
}

// FullRanking ranks every node with a copy of pol whose capacity is all
// the nodes (its other options as they are): the ranking of a cache of k
// rows is its prefix of length k. pol is not modified.
func FullRanking(ctx context.Context, pol Policy, d *graph.Dataset) ([]int32, error) {
	v := reflect.ValueOf(pol)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return pol.Rank(ctx, d)
	}
	c := reflect.New(v.Elem().Type())
	c.Elem().Set(v.Elem())
	full := c.Interface().(Policy)
	if m, ok := full.(registry.Module); ok {
		if capa := CapacityOf(m); capa != nil {
			*capa = Capacity{Capacity: 1}
		}
	}
	return full.Rank(ctx, d)
}

// Replay initialises a fresh copy of the online cache c for d (c itself
// keeps no state) and runs batches through it, in order, from cold; it
// returns the accesses it served.
func Replay(c Dynamic, d *graph.Dataset, batches [][]int32) (int64, error) {
	if v := reflect.ValueOf(c); v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Struct {
		cp := reflect.New(v.Elem().Type())
		cp.Elem().Set(v.Elem())
		c = cp.Interface().(Dynamic)
	}
	if err := c.Init(d); err != nil {
		return 0, err
	}
	var hits int64
	for _, ids := range batches {
		hits += int64(c.Access(ids))
	}
	return hits, nil
}
