package strategy

import (
	"context"
	"fmt"

	"strata/core/graph"
	"strata/core/train"
)

// chunk is one subgraph of HongTu's 2-level partition (§4.1): a set of
// destination nodes with all their in-edges, so a layer computed over it
// gives its destinations exactly what the whole graph gives them.
type chunk struct {
	id, part int
	dst      []int32 // global ids, ascending
	// src are the rows the chunk reads (HongTu's N_ij): its destinations
	// first, in order (the block convention), then their other
	// in-neighbours.
	src    []int32
	graphs map[string]*chunkGraph
	train  []int32 // local rows (into dst) of its training nodes
	labels []int32 // the labels of dst
}

// chunkGraph is a chunk's rows of one adjacency ("adj" or "adj_self"),
// in local ids, with the full graph's edge weights of the model's
// reducers (nil when no aggregation over the graph needs them).
type chunkGraph struct {
	csr       *graph.CSR
	gcn, mean []float32
}

// chunkPlan is the 2-level partition of a graph into m partitions of n
// chunks each and their schedule: batch j runs chunk sched[j][i] on
// device i.
type chunkPlan struct {
	m, n   int
	chunks []*chunk // by partitioner id: partition i holds [i·n, (i+1)·n)
	sched  [][]int
	owner  []int32 // per node: its partition, the device its rows belong to
	seen   []int32 // per node: the last batchRows call that met it
	stamp  int32
}

// newChunkPlan builds the chunks of the partition part (chunk id per
// node, k = m·n chunks) over the adjacencies the model reads (used: each
// with its aggregations' reducers), and the plain schedule (batch j = the
// j-th chunk of every partition).
func newChunkPlan(ctx context.Context, adjs *train.Adjacencies, used map[string]map[string]bool, part []int32, m, n int, labels, trainIdx []int32) (*chunkPlan, error) {
	k := m * n
	p := &chunkPlan{m: m, n: n, chunks: make([]*chunk, k), owner: make([]int32, len(part))}
	for c := range p.chunks {
		p.chunks[c] = &chunk{id: c, part: c / n, graphs: map[string]*chunkGraph{}}
	}
	for v, c := range part {
		if c < 0 || int(c) >= k {
			return nil, fmt.Errorf("chunked: the partitioner put node %d in chunk %d of %d", v, c, k)
		}
		p.chunks[c].dst = append(p.chunks[c].dst, int32(v))
		p.owner[v] = c / int32(n)
	}
	isTrain := make([]bool, len(part))
	for _, v := range trainIdx {
		isTrain[v] = true
	}
	type full struct {
		csr       *graph.CSR
		gcn, mean []float32
	}
	var graphs []string
	fulls := map[string]full{}
	for _, name := range []string{"adj", "adj_self"} {
		if reducers, ok := used[name]; ok {
			csr := adjs.Adj
			if name == "adj_self" {
				csr = adjs.AdjSelf
			}
			graphs = append(graphs, name)
			f := full{csr: csr}
			if reducers["gcn"] {
				f.gcn = graph.GCNNorm(csr)
			}
			if reducers["mean"] {
				f.mean = graph.MeanNorm(csr)
			}
			fulls[name] = f
		}
	}
	local := make([]int32, len(part)) // global → local source id + 1 (0: none)
	for _, c := range p.chunks {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(c.dst) == 0 {
			return nil, fmt.Errorf("chunked: chunk %d of partition %d is empty", c.id%n, c.part)
		}
		c.src = append(make([]int32, 0, 2*len(c.dst)), c.dst...)
		for i, v := range c.dst {
			local[v] = int32(i + 1)
			c.labels = append(c.labels, labels[v])
			if isTrain[v] {
				c.train = append(c.train, int32(i))
			}
		}
		for _, name := range graphs {
			f := fulls[name]
			var nnz int64
			for _, v := range c.dst {
				nnz += f.csr.Indptr[v+1] - f.csr.Indptr[v]
			}
			cg := &chunkGraph{csr: &graph.CSR{NumRows: len(c.dst), Indptr: make([]int64, len(c.dst)+1), Idx32: make([]int32, 0, nnz)}}
			if f.gcn != nil {
				cg.gcn = make([]float32, 0, nnz)
			}
			if f.mean != nil {
				cg.mean = make([]float32, 0, nnz)
			}
			for i, v := range c.dst {
				for e := f.csr.Indptr[v]; e < f.csr.Indptr[v+1]; e++ {
					u := int32(f.csr.Col(e))
					if local[u] == 0 {
						c.src = append(c.src, u)
						local[u] = int32(len(c.src))
					}
					cg.csr.Idx32 = append(cg.csr.Idx32, local[u]-1)
					if f.gcn != nil {
						cg.gcn = append(cg.gcn, f.gcn[e])
					}
					if f.mean != nil {
						cg.mean = append(cg.mean, f.mean[e])
					}
				}
				cg.csr.Indptr[i+1] = int64(len(cg.csr.Idx32))
			}
			c.graphs[name] = cg
		}
		for _, cg := range c.graphs {
			cg.csr.NumCols = len(c.src)
		}
		for _, u := range c.src {
			local[u] = 0
		}
	}
	p.sched = make([][]int, n)
	for j := range p.sched {
		p.sched[j] = make([]int, m)
		for i := range p.sched[j] {
			p.sched[j][i] = i*n + j
		}
	}
	return p, nil
}

