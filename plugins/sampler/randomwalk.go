package sampler

import (
	"context"
	"fmt"
	"slices"

	"strata/core/graph"
	"strata/core/registry"
	"strata/core/sampling"
)

// RandomWalk is PinSAGE's random-walk neighbourhood (Ying et al., KDD
// 2018; DGL's PinSAGESampler): the neighbours of a destination v are the
// TopK nodes most visited by Walks random walks of WalkLength hops that
// start at v and follow in-neighbours (each hop picks an in-neighbour of
// the current node uniformly).
//
// Details, which the tests pin down:
//   - v itself is never counted (a walk may pass through it and go on);
//   - a walk that reaches a node without in-neighbours stops early;
//   - nodes are ranked by visit count, descending, ties by ascending node
//     id, and the row lists them in that rank order (at most TopK; fewer
//     when the walks visited fewer distinct nodes);
//   - the stream of row v in block l is newRNG(rng, l, v), one
//     below(degree) draw per hop; the walks advance in lockstep, so the
//     draws are ordered hop by hop, then walk by walk (a stopped walk
//     draws nothing).
//
// With Weights = true, Block.Adj.Values holds the normalised visit counts
// of each row: count / (sum of the counts kept in that row), so a row's
// weights sum to 1 (PinSAGE's importance pooling weights). With Weights =
// false, Values is nil.
type RandomWalk struct {
	NumLayers  int  `toml:"layers" range:"[1,64]" doc:"number of hops (one block per GNN layer); match model.layers"`
	Walks      int  `toml:"walks" range:"[1,1048576]" doc:"random walks started from each destination node"`
	WalkLength int  `toml:"walk_length" range:"[1,1048576]" doc:"hops per walk (following in-neighbours)"`
	TopK       int  `toml:"top_k" range:"[1,1048576]" doc:"neighbours kept per node: the most visited, ties by node id"`
	Weights    bool `toml:"weights" doc:"store normalised visit counts as edge weights in Block.Adj.Values"`
}

// StrataModule registers sampler.randomwalk.
func (*RandomWalk) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{
		ID: "sampler.randomwalk",
		New: func() registry.Module {
			return &RandomWalk{NumLayers: 2, Walks: 4, WalkLength: 3, TopK: 5, Weights: true}
		},
		Doc: "PinSAGE random walks: top-k most visited nodes as neighbours",
	}
}

// Layers returns the number of blocks (GNN layers).
func (rw *RandomWalk) Layers() int { return rw.NumLayers }

// Validate checks the config.
func (rw *RandomWalk) Validate() error {
	switch {
	case rw.NumLayers < 1:
		return fmt.Errorf("layers = %d: must be >= 1", rw.NumLayers)
	case rw.Walks < 1:
		return fmt.Errorf("walks = %d: must be >= 1", rw.Walks)
	case rw.WalkLength < 1:
		return fmt.Errorf("walk_length = %d: must be >= 1", rw.WalkLength)
	case rw.TopK < 1:
		return fmt.Errorf("top_k = %d: must be >= 1", rw.TopK)
	case int64(rw.Walks)*int64(rw.WalkLength) > 1<<24:
		return fmt.Errorf("walks x walk_length = %d: must be <= %d", int64(rw.Walks)*int64(rw.WalkLength), 1<<24)
	}
	return nil
}

// visitCount is a visited node and its visit count.
type visitCount struct {
	node  int32
	count int32
}

// topVisited ranks the visits of one row: count descending, node id
// ascending. visits is sorted in place; the result reuses pairs.
func topVisited(visits []int32, k int, pairs []visitCount) []visitCount {
	slices.Sort(visits)
	pairs = pairs[:0]
	for i := 0; i < len(visits); {
		j := i + 1
		for j < len(visits) && visits[j] == visits[i] {
			j++
		}
		pairs = append(pairs, visitCount{visits[i], int32(j - i)})
		i = j
	}
	slices.SortFunc(pairs, func(a, b visitCount) int {
		if a.count != b.count {
			return int(b.count - a.count)
		}
		return int(a.node - b.node)
	})
	return pairs[:min(k, len(pairs))]
}

