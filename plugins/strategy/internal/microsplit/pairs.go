package microsplit

import (
	"context"
	"fmt"
	"slices"

	"strata/core/config"
	"strata/core/graph"
	"strata/core/sampling"
	"strata/plugins/strategy/internal/options"
)

// CheckLinkAuto refuses micro_batches = "auto" for train.task = "link":
// Betty's memory estimate sizes micro-batches of output nodes and does not
// model a link step's pairs (their decoder and its pair graph).
func CheckLinkAuto(cfg *config.Config) error {
	if cfg.Train.Task != config.TaskLink || !options.SplitOf(cfg).AutoK() {
		return nil
	}
	return cfg.KeyError(fmt.Sprintf("%s = \"auto\" sizes micro-batches of output nodes by Betty's memory estimate, which does not model the pairs of train.task = \"link\"; give a number of micro-batches", options.SplitKeyName(cfg)), options.SplitKey(cfg)...)
}

// PairBatch is one micro-batch of a link-prediction step: the micro-batch
// that computes the endpoints of its pairs, and its pairs in local ids
// (indices into Nodes). Positives is its share of the step's positives.
type PairBatch struct {
	MicroBatch
	Pos, Neg  graph.Pairs
	Positives int
}

// Parts partitions the outputs of a batch (its last block's destinations,
// local rows) into k parts, as Split does, and returns the part of every
// row.
func (s *Splitter) Parts(ctx context.Context, blocks []sampling.Block, k int) ([]int32, error) {
	rows, err := s.partition(ctx, blocks, k)
	if err != nil {
		return nil, err
	}
	part := make([]int32, len(blocks[len(blocks)-1].Dst))
	for p, rs := range rows {
		for _, r := range rs {
			part[r] = int32(p)
		}
	}
	return part, nil
}

// SplitPairs splits a link step into micro-batches by the parts of its
// outputs: positive i (rows of the last block) and its negatives (neg
// holds the same number for every positive, positive i's at [i*k,
// (i+1)*k)) go to the part of the positive's source, and each part's
// micro-batch computes every endpoint of its pairs (whatever their parts)
// over SplitBlocks, so it sees the same neighbours as the whole batch.
// Parts that receive no positive are left out; the others keep their
// order.
func SplitPairs(blocks []sampling.Block, part []int32, parts int, pos, neg graph.Pairs) ([]PairBatch, error) {
	n := len(blocks[len(blocks)-1].Dst)
	if len(part) != n {
		return nil, fmt.Errorf("microsplit: %d parts for %d output rows", len(part), n)
	}
	if pos.Len() == 0 || neg.Len()%pos.Len() != 0 {
		return nil, fmt.Errorf("microsplit: %d negatives are no whole number per each of %d positives", neg.Len(), pos.Len())
	}
	k := neg.Len() / pos.Len()
	group := make([][]int32, parts) // positives by part
	for i, u := range pos.Src {
		if uint(u) >= uint(n) || uint(pos.Dst[i]) >= uint(n) {
			return nil, fmt.Errorf("microsplit: positive %d (%d, %d) is outside the %d output rows", i, u, pos.Dst[i], n)
		}
		if p := part[u]; uint(p) < uint(parts) {
			group[p] = append(group[p], int32(i))
		} else {
			return nil, fmt.Errorf("microsplit: output row %d is in part %d of %d", u, p, parts)
		}
	}
	for j := range neg.Src {
		if uint(neg.Src[j]) >= uint(n) || uint(neg.Dst[j]) >= uint(n) {
			return nil, fmt.Errorf("microsplit: negative %d (%d, %d) is outside the %d output rows", j, neg.Src[j], neg.Dst[j], n)
		}
	}
	var out []PairBatch
	for _, g := range group {
		if len(g) > 0 {
			out = append(out, pairBatch(blocks, g, k, pos, neg))
		}
	}
	return out, nil
}

// pairBatch is the micro-batch of the positives idx of pos and their k
// negatives each.
func pairBatch(blocks []sampling.Block, idx []int32, k int, pos, neg graph.Pairs) PairBatch {
	var p, q graph.Pairs
	p.Src, p.Dst = make([]int32, 0, len(idx)), make([]int32, 0, len(idx))
	q.Src, q.Dst = make([]int32, 0, len(idx)*k), make([]int32, 0, len(idx)*k)
	for _, i := range idx {
		p.Src, p.Dst = append(p.Src, pos.Src[i]), append(p.Dst, pos.Dst[i])
		lo, hi := int(i)*k, int(i+1)*k
		q.Src, q.Dst = append(q.Src, neg.Src[lo:hi]...), append(q.Dst, neg.Dst[lo:hi]...)
	}
	rows := slices.Concat(p.Src, p.Dst, q.Src, q.Dst)
	slices.Sort(rows)
	rows = slices.Compact(rows)
	local := func(x graph.Pairs) {
		for i := range x.Src {
			s, _ := slices.BinarySearch(rows, x.Src[i])
			d, _ := slices.BinarySearch(rows, x.Dst[i])
			x.Src[i], x.Dst[i] = int32(s), int32(d)
		}
	}
	local(p)
	local(q)
	sub := SplitBlocks(blocks, rows)
	return PairBatch{MicroBatch: MicroBatch{Nodes: sub[len(sub)-1].Dst, Blocks: sub}, Pos: p, Neg: q, Positives: len(idx)}
}
