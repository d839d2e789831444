package partitioners

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"strata/core/graph"
	"strata/core/registry"
)

// REGStats describes one RedundancyGraph construction.
type REGStats struct {
	Outputs int // rows of the block: the nodes of the REG
	Inputs  int // columns of the block
	// SkippedHubs counts the inputs left out because they feed more than
	// MaxHubDegree outputs, and SkippedPairs the pair updates they would
	// have cost (Σ d·(d−1) over them).
	SkippedHubs  int64
	SkippedPairs int64
	// Pairs is the work done: Σ d·(d−1) over the kept inputs, d being the
	// number of distinct outputs an input feeds.
	Pairs int64
	// Edges is the number of stored REG entries (both directions).
	Edges int64
	// ScaledWeights is set by BettyREG when the total REG weight exceeded
	// METIS's 32-bit idx_t and the weights were scaled down for METIS.
	ScaledWeights bool
}

// RedundancyGraph builds Betty's redundancy-embedded graph (REG; Yang et
// al., ASPLOS 2023, §4.3.2 and Alg. 1) of a bipartite block: block row i
// lists the input nodes (columns) that output node i reads. The REG has
// one node per output; outputs i != j are joined when they share input
// nodes, with weight |N(i) ∩ N(j)|, the number of distinct shared inputs,
// so the weight of a cut between two micro-batches is the number of
// inputs both must load. This is C = AᵀA of the paper restricted to the
// output nodes, without self loops; in strata's row = destination
// convention it is B·Bᵀ for the block B. Duplicate block entries count
// once.
//
// It is computed sparsely, never densely: rows of the REG are built in
// chunks on runtime.GOMAXPROCS goroutines with one accumulator per
// goroutine, and every row is sorted, so the result does not depend on
// the number of goroutines. The returned CSR is symmetric and square
// (NumRows outputs, 32-bit ids); weights[e] is the weight of entry e.
//
// Cost: an input feeding d outputs contributes d·(d−1) pair updates and up
// to that many REG entries, so a hub of degree 10^5 alone costs 10^10.
// maxHubDegree > 0 skips the inputs that feed more outputs than that (they
// are shared by so many outputs that they will be loaded by nearly every
// micro-batch anyway); stats reports how many were skipped. 0 means no
// limit. The block must have at most 2^31-1 rows.
func RedundancyGraph(ctx context.Context, block *graph.CSR, maxHubDegree int) (*graph.CSR, []int64, REGStats, error) {
	const id = "partitioners.RedundancyGraph"
	if block == nil {
		return nil, nil, REGStats{}, fmt.Errorf("%s: nil block", id)
	}
	if block.NumRows > math.MaxInt32 {
		return nil, nil, REGStats{}, fmt.Errorf("%s: %d output nodes: at most %d", id, block.NumRows, math.MaxInt32)
	}
	if maxHubDegree < 0 {
		return nil, nil, REGStats{}, fmt.Errorf("%s: max hub degree %d: want 0 (no limit) or more", id, maxHubDegree)
	}
	if block.Idx64 != nil {
		return redundancyGraph(ctx, block, block.Idx64, maxHubDegree)
	}
	idx := block.Idx32
	if idx == nil {
		idx = []int32{}
	}
	return redundancyGraph(ctx, block, idx, maxHubDegree)
}