// commRows counts the neighbour rows one pass over a layer loads from the
// host (HongTu §5.3): without deduplication (V_ori, every chunk loads its
// src), with p2p sharing (V_+p2p, each row of a batch crosses once) and
// with p2p and reuse (V_+ru, rows of the batch before are reused).
type commRows struct{ ori, p2p, ru int64 }

// comm returns the plan's commRows under its schedule.
func (p *chunkPlan) comm(nodes int) commRows {
	var r commRows
	mark := make([]int32, nodes) // batch index + 1 of the last batch that read the node
	for j, batch := range p.sched {
		stamp := int32(j + 1)
		for _, c := range batch {
			for _, u := range p.chunks[c].src {
				r.ori++
				switch mark[u] {
				case stamp:
					continue
				case stamp - 1:
					if j > 0 {
						r.p2p++
						mark[u] = stamp
						continue
					}
				}
				r.p2p++
				r.ru++
				mark[u] = stamp
			}
		}
	}
	return r
}

// reorganize reorders the chunks with HongTu's 2-phase heuristic (Alg.
// 4). Phase 1 regroups the chunks into batches: batch j starts with
// partition 0's j-th chunk, and every other partition in turn gives each
// batch the remaining chunk that shares the most neighbours with the
// batch's union so far (inter-device duplicates, served over p2p). Phase
// 2 orders the batches greedily so that each shares the most neighbours
// with the one before it (intra-device reuse).
// It returns the reorganised plan (sharing p's chunks).
func (p *chunkPlan) reorganize(nodes int) *chunkPlan {
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
	batches := make([][]int, p.n)
	unions := make([][]int32, p.n)
	for j := range batches {
		c := p.chunks[j]
		batches[j] = []int{c.id}
		unions[j] = append([]int32(nil), c.src...)
	}
	for i := 1; i < p.m; i++ {
		left := make([]int, p.n)
		for j := range left {
			left[j] = i*p.n + j
		}
		for j := range batches {
			stamp++
			for _, u := range unions[j] {
				mark[u] = stamp
			}
			best, bestN := 0, -1
			for x, c := range left {
				if n := overlap(p.chunks[c].src, stamp); n > bestN {
					best, bestN = x, n
				}
			}
			c := p.chunks[left[best]]
			left = append(left[:best], left[best+1:]...)
			batches[j] = append(batches[j], c.id)
			for _, u := range c.src {
				if mark[u] != stamp {
					unions[j] = append(unions[j], u)
					mark[u] = stamp
				}
			}
		}
	}
	order := []int{0}
	left := make([]int, 0, p.n-1)
	for j := 1; j < p.n; j++ {
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
	q.sched = make([][]int, p.n)
	for j, b := range order {
		q.sched[j] = batches[b]
	}
	return &q
}
