// Package chunkplan builds HongTu's chunks of a 2-level partition: each
// chunk's destinations, in-edges and neighbour rows, and the schedule of
// the communication between partitions (internal kit of
// plugins/strategy).
package chunkplan

import (
	"context"
	"fmt"
	"strata/core/graph"
	"strata/core/train"
)

// Chunk is one subgraph of HongTu's 2-level partition (§4.1): a set of
// destination nodes with all their in-edges, so a layer computed over it
// gives its destinations exactly what the whole graph gives them.
type Chunk struct {
	Id, part int
	Dst      []int32 // global ids, ascending
	// src are the rows the chunk reads (HongTu's N_ij): its destinations
	// first, in order (the block convention), then their other
	// in-neighbours.
	Src    []int32
	Graphs map[string]*Graph
	Train  []int32 // local rows (into dst) of its training nodes
}

// Graph is a chunk's rows of one adjacency ("adj" or "adj_self"),
// in local ids (with the graph's edge weights as Values when it has
// them), with the full graph's edge weights of the model's reducers (nil
// when no aggregation over the graph needs them).
type Graph struct {
	Csr       *graph.CSR
	Gcn, Mean []float32
}

// Plan is the 2-level partition of a graph into m partitions of n
// chunks each and their schedule: batch j runs chunk sched[j][i] on
// device i.
type Plan struct {
	M, N   int
	Chunks []*Chunk // by partitioner id: partition i holds [i·n, (i+1)·n)
	Sched  [][]int
	Owner  []int32 // per node: its partition, the device its rows belong to
	seen   []int32 // per node: the last batchRows call that met it
	stamp  int32
}

// NewPlan builds the chunks of the partition part (chunk id per
// node, k = m·n chunks) over the adjacencies the model reads (used: each
// with its aggregations' reducers), and the plain schedule (batch j = the
// j-th chunk of every partition).
func NewPlan(ctx context.Context, adjs *train.Adjacencies, used map[string]map[string]bool, part []int32, m, n int, trainIdx []int32) (*Plan, error) {
	p, err := newPartition(part, m, n)
	if err != nil {
		return nil, err
	}
	isTrain := make([]bool, len(part))
	for _, v := range trainIdx {
		isTrain[v] = true
	}
	graphs, fulls := usedGraphs(adjs, used)
	local := make([]int32, len(part)) // global → local source id + 1 (0: none)
	for _, c := range p.Chunks {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(c.Dst) == 0 {
			return nil, fmt.Errorf("chunked: chunk %d of partition %d is empty", c.Id%n, c.part)
		}
		c.build(local, isTrain, graphs, fulls)
	}
	p.Sched = plainSchedule(m, n)
	return p, nil
}

// newPartition returns the plan of the partition part (chunk id per node,
// k = m·n chunks): its chunks with their destinations, and each node's
// owner; no schedule yet.
func newPartition(part []int32, m, n int) (*Plan, error) {
	k := m * n
	p := &Plan{M: m, N: n, Chunks: make([]*Chunk, k), Owner: make([]int32, len(part))}
	for c := range p.Chunks {
		p.Chunks[c] = &Chunk{Id: c, part: c / n, Graphs: map[string]*Graph{}}
	}
	for v, c := range part {
		if c < 0 || int(c) >= k {
			return nil, fmt.Errorf("chunked: the partitioner put node %d in chunk %d of %d", v, c, k)
		}
		p.Chunks[c].Dst = append(p.Chunks[c].Dst, int32(v))
		p.Owner[v] = c / int32(n)
	}
	return p, nil
}

// fullGraph is one adjacency of the whole graph with the edge weights of
// the reducers the model uses over it (nil where unused).
type fullGraph struct {
	csr       *graph.CSR
	gcn, mean []float32
}

// usedGraphs returns the names of the adjacencies the model reads ("adj",
// then "adj_self") and each one's fullGraph.
func usedGraphs(adjs *train.Adjacencies, used map[string]map[string]bool) ([]string, map[string]fullGraph) {
	var graphs []string
	fulls := map[string]fullGraph{}
	for _, name := range []string{"adj", "adj_self"} {
		if reducers, ok := used[name]; ok {
			csr := adjs.Adj
			if name == "adj_self" {
				csr = adjs.AdjSelf
			}
			graphs = append(graphs, name)
			f := fullGraph{csr: csr}
			if reducers["gcn"] {
				f.gcn = graph.GCNNorm(csr)
			}
			if reducers["mean"] {
				f.mean = graph.MeanNorm(csr)
			}
			fulls[name] = f
		}
	}
	return graphs, fulls
}