func redundancyGraph[K int32 | int64](ctx context.Context, block *graph.CSR, idx []K, maxHub int) (*graph.CSR, []int64, REGStats, error) {
	n, nc := block.NumRows, block.NumCols
	st := REGStats{Outputs: n, Inputs: nc}
	workers := max(1, runtime.GOMAXPROCS(0))

	// 1. A binary adjacency: sorted rows without duplicates.
	rowptr, cols := dedupRows(block.Indptr[:n+1], idx, workers)
	if err := ctx.Err(); err != nil {
		return nil, nil, st, err
	}

	// 2. Its transpose: the outputs of every input, ascending.
	tptr := make([]int64, nc+1)
	for _, c := range cols {
		tptr[c+1]++
	}
	for c := 0; c < nc; c++ {
		tptr[c+1] += tptr[c]
	}
	tout := make([]int32, len(cols))
	pos := slices.Clone(tptr[:nc])
	for r := 0; r < n; r++ {
		for _, c := range cols[rowptr[r]:rowptr[r+1]] {
			tout[pos[c]] = int32(r)
			pos[c]++
		}
	}
	pos = nil
	// keep[c]: the input takes part (it feeds 2 or more outputs and is not
	// a skipped hub).
	keep := make([]bool, nc)
	for c := 0; c < nc; c++ {
		d := tptr[c+1] - tptr[c]
		pairs := d * (d - 1)
		switch {
		case maxHub > 0 && d > int64(maxHub):
			st.SkippedHubs++
			st.SkippedPairs += pairs
		case d >= 2:
			keep[c] = true
			st.Pairs += pairs
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, st, err
	}

	// 3. Chunks of rows with near-equal work (pair updates + row length).
	work := make([]int64, n+1)
	for r := 0; r < n; r++ {
		w := int64(1)
		for _, c := range cols[rowptr[r]:rowptr[r+1]] {
			if keep[c] {
				w += tptr[c+1] - tptr[c]
			}
		}
		work[r+1] = work[r] + w
	}
	nchunks := min(n, 8*workers)
	var bounds []int
	if nchunks > 0 {
		bounds = RangeBounds(work, nchunks)
	}
	work = nil

	// forChunks runs fn(lo, hi, acc) on every chunk of rows, on up to
	// workers goroutines, each with its own zeroed n-entry scratch array
	// (fn must leave it zeroed). It reports a cancelled ctx.
	forChunks := func(fn func(lo, hi int, acc []int32)) error {
		var next atomic.Int64
		var wg sync.WaitGroup
		for w := 0; w < min(workers, nchunks); w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				acc := make([]int32, n)
				for {
					ci := int(next.Add(1) - 1)
					if ci >= nchunks || ctx.Err() != nil {
						return
					}
					fn(bounds[ci], bounds[ci+1], acc)
				}
			}()
		}
		wg.Wait()
		return ctx.Err()
	}

	// 4. Pass 1 counts the entries of every REG row (acc holds the last
	// row+1 that touched each output), pass 2 fills them, so the REG is
	// written in place without growing buffers.
	indptr := make([]int64, n+1)
	err := forChunks(func(lo, hi int, mark []int32) {
		for i := lo; i < hi; i++ {
			var c int64
			for _, u := range cols[rowptr[i]:rowptr[i+1]] {
				if !keep[u] {
					continue
				}
				for _, j := range tout[tptr[u]:tptr[u+1]] {
					if mark[j] != int32(i+1) && int(j) != i {
						mark[j] = int32(i + 1)
						c++
					}
				}
			}
			indptr[i+1] = c
		}
		for i := lo; i < hi; i++ { // leave the scratch zeroed
			for _, u := range cols[rowptr[i]:rowptr[i+1]] {
				if keep[u] {
					for _, j := range tout[tptr[u]:tptr[u+1]] {
						mark[j] = 0
					}
				}
			}
		}
	})
	if err != nil {
		return nil, nil, st, err
	}
	for i := 0; i < n; i++ {
		indptr[i+1] += indptr[i]
	}
	nnz := indptr[n]
	regCols := make([]int32, nnz)
	wts := make([]int64, nnz)
	err = forChunks(func(lo, hi int, acc []int32) {
		for i := lo; i < hi; i++ {
			row := regCols[indptr[i]:indptr[i+1]]
			k := 0
			for _, u := range cols[rowptr[i]:rowptr[i+1]] {
				if !keep[u] {
					continue
				}
				for _, j := range tout[tptr[u]:tptr[u+1]] {
					if int(j) == i {
						continue
					}
					if acc[j] == 0 {
						row[k] = j
						k++
					}
					acc[j]++
				}
			}
			// Sort the row: by a scan of acc when the row is dense.
			if len(row) > n/16 {
				k = 0
				for j, a := range acc {
					if a != 0 {
						row[k] = int32(j)
						k++
					}
				}
			} else {
				slices.Sort(row)
			}
			rw := wts[indptr[i]:indptr[i+1]]
			for e, j := range row {
				rw[e] = int64(acc[j])
				acc[j] = 0
			}
		}
	})
	if err != nil {
		return nil, nil, st, err
	}
	st.Edges = nnz
	reg := &graph.CSR{NumRows: n, NumCols: n, Indptr: indptr, Idx32: regCols}
	return reg, wts, st, nil
}

