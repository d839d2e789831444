package sampler

import (
	"fmt"

	"strata/core/graph"
	"strata/core/sampling"
)

// SampleRows samples the neighbours that Sample with the same rng draws for
// the destinations dst in block l, when the in-edges of dst[i] are row
// rows[i] of g: the whole graph (rows == dst), or the rows of one
// partition of it. Each node's draw depends only on (rng, l, node), so the
// owner of a node samples it for another process exactly as one process
// sampling the whole batch would (distributed mini-batch training;
// TestSampleRowsMatchesSample holds the two together). fanout is the
// block's fanout (-1: every neighbour). It returns the neighbours of
// dst[i] as nbr[indptr[i]:indptr[i+1]], global ids.
func SampleRows(g *graph.CSR, rows, dst []int32, l, fanout int, replace bool, rng uint64) (indptr []int64, nbr []int32, err error) {
	if len(rows) != len(dst) {
		return nil, nil, fmt.Errorf("sampler: %d rows for %d destinations", len(rows), len(dst))
	}
	for _, r := range rows {
		if r < 0 || int(r) >= g.NumRows {
			return nil, nil, fmt.Errorf("sampler: row %d outside the graph's %d rows", r, g.NumRows)
		}
	}
	k, ip := int64(fanout), g.Indptr
	indptr = make([]int64, len(dst)+1)
	for i, r := range rows {
		indptr[i+1] = indptr[i] + uniformCount(ip[r+1]-ip[r], k, replace)
	}
	nbr = make([]int32, indptr[len(dst)])
	ws := &workerScratch{}
	for i, r := range rows {
		out := nbr[indptr[i]:indptr[i+1]]
		if len(out) == 0 {
			continue
		}
		start := ip[r]
		if sel := uniformPick(rng, l, dst[i], ip[r+1]-start, k, replace, ws); sel != nil {
			sampling.ReadAt(g, start, sel, out)
		} else {
			sampling.ReadRow(g, start, out)
		}
	}
	return indptr, nbr, nil
}