// build fills the chunk's rows (src), training rows and graphs.
// local maps a global id to its local source id + 1, all zero before and
// after.
func (c *Chunk) build(local []int32, isTrain []bool, graphs []string, fulls map[string]fullGraph) {
	c.Src = append(make([]int32, 0, 2*len(c.Dst)), c.Dst...)
	for i, v := range c.Dst {
		local[v] = int32(i + 1)
		if isTrain[v] {
			c.Train = append(c.Train, int32(i))
		}
	}
	for _, name := range graphs {
		c.Graphs[name] = c.graphOf(fulls[name], local)
	}
	for _, cg := range c.Graphs {
		cg.Csr.NumCols = len(c.Src)
	}
	for _, u := range c.Src {
		local[u] = 0
	}
}

// graphOf returns the chunk's rows of f in local ids (NumCols not yet
// set), appending to src the in-neighbours it meets first.
func (c *Chunk) graphOf(f fullGraph, local []int32) *Graph {
	var nnz int64
	for _, v := range c.Dst {
		nnz += f.csr.Indptr[v+1] - f.csr.Indptr[v]
	}
	cg := &Graph{Csr: &graph.CSR{NumRows: len(c.Dst), Indptr: make([]int64, len(c.Dst)+1), Idx32: make([]int32, 0, nnz)}}
	if f.gcn != nil {
		cg.Gcn = make([]float32, 0, nnz)
	}
	if f.mean != nil {
		cg.Mean = make([]float32, 0, nnz)
	}
	if f.csr.Values != nil { // the edge weights, for a sum
		cg.Csr.Values = make([]float32, 0, nnz)
	}
	for i, v := range c.Dst {
		for e := f.csr.Indptr[v]; e < f.csr.Indptr[v+1]; e++ {
			u := int32(f.csr.Col(e))
			if local[u] == 0 {
				c.Src = append(c.Src, u)
				local[u] = int32(len(c.Src))
			}
			cg.Csr.Idx32 = append(cg.Csr.Idx32, local[u]-1)
			if f.gcn != nil {
				cg.Gcn = append(cg.Gcn, f.gcn[e])
			}
			if f.mean != nil {
				cg.Mean = append(cg.Mean, f.mean[e])
			}
			if f.csr.Values != nil {
				cg.Csr.Values = append(cg.Csr.Values, f.csr.Values[e])
			}
		}
		cg.Csr.Indptr[i+1] = int64(len(cg.Csr.Idx32))
	}
	return cg
}

// plainSchedule is the plain schedule of m partitions of n chunks:
// batch j runs the j-th chunk of every partition.
func plainSchedule(m, n int) [][]int {
	sched := make([][]int, n)
	for j := range sched {
		sched[j] = make([]int, m)
		for i := range sched[j] {
			sched[j][i] = i*n + j
		}
	}
	return sched
}

// CommRows counts the neighbour rows one pass over a layer loads from the
// host (HongTu §5.3): without deduplication (V_ori, every chunk loads its
// src), with p2p sharing (V_+p2p, each row of a batch crosses once) and
// with p2p and reuse (V_+ru, rows of the batch before are reused).
type CommRows struct{ Ori, P2p, Ru int64 }

// Comm returns the plan's commRows under its schedule.
func (p *Plan) Comm(nodes int) CommRows {
	var r CommRows
	mark := make([]int32, nodes) // batch index + 1 of the last batch that read the node
	for j, batch := range p.Sched {
		stamp := int32(j + 1)
		for _, c := range batch {
			for _, u := range p.Chunks[c].Src {
				r.Ori++
				switch mark[u] {
				case stamp:
					continue
				case stamp - 1:
					if j > 0 {
						r.P2p++
						mark[u] = stamp
						continue
					}
				}
				r.P2p++
				r.Ru++
				mark[u] = stamp
			}
		}
	}
	return r
}