// dedupRows returns the rows of (indptr, idx) sorted and without
// duplicates. It returns the input itself when every row already is.
func dedupRows[K int32 | int64](indptr []int64, idx []K, workers int) ([]int64, []K) {
	n := len(indptr) - 1
	clean := true
	for r := 0; r < n && clean; r++ {
		row := idx[indptr[r]:indptr[r+1]]
		for e := 1; e < len(row); e++ {
			if row[e] <= row[e-1] {
				clean = false
				break
			}
		}
	}
	if clean {
		return indptr, idx
	}
	sorted := slices.Clone(idx)
	lens := make([]int64, n)
	parallelRows(n, workers, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row := sorted[indptr[r]:indptr[r+1]]
			slices.Sort(row)
			lens[r] = int64(len(slices.Compact(row)))
		}
	})
	out := make([]int64, n+1)
	for r := 0; r < n; r++ {
		out[r+1] = out[r] + lens[r]
	}
	cols := make([]K, out[n])
	for r := 0; r < n; r++ {
		copy(cols[out[r]:out[r+1]], sorted[indptr[r]:indptr[r]+lens[r]])
	}
	return out, cols
}

// parallelRows runs fn over [0,n) split into contiguous ranges on up to
// workers goroutines.
func parallelRows(n, workers int, fn func(lo, hi int)) {
	parts := min(workers, max(1, n/4096))
	if parts <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	for p := 0; p < parts; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(n*p/parts, n*(p+1)/parts)
		}()
	}
	wg.Wait()
}

// BettyREG is Betty's REG partitioning of a batch into micro-batches
// (Yang et al., ASPLOS 2023, Alg. 1): it builds the redundancy-embedded
// graph of the output nodes (see RedundancyGraph) and splits it with METIS
// using the REG weights as edge weights, so that outputs sharing many
// inputs land in the same micro-batch and the inputs loaded twice are few.
//
// What it partitions: the rows of g are the output nodes and each row's
// columns are that output's input nodes. g may be a bipartite block (a
// non-square CSR: NumRows outputs, NumCols inputs, as micro-batching
// produces; see PartitionBlock) or a square graph, in which case every
// node is an output and its in-neighbours are its inputs: nodes i and j
// are joined with weight |N_in(i) ∩ N_in(j)|. nodeWeights (per output) are
// METIS's vertex weights (node counts when nil). Node i of the result is
// output row i.
//
// Balance says what METIS balances between the micro-batches when the
// caller gives no weights: "outputs" (the paper: output nodes) or
// "inputs" (an output weighs 1 + its inputs, so every micro-batch reads
// about as many input rows). A micro-batch's memory grows with its
// inputs; balancing outputs lets outputs with few inputs gather in some
// micro-batches and the rest in others, and the largest sets the peak
// (experiments/betty-partitioners).
type BettyREG struct {
	MaxHubDegree int        `toml:"max_hub_degree" range:"[0,2147483647]" doc:"leave out of the REG the inputs that feed more outputs than this (a hub feeding d outputs costs d² pair updates); 0 = no limit"`
	Balance      REGBalance `toml:"balance" enum:"outputs,inputs" hash:"omitempty" doc:"what METIS balances between micro-batches: output nodes (Betty's REG) or 1 + each output's inputs (the input rows, which set a micro-batch's memory)"`
	MetisOptions
}

// StrataModule registers partitioner.betty-reg.
func (*BettyREG) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{
		ID:  "partitioner.betty-reg",
		New: func() registry.Module { return &BettyREG{Balance: balanceOutputs, MetisOptions: defaultMetisOptions()} },
		Doc: "Betty REG: METIS on the shared-input graph of a batch's outputs",
	}
}

