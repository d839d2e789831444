package linkrun

import (
	"context"
	"fmt"
	"slices"

	"strata/core/graph"
	"strata/core/sampling"
	"strata/core/train"
	"strata/plugins/strategy/internal/steprun"
)

// EdgeBatch is one mini-batch of training edges in global node ids: its
// positives and their negatives, positive i's k at [i*k, (i+1)*k).
type EdgeBatch struct {
	Pos, Neg graph.Pairs
}

// EpochBatches shuffles the task's training edges with the epoch's seed,
// cuts them into batches of size and takes each batch's negatives from
// the epoch's one draw (LinkTask.TrainNegatives): the batches of
// strategy.minibatch, which a strategy that splits them (ranks,
// micro-batches) cuts further and sums to the same step.
func EpochBatches(ctx context.Context, task *train.LinkTask, seed uint64, size int) ([]EdgeBatch, error) {
	tr := task.Split.Train
	all, err := task.TrainNegatives(ctx, seed)
	if err != nil {
		return nil, err
	}
	k := task.Negatives
	order := steprun.Shuffled(steprun.Iota32(tr.Len()), seed)
	var out []EdgeBatch
	for lo := 0; lo < len(order); lo += size {
		idx := order[lo:min(lo+size, len(order))]
		b := EdgeBatch{Pos: graph.Pairs{Src: make([]int32, len(idx)), Dst: make([]int32, len(idx))},
			Neg: graph.Pairs{Src: make([]int32, 0, len(idx)*k), Dst: make([]int32, 0, len(idx)*k)}}
		for i, j := range idx {
			b.Pos.Src[i], b.Pos.Dst[i] = tr.Src[j], tr.Dst[j]
			lo, hi := int(j)*k, int(j+1)*k
			b.Neg.Src, b.Neg.Dst = append(b.Neg.Src, all.Src[lo:hi]...), append(b.Neg.Dst, all.Dst[lo:hi]...)
		}
		out = append(out, b)
	}
	return out, nil
}

// Part returns the batch's positives i for which keep(i) holds, each with
// its negatives (a rank's or a micro-batch's part of the batch).
func (b EdgeBatch) Part(keep func(i int) bool) EdgeBatch {
	n := b.Pos.Len()
	k := 0
	if n > 0 {
		k = b.Neg.Len() / n
	}
	var out EdgeBatch
	for i := range n {
		if !keep(i) {
			continue
		}
		out.Pos.Src, out.Pos.Dst = append(out.Pos.Src, b.Pos.Src[i]), append(out.Pos.Dst, b.Pos.Dst[i])
		out.Neg.Src, out.Neg.Dst = append(out.Neg.Src, b.Neg.Src[i*k:(i+1)*k]...), append(out.Neg.Dst, b.Neg.Dst[i*k:(i+1)*k]...)
	}
	return out
}

// Local returns the seed nodes of the batch's pairs (their endpoints,
// sorted, each once) and the pairs in local ids (indices into nodes).
func (b EdgeBatch) Local() (nodes []int32, pos, neg graph.Pairs) {
	nodes = slices.Concat(b.Pos.Src, b.Pos.Dst, b.Neg.Src, b.Neg.Dst)
	slices.Sort(nodes)
	nodes = slices.Compact(nodes)
	return nodes, LocalPairs(nodes, b.Pos), LocalPairs(nodes, b.Neg)
}

// LocalPairs returns p with every node replaced by its index in nodes
// (sorted, holding every endpoint of p).
func LocalPairs(nodes []int32, p graph.Pairs) graph.Pairs {
	q := graph.Pairs{Src: make([]int32, p.Len()), Dst: make([]int32, p.Len())}
	for i := range p.Src {
		s, _ := slices.BinarySearch(nodes, p.Src[i])
		d, _ := slices.BinarySearch(nodes, p.Dst[i])
		q.Src[i], q.Dst[i] = int32(s), int32(d)
	}
	return q
}

// Held returns the keys (UndirectedKey over n nodes) of the batch's
// positives, which its blocks must not hold with link.exclude = "batch".
func (b EdgeBatch) Held(n int) map[uint64]bool {
	held := make(map[uint64]bool, b.Pos.Len())
	for i := range b.Pos.Src {
		held[UndirectedKey(b.Pos.Src[i], b.Pos.Dst[i], n)] = true
	}
	return held
}

// UndirectedKey keys the pair {u, v} of a graph of n nodes in either
// direction.
func UndirectedKey(u, v int32, n int) uint64 {
	if v < u {
		u, v = v, u
	}
	return uint64(u)*uint64(n) + uint64(v)
}

// ExcludeHeld returns blocks without the entries whose endpoints are a
// pair of held (either direction, keys over g's nodes), each carrying the
// in-degree every node loses in g without those pairs (Block.Excluded),
// so that degree-normalised weights are those of g without them; their
// node lists are shared.
func ExcludeHeld(blocks []sampling.Block, held map[uint64]bool, g *graph.CSR) []sampling.Block {
	n, lost := g.NumRows, LostDegrees(g, held)
	out := make([]sampling.Block, len(blocks))
	for k, b := range blocks {
		a := b.Adj
		indptr := make([]int64, a.NumRows+1)
		cols := make([]int64, 0, a.NNZ())
		var vals []float32
		for i := range a.NumRows {
			for e := a.Indptr[i]; e < a.Indptr[i+1]; e++ {
				if held[UndirectedKey(b.Src[a.Col(e)], b.Dst[i], n)] {
					continue
				}
				cols = append(cols, a.Col(e))
				if a.Values != nil {
					vals = append(vals, a.Values[e])
				}
			}
			indptr[i+1] = int64(len(cols))
		}
		adj := graph.MakeCSR(a.NumRows, a.NumCols, indptr, cols)
		adj.Values = vals
		out[k] = sampling.Block{Dst: b.Dst, Src: b.Src, Adj: adj, Excluded: lost}
	}
	return out
}

// LostDegrees returns the in-degree (the sum of the weights, for a
// weighted g) each node of g loses when the pairs of held (undirected
// keys over g's nodes) are taken out of g in both directions: row u
// loses its entries v and row v its entries u, every copy of a repeated
// edge included.
func LostDegrees(g *graph.CSR, held map[uint64]bool) map[int32]float64 {
	n := uint64(g.NumRows)
	lost := make(map[int32]float64, 2*len(held))
	take := func(row, col int64) {
		var w float64
		for e := g.Indptr[row]; e < g.Indptr[row+1]; e++ {
			if g.Col(e) != col {
				continue
			}
			if g.Values != nil {
				w += float64(g.Values[e])
			} else {
				w++
			}
		}
		if w != 0 {
			lost[int32(row)] += w
		}
	}
	for key := range held {
		u, v := int64(key/n), int64(key%n)
		take(u, v)
		if v != u {
			take(v, u)
		}
	}
	return lost
}

// ScoreOver writes the scores of pairs from every node's embedding over
// its full neighbourhood, computed by r's evaluation chunks.
func (d *Decoder) ScoreOver(ctx context.Context, r *steprun.Runner, pairs graph.Pairs, scores []float64) error {
	emb, _, _, err := r.PredictOutputs(ctx)
	if err != nil {
		return err
	}
	if n, w := r.Env.DS.NumNodes, d.task.Embedding; len(emb) != n*w {
		return fmt.Errorf("linkrun: %d embedding values for %d nodes of width %d", len(emb), n, w)
	}
	return d.ScoreEmbeddings(ctx, emb, d.task.Embedding, pairs, scores)
}