// Reorganize reorders the chunks with HongTu's 2-phase heuristic (Alg.
// 4). Phase 1 regroups the chunks into batches: batch j starts with
// partition 0's j-th chunk, and every other partition in turn gives each
// batch the remaining chunk that shares the most neighbours with the
// batch's union so far (inter-device duplicates, served over p2p). Phase
// 2 orders the batches greedily so that each shares the most neighbours
// with the one before it (intra-device reuse).
// It returns the reorganised plan (sharing p's chunks).
func (p *Plan) Reorganize(nodes int) *Plan {
	mark := make([]int32, nodes)
	stamp := int32(0)
	// overlap counts the nodes of set that are in the marked union.
	overlap := func(set []int32, s int32) int {
		n := 0
		for _, u := range set {
			if mark[u] == s {
				n++
			}
		}
		return n
	}
	batches := make([][]int, p.N)
	unions := make([][]int32, p.N)
	for j := range batches {
		c := p.Chunks[j]
		batches[j] = []int{c.Id}
		unions[j] = append([]int32(nil), c.Src...)
	}
	for i := 1; i < p.M; i++ {
		left := make([]int, p.N)
		for j := range left {
			left[j] = i*p.N + j
		}
		for j := range batches {
			stamp++
			for _, u := range unions[j] {
				mark[u] = stamp
			}
			best, bestN := 0, -1
			for x, c := range left {
				if n := overlap(p.Chunks[c].Src, stamp); n > bestN {
					best, bestN = x, n
				}
			}
			c := p.Chunks[left[best]]
			left = append(left[:best], left[best+1:]...)
			batches[j] = append(batches[j], c.Id)
			for _, u := range c.Src {
				if mark[u] != stamp {
					unions[j] = append(unions[j], u)
					mark[u] = stamp
				}
			}
		}
	}
	order := []int{0}
	left := make([]int, 0, p.N-1)
	for j := 1; j < p.N; j++ {
		left = append(left, j)
	}
	for len(left) > 0 {
		stamp++
		for _, u := range unions[order[len(order)-1]] {
			mark[u] = stamp
		}
		best, bestN := 0, -1
		for x, j := range left {
			if n := overlap(unions[j], stamp); n > bestN {
				best, bestN = x, n
			}
		}
		order = append(order, left[best])
		left = append(left[:best], left[best+1:]...)
	}
	q := *p
	q.Sched = make([][]int, p.N)
	for j, b := range order {
		q.Sched[j] = batches[b]
	}
	return &q
}

// BatchRows returns, per device, the rows of its partition that batch
// reads (its transition set), in order of first use.
func (p *Plan) BatchRows(batch []int) [][]int32 {
	out := make([][]int32, p.M)
	if len(batch) == 1 && p.M == 1 {
		out[0] = p.Chunks[batch[0]].Src // one device: the chunk's rows
		return out
	}
	if p.seen == nil {
		p.seen = make([]int32, len(p.Owner))
	}
	p.stamp++
	for _, c := range batch {
		for _, u := range p.Chunks[c].Src {
			if p.seen[u] != p.stamp {
				p.seen[u] = p.stamp
				o := p.Owner[u]
				out[o] = append(out[o], u)
			}
		}
	}
	return out
}

// Aliased reports whether chunk c reads exactly the transition set rows
// of its own device k, in order: the buffer is then its input.
func (p *Plan) Aliased(k int, rows []int32, c *Chunk) bool {
	if len(rows) != len(c.Src) {
		return false
	}
	for j, u := range c.Src {
		if p.Owner[u] != int32(k) || rows[j] != u {
			return false
		}
	}
	return true
}

// Transitions is the deduplication plan of a schedule (HongTu §5, built
// once before training, like HongTu's preprocessing): per batch, each
// device's transition set (the p2p plan) and, with reuse, where each of
// its rows was in the device's set of the batch before (the reuse plan).
type Transitions struct {
	// Rows[j][i] are the rows of device i's partition that batch j reads,
	// in order of first use (BatchRows).
	Rows [][][]int32
	// Prev[j][i][k] is the position + 1 of Rows[j][i][k] in Rows[j-1][i],
	// 0 when the row was not there (it is loaded from the host); nil
	// without reuse.
	Prev [][][]int32
}

// Transitions returns the deduplication plan of p's schedule, with the
// reuse plan when reuse is set. It holds 4 bytes per row of V_+p2p (none
// on one device, whose sets are the chunks' rows) and with reuse 4 more.
func (p *Plan) Transitions(ctx context.Context, reuse bool) (*Transitions, error) {
	t := &Transitions{Rows: make([][][]int32, len(p.Sched))}
	for j, batch := range p.Sched {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t.Rows[j] = p.BatchRows(batch)
	}
	if !reuse {
		return t, nil
	}
	// pos: per node, its position + 1 in its owner's set of the batch
	// before (the devices' sets are disjoint: a row has one owner).
	pos := make([]int32, len(p.Owner))
	t.Prev = make([][][]int32, len(p.Sched))
	for j, sets := range t.Rows {
		t.Prev[j] = make([][]int32, len(sets))
		for i, rows := range sets {
			prev := make([]int32, len(rows))
			for k, u := range rows {
				prev[k] = pos[u]
			}
			if j > 0 {
				for _, u := range t.Rows[j-1][i] {
					pos[u] = 0
				}
			}
			for k, u := range rows {
				pos[u] = int32(k + 1)
			}
			t.Prev[j][i] = prev
		}
	}
	return t, nil
}