// walkRow appends the visits of the walks from v (v itself excluded). The
// walks advance in lockstep, hop by hop (walk w's hop h draws after walk
// w-1's hop h): per hop one batched degree read of the live walks, then
// each walk's next node; cur is scratch of len walks, deg of len walks.
func walkRow(g Graph, r *rngStream, v int32, length int, cur []int32, deg []int64, visits []int32) []int32 {
	for w := range cur {
		cur[w] = v
	}
	live := cur
	var one [1]int32
	var at [1]int64
	for range length {
		if len(live) == 0 {
			break
		}
		g.NumNeighbors(live, deg[:len(live)])
		next := live[:0]
		for w, c := range live {
			d := deg[w]
			if d == 0 { // dead end: the walk stops
				continue
			}
			at[0] = r.below(d)
			g.Neighbors(c, at[:], one[:])
			c = one[0]
			next = append(next, c)
			if c != v {
				visits = append(visits, c)
			}
		}
		live = next
	}
	return visits
}

// Sample implements Sampler (the base, sampling.SampleLayers).
func (rw *RandomWalk) Sample(ctx context.Context, g *graph.CSR, seeds []int32, rng uint64) ([]Block, error) {
	return sampling.SampleLayers(ctx, rw, g, seeds, rng)
}

// DrawLayer implements sampling.Drawer: every hop of a row's walks is one
// batched degree read and one read per walk.
func (rw *RandomWalk) DrawLayer(_ context.Context, g Graph, l int, dst []int32, rng uint64) ([]int64, []int32, []float32, error) {
	s := getScratch()
	defer putScratch(s)
	cfg := *rw
	k := min(cfg.TopK, cfg.Walks*cfg.WalkLength) // no row has more distinct visits
	n := len(dst)
	// Each row writes at most k neighbours into its own fixed slot.
	if cap(s.row) < n*k {
		s.row = make([]int32, n*k)
		s.val = make([]float32, n*k)
	}
	if cap(s.cnt) < n {
		s.cnt = make([]int64, n)
	}
	slots, wslots, cnt := s.row[:n*k], s.val[:n*k], s.cnt[:n]
	s.parallel(n, nil, func(w, lo, hi int) {
		ws := s.worker(w)
		for i := lo; i < hi; i++ {
			v := dst[i]
			r := newRNG(rng, l, v)
			if len(ws.walk) < cfg.Walks {
				ws.walk = make([]int32, cfg.Walks)
				ws.walkDeg = make([]int64, cfg.Walks)
			}
			ws.visits = walkRow(g, &r, v, cfg.WalkLength, ws.walk[:cfg.Walks], ws.walkDeg[:cfg.Walks], ws.visits[:0])
			top := topVisited(ws.visits, k, ws.pairs)
			ws.pairs = top[:0]
			var total int64
			for q, p := range top {
				slots[i*k+q] = p.node
				total += int64(p.count)
			}
			for q, p := range top {
				wslots[i*k+q] = float32(p.count) / float32(total)
			}
			cnt[i] = int64(len(top))
		}
	})
	indptr := make([]int64, n+1)
	for i, c := range cnt {
		indptr[i+1] = indptr[i] + c
	}
	nbr := make([]int32, indptr[n])
	var vals []float32
	if cfg.Weights {
		vals = make([]float32, indptr[n])
	}
	for i := range n {
		copy(nbr[indptr[i]:indptr[i+1]], slots[i*k:])
		if vals != nil {
			copy(vals[indptr[i]:indptr[i+1]], wslots[i*k:])
		}
	}
	return indptr, nbr, vals, nil
}

// Capabilities implements sampling.Describer: random; its edges join a
// node to the nodes its walks visited most, not to its in-neighbours.
func (*RandomWalk) Capabilities() sampling.Capabilities {
	return sampling.Capabilities{Random: true}
}
