package sampler

import (
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
	k := int64(fanout)
	ws := &workerScratch{}
	return sampling.SampleRowsWith(g, rows, dst, func(deg int64) int64 { return uniformCount(deg, k, replace) },
		func(i int, deg int64) []int64 { return uniformPick(rng, l, dst[i], deg, k, replace, ws) })
}
