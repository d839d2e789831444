package partition

import (
	"fmt"
	"slices"

	"strata/core/graph"
)

// Metrics describes the quality of a partition of the rows of a CSR; see
// Quality. Timing is left to the caller.
type Metrics struct {
	K     int   `json:"k"`     // number of parts
	Nodes int   `json:"nodes"` // rows (destination / output nodes) partitioned
	Edges int64 `json:"edges"` // stored entries of the graph

	// EdgeCut counts the stored entries (i <- j) whose endpoints lie in
	// different parts; every stored entry counts once, so the graph is read
	// as directed. For a symmetric graph that stores both directions of an
	// undirected edge, each cut undirected edge counts twice: METIS's (and
	// gpmetis's) edge cut of the symmetrised graph is half the EdgeCut of
	// that symmetrised graph. Self loops are never cut. -1 when the graph
	// is not square (the columns then have no parts).
	EdgeCut int64 `json:"edge_cut"`
	// CutFraction is EdgeCut / Edges (0 for an edgeless graph, -1 when
	// EdgeCut is -1).
	CutFraction float64 `json:"cut_fraction"`

	PartNodes  []int64 `json:"part_nodes"`  // nodes per part
	PartEdges  []int64 `json:"part_edges"`  // stored entries per part: the in-edges of its rows
	EmptyParts int     `json:"empty_parts"` // parts without nodes

	// NodeBalance and EdgeBalance are max part size / mean part size
	// (mean = total / K), in nodes and in in-edges; 1 is perfect balance.
	// They are 1 when the total is 0.
	NodeBalance float64 `json:"node_balance"`
	EdgeBalance float64 `json:"edge_balance"`

	// PartInputs[p] is |N_p|, the number of distinct columns (source or
	// input nodes) that the in-edges of the rows of part p read, whether
	// they lie in p or not: the neighbour data part p must load.
	PartInputs []int64 `json:"part_inputs"`
	// Inputs is the number of distinct columns read by the whole graph.
	Inputs int64 `json:"inputs"`

	// ReplicationFactor is HongTu's neighbour replication factor α
	// (Wang et al., SIGMOD 2023, §2 "Limitation 2" and Table 3): "the
	// average number of replicas per vertex", the ratio of the neighbour
	// data transferred when each part loads its own in-neighbours to
	// transferring every vertex once: α = Σ_p |N_p| / |V|, with |V| =
	// NumCols (the number of nodes of a square graph). Columns read by no
	// row count in |V| but have no replica, so α can be below 1 for graphs
	// with nodes without out-edges.
	ReplicationFactor float64 `json:"replication_factor"`
	// Redundancy is Betty's input redundancy of a batch split into
	// micro-batches: Σ_p |N_p| / Inputs, the input nodes loaded by all
	// parts over the distinct input nodes of the whole block (1 = no input
	// is loaded twice; 0 for an edgeless graph). For a bipartite block,
	// rows are the output nodes and columns the input nodes.
	Redundancy float64 `json:"redundancy"`
}

// String formats the scalar metrics on one line. The edge cut is left out
// where it has no meaning (EdgeCut -1: a bipartite block, whose columns
// have no parts).
func (m Metrics) String() string {
	cut := ""
	if m.EdgeCut >= 0 {
		cut = fmt.Sprintf(" cut=%d (%.4f)", m.EdgeCut, m.CutFraction)
	}
	return fmt.Sprintf("k=%d%s balance nodes=%.3f edges=%.3f alpha=%.3f redundancy=%.3f empty=%d",
		m.K, cut, m.NodeBalance, m.EdgeBalance, m.ReplicationFactor, m.Redundancy, m.EmptyParts)
}

// Quality measures the partition parts (one part in [0,k) per row of g) of
// the rows of g. g may be square (a graph: row i lists the in-neighbours
// of node i) or a bipartite block (rows are output nodes, columns input
// nodes); see Metrics for the definitions. Duplicate entries count as
// edges in EdgeCut and PartEdges but as one input in PartInputs. It runs
// in O(nnz + NumRows + NumCols + k) time and O(NumCols + k) extra memory.
// It panics when len(parts) != g.NumRows, k < 1, or a part lies outside
// [0,k): these are programming errors.
func Quality(g *graph.CSR, parts []int32, k int) Metrics {
	n := g.NumRows
	if len(parts) != n {
		panic(fmt.Sprintf("partitioners.Quality: %d parts for %d rows", len(parts), n))
	}
	if k < 1 {
		panic(fmt.Sprintf("partitioners.Quality: k = %d", k))
	}
	m := Metrics{K: k, Nodes: n, Edges: g.NNZ(), PartNodes: make([]int64, k), PartEdges: make([]int64, k), PartInputs: make([]int64, k)}
	square := g.NumRows == g.NumCols
	// Rows grouped by part (counting sort), so each part's inputs can be
	// counted with one stamp array.
	start := make([]int64, k+1)
	for i, p := range parts {
		if p < 0 || int(p) >= k {
			panic(fmt.Sprintf("partitioners.Quality: row %d is in part %d, outside [0,%d)", i, p, k))
		}
		start[p+1]++
	}
	for p := 0; p < k; p++ {
		start[p+1] += start[p]
	}
	order := make([]int32, n)
	next := slices.Clone(start[:k])
	for i, p := range parts {
		order[next[p]] = int32(i)
		next[p]++
	}
	stamp := make([]int32, g.NumCols) // part+1 that last read the column
	seen := make([]bool, g.NumCols)
	var cut int64
	for p := 0; p < k; p++ {
		m.PartNodes[p] = start[p+1] - start[p]
		var inputs int64
		for _, r := range order[start[p]:start[p+1]] {
			lo, hi := g.Indptr[r], g.Indptr[r+1]
			m.PartEdges[p] += hi - lo
			for e := lo; e < hi; e++ {
				c := g.Col(e)
				if stamp[c] != int32(p+1) {
					stamp[c] = int32(p + 1)
					inputs++
					if !seen[c] {
						seen[c] = true
						m.Inputs++
					}
				}
				if square && parts[c] != int32(p) {
					cut++
				}
			}
		}
		m.PartInputs[p] = inputs
	}
	if square {
		m.EdgeCut = cut
		if m.Edges > 0 {
			m.CutFraction = float64(cut) / float64(m.Edges)
		}
	} else {
		m.EdgeCut, m.CutFraction = -1, -1
	}
	var replicas int64
	for p := 0; p < k; p++ {
		if m.PartNodes[p] == 0 {
			m.EmptyParts++
		}
		replicas += m.PartInputs[p]
	}
	m.NodeBalance = balance(m.PartNodes)
	m.EdgeBalance = balance(m.PartEdges)
	if g.NumCols > 0 {
		m.ReplicationFactor = float64(replicas) / float64(g.NumCols)
	}
	if m.Inputs > 0 {
		m.Redundancy = float64(replicas) / float64(m.Inputs)
	}
	return m
}

// balance returns max / mean of sizes, or 1 when they sum to 0.
func balance(sizes []int64) float64 {
	var total, mx int64
	for _, s := range sizes {
		total += s
		mx = max(mx, s)
	}
	if total == 0 {
		return 1
	}
	return float64(mx) * float64(len(sizes)) / float64(total)
}
