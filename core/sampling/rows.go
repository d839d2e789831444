package sampling

import (
	"fmt"

	"strata/core/graph"
)

// RowSampler is the capability of samplers that draw every destination's
// neighbours on its own: a node's draw in block l depends only on (rng,
// l, node), so the owner of a node samples it for another process exactly
// as one process sampling the whole batch would. Distributed mini-batch
// training (strategy.distmini) samples with it on the nodes' owners;
// sampler.uniform and sampler.full have it.
type RowSampler interface {
	// RowFanouts returns the fanout of every block, first layer first
	// (-1: every neighbour), and whether neighbours are drawn with
	// replacement.
	RowFanouts() (fanouts []int, replace bool)
	// SampleRows returns the neighbours that Sample with the same rng
	// draws for the destinations dst in block l, when the in-edges of
	// dst[i] are row rows[i] of g (the whole graph, rows == dst, or the
	// rows of one partition of it), with the block's fanout and replace
	// as RowFanouts gives them; fanout -1 takes every neighbour, the
	// whole row in order. The neighbours of dst[i] are
	// nbr[indptr[i]:indptr[i+1]], global ids.
	SampleRows(g *graph.CSR, rows, dst []int32, l, fanout int, replace bool, rng uint64) (indptr []int64, nbr []int32, err error)
}

// SampleRowsWith is the row loop of a RowSampler: it checks rows against
// dst and g, gives row i count(its degree) neighbours and fills them with
// the positions pick(i, degree) returns within the row (nil: the row from
// its start, in order).
func SampleRowsWith(g *graph.CSR, rows, dst []int32, count func(deg int64) int64, pick func(i int, deg int64) []int64) (indptr []int64, nbr []int32, err error) {
	if len(rows) != len(dst) {
		return nil, nil, fmt.Errorf("sampler: %d rows for %d destinations", len(rows), len(dst))
	}
	for _, r := range rows {
		if r < 0 || int(r) >= g.NumRows {
			return nil, nil, fmt.Errorf("sampler: row %d outside the graph's %d rows", r, g.NumRows)
		}
	}
	ip := g.Indptr
	indptr = make([]int64, len(dst)+1)
	for i, r := range rows {
		indptr[i+1] = indptr[i] + count(ip[r+1]-ip[r])
	}
	nbr = make([]int32, indptr[len(dst)])
	for i, r := range rows {
		out := nbr[indptr[i]:indptr[i+1]]
		if len(out) == 0 {
			continue
		}
		start := ip[r]
		if sel := pick(i, ip[r+1]-start); sel != nil {
			ReadAt(g, start, sel, out)
		} else {
			ReadRow(g, start, out)
		}
	}
	return indptr, nbr, nil
}

// Fanned is implemented by samplers configured by one fanout per block
// (sampler.uniform): SetFanouts sets them, first layer first, as the
// module's fanouts option does. A caller that samples as a trainer does
// (cache.presample) configures such a sampler from the registry with it.
type Fanned interface {
	SetFanouts(fanouts []int)
}

// CheckFanouts validates a fanouts list: one or more entries, each >= 1
// or -1 (every neighbour).
func CheckFanouts(f []int) error {
	if len(f) == 0 {
		return fmt.Errorf("fanouts is empty: give one fanout per GNN layer, first layer first, e.g. fanouts = [10, 25]")
	}
	for i, k := range f {
		if k == 0 || k < -1 {
			return fmt.Errorf("fanouts[%d] = %d: must be >= 1, or -1 for all neighbours", i, k)
		}
	}
	return nil
}
