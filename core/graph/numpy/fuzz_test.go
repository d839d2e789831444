package numpy

import (
	"archive/zip"
	"bytes"
	"math"
	"testing"

	"strata/core/graph"
)

// FuzzNPY feeds arbitrary bytes to the .npy reader: it may not panic, hang
// or allocate beyond what the input can justify; errors are expected.
func FuzzNPY(f *testing.F) {
	f.Add(npyOf([]float32{1, 2, 3, 4}, 2, 2))
	f.Add(npyOf([]int64{0, 1, 1, 2}, 2, 2))
	f.Add(npyFile(1, "<f8", false, []int{1 << 40}, nil))
	f.Add(npyFile(1, "<i2", true, []int{2, 3, 2}, leBytes([]int16{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})))
	f.Add(npyRaw(2, "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", leBytes([]int32{1, 2, 3})))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _, _ = readNPY(bytes.NewReader(data), int64(len(data)), "fuzz.npy", &graph.Spend{Budget: 64 << 20})
	})
}

// FuzzNPZ feeds arbitrary bytes to the .npz reader as an archive, then
// reads it in every layout (Shchur, OGB data.npz, a pickled scipy.sparse
// matrix): it may not panic, hang or allocate past the budget, whatever
// the members' sizes, .npy headers and pickles declare.
func FuzzNPZ(f *testing.F) {
	f.Add(npzBytes(tinyShchur(), zip.Store))
	f.Add(npzBytes(tinyShchur(), zip.Deflate))
	f.Add(npzBytes(map[string][]byte{
		"num_nodes":  npyOf([]int64{3}),
		"edge_index": npyOf([]int64{0, 1, 1, 2}, 2, 2),
		"node_feat":  npyOf([]float32{1, 2, 3}, 3, 1),
		"node_label": npyOf([]float64{0, 1, math.NaN()}, 3, 1),
	}, zip.Store))
	bomb := tinyShchur()
	bomb["adj_indptr"] = npyHeaderLen(2, 0xFFFFFFF0)
	f.Add(npzBytes(bomb, zip.Store))
	f.Fuzz(func(t *testing.T, data []byte) {
		z, err := readNPZ(bytes.NewReader(data), int64(len(data)), "fuzz.npz")
		if err != nil {
			return
		}
		z.spend.Budget = 4 << 20 // small: a load at the budget is allocated and filled per input
		_, _ = z.load(graph.NoSplit)
		z.spend = &graph.Spend{Budget: 4 << 20}
		_, _ = z.sparse("adj_matrix")
	})
}