// Validate checks the config.
func (b *BettyREG) Validate() error {
	if b.MaxHubDegree < 0 {
		return fmt.Errorf("max_hub_degree = %d: want 0 (no limit) or more", b.MaxHubDegree)
	}
	return b.MetisOptions.Validate()
}

// Partition implements Partitioner (see PartitionBlock).
func (b *BettyREG) Partition(ctx context.Context, g *graph.CSR, k int, nodeWeights []int64) ([]int32, error) {
	parts, _, err := b.PartitionBlock(ctx, g, k, nodeWeights)
	return parts, err
}

// PartitionBlock splits the block.NumRows output nodes of a block (or of
// a square graph) into k micro-batches and also returns the statistics of
// the REG construction (zero when k = 1: no REG is built).
func (b *BettyREG) PartitionBlock(ctx context.Context, block *graph.CSR, k int, nodeWeights []int64) ([]int32, REGStats, error) {
	const id = "partitioner.betty-reg"
	if err := checkArgs(id, block, k, nodeWeights); err != nil {
		return nil, REGStats{}, err
	}
	if err := ctx.Err(); err != nil {
		return nil, REGStats{}, err
	}
	n := block.NumRows
	if k == 1 {
		b.progress("done")
		return make([]int32, n), REGStats{}, nil
	}
	if err := checkMetisSize(id, n, 0); err != nil {
		return nil, REGStats{}, err
	}
	if b.Balance == balanceInputs {
		if nodeWeights != nil {
			return nil, REGStats{}, fmt.Errorf("%s: balance = %q weighs the outputs by their inputs, but the caller gave node weights too; use balance = %q with node weights", id, balanceInputs, balanceOutputs)
		}
		nodeWeights = inputWeights(block)
	}
	vw, err := metisNodeWeights(id, nodeWeights)
	if err != nil {
		return nil, REGStats{}, err
	}
	b.progress("reg")
	reg, wts, st, err := RedundancyGraph(ctx, block, b.MaxHubDegree)
	if err != nil {
		return nil, st, err
	}
	if err := checkMetisSize(id, n, reg.NNZ()); err != nil {
		return nil, st, err
	}
	adjwgt, scaled := metisEdgeWeights(wts)
	st.ScaledWeights = scaled
	mg := &metisGraph{n: n, xadj: narrowIndptr(reg.Indptr), adjncy: reg.Idx32, vwgt: vw, adjwgt: adjwgt}
	parts, err := b.partitionGraph(ctx, id, mg, k)
	if err != nil {
		return nil, st, err
	}
	b.progress("done")
	return parts, st, nil
}

// REGBalance is what BettyREG balances between micro-batches.
type REGBalance string

// Values of REGBalance.
const (
	balanceOutputs REGBalance = "outputs"
	balanceInputs  REGBalance = "inputs"
)

// IsDefault reports the paper's balance (outputs), which the config hash
// leaves out (configs from before the option keep their hash).
func (b REGBalance) IsDefault() bool { return b == "" || b == balanceOutputs }

// inputWeights weighs each output row of block by 1 + its entries (its
// inputs, counted with multiplicity).
func inputWeights(block *graph.CSR) []int64 {
	w := make([]int64, block.NumRows)
	for r := range w {
		w[r] = 1 + block.Indptr[r+1] - block.Indptr[r]
	}
	return w
}

// metisEdgeWeights converts REG weights (>= 1) to idx_t. When their total
// exceeds METIS's 32-bit idx_t (len(w) <= 2^31-1 is checked before), every
// weight is scaled by the same factor, rounded down and clamped to at
// least 1, so that the total fits; symmetric weights stay symmetric.
func metisEdgeWeights(w []int64) ([]int32, bool) {
	var total int64
	for _, x := range w {
		total += x
	}
	out := make([]int32, len(w))
	if total <= metisMaxIdx {
		for i, x := range w {
			out[i] = int32(x)
		}
		return out, false
	}
	budget := float64(metisMaxIdx - int64(len(w))) // the clamp adds at most 1 per entry
	f := budget / float64(total)
	for i, x := range w {
		out[i] = int32(max(1, int64(float64(x)*f)))
	}
	return out, true
}

func init() {
	registry.Register(new(BettyREG))
}
