package partitioners

import (
	"context"
	"fmt"

	"strata/core/graph"
	"strata/core/partition"
	"strata/core/registry"
)

// HongTu2Level is HongTu's edge-cut 2-level partitioning (Wang et al.,
// SIGMOD 2023, §4.1): METIS first splits the graph into m partitions (one
// per GPU), then each partition is cut into k/m chunks of destination-id
// ranges with balanced edge counts, each chunk holding a set of
// destination nodes and their in-edges.
//
// k and m: k is the total number of chunks and must be a multiple of m;
// every partition gets k/m chunks. Chunk ids are grouped by partition:
// partition i holds chunks [i·k/m, (i+1)·k/m), and chunk i·(k/m)+j holds
// the j-th id range of the nodes of partition i (its nodes sorted by id;
// since METIS partitions are not contiguous id ranges, a "range" is a run
// of that sorted list). Chunks are balanced by in-edges (row lengths, plus
// nodeWeights[v] when given). METIS partitions the symmetrised graph
// without self loops (see Metis) and balances, with Balance "edges" (the
// default), the same in-edge weights across partitions, so that the
// chunks of all partitions carry similar loads; with Balance "nodes" it
// balances node weights (node counts when nodeWeights is nil). Every
// partition must receive at least k/m nodes, otherwise Partition fails.
// m = 1 skips METIS: the graph is cut into k edge-balanced id ranges.
type HongTu2Level struct {
	M       int    `toml:"m" range:"[1,1048576]" doc:"number of METIS partitions (HongTu: the number of GPUs); k must be a multiple of m, each partition is cut into k/m edge-balanced chunks"`
	Balance string `toml:"balance" enum:"edges,nodes" doc:"what METIS balances across the m partitions: in-edges (plus node weights) or node weights (node counts)"`
	MetisOptions
}

// SquareOnly reports that the 2-level partitioner needs a square graph.
func (*HongTu2Level) SquareOnly() bool { return true }

// SetPartitions implements partition.TwoLevel: m, the METIS partitions.
func (h *HongTu2Level) SetPartitions(m int) { h.M = m }

var _ partition.TwoLevel = (*HongTu2Level)(nil)

// StrataModule registers partitioner.hongtu-2level.
func (*HongTu2Level) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{
		ID: "partitioner.hongtu-2level",
		New: func() registry.Module {
			return &HongTu2Level{M: 1, Balance: "edges", MetisOptions: defaultMetisOptions()}
		},
		Doc: "HongTu 2-level: METIS into m parts, then k/m edge-balanced id chunks",
	}
}

// Validate checks the config.
func (h *HongTu2Level) Validate() error {
	if h.M < 1 {
		return fmt.Errorf("m = %d partitions: want m >= 1", h.M)
	}
	if h.Balance != "edges" && h.Balance != "nodes" {
		return fmt.Errorf("balance = %q: allowed values are \"edges\", \"nodes\"", h.Balance)
	}
	return h.MetisOptions.Validate()
}

// Partition implements Partitioner: it returns the chunk id, in [0,k), of
// every node.
func (h *HongTu2Level) Partition(ctx context.Context, g *graph.CSR, k int, nodeWeights []int64) ([]int32, error) {
	const id = "partitioner.hongtu-2level"
	if err := checkArgs(id, g, k, nodeWeights); err != nil {
		return nil, err
	}
	if k%h.M != 0 {
		return nil, fmt.Errorf("%s: k = %d chunks is not a multiple of m = %d partitions", id, k, h.M)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n, c := g.NumRows, k/h.M
	part := make([]int32, n)
	if h.M > 1 {
		h.progress("symmetrize")
		w := nodeWeights
		if h.Balance == "edges" {
			w = make([]int64, n)
			for v := range w {
				w[v] = g.Indptr[v+1] - g.Indptr[v]
				if nodeWeights != nil {
					w[v] += nodeWeights[v]
				}
			}
		}
		mg, err := undirectedMetisGraph(id, g, w)
		if err != nil {
			return nil, err
		}
		if part, err = h.partitionGraph(ctx, id, mg, h.M); err != nil {
			return nil, err
		}
	} else if g.NumRows != g.NumCols {
		return nil, fmt.Errorf("%s: the graph is %d x %d: want a square graph", id, g.NumRows, g.NumCols)
	}
	h.progress("chunks")
	// Nodes of every partition, ascending (counting sort).
	start := make([]int, h.M+1)
	for _, p := range part {
		start[p+1]++
	}
	for p := 0; p < h.M; p++ {
		start[p+1] += start[p]
	}
	nodes := make([]int32, n)
	fill := append([]int(nil), start[:h.M]...)
	for v, p := range part {
		nodes[fill[p]] = int32(v)
		fill[p]++
	}
	out := make([]int32, n)
	for p := 0; p < h.M; p++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		vs := nodes[start[p]:start[p+1]]
		if len(vs) < c {
			return nil, fmt.Errorf("%s: METIS partition %d has %d nodes, fewer than its k/m = %d chunks", id, p, len(vs), c)
		}
		prefix := make([]int64, len(vs)+1)
		for i, v := range vs {
			w := g.Indptr[v+1] - g.Indptr[v]
			if nodeWeights != nil {
				w += nodeWeights[v]
			}
			prefix[i+1] = prefix[i] + w
		}
		b := RangeBounds(prefix, c)
		for j := 0; j < c; j++ {
			for _, v := range vs[b[j]:b[j+1]] {
				out[v] = int32(p*c + j)
			}
		}
	}
	h.progress("done")
	return out, nil
}

func init() {
	registry.Register(new(HongTu2Level))
}
