// Package microsplit splits batches into micro-batches with the
// [partition] plugin, for a fixed K or the smallest K that fits a device
// by the memory estimate (Betty), and sizes evaluation chunks the same
// way: the micro-batching that strategy.micro and strategy.minibatch
// share (internal kit of plugins/strategy).
package microsplit

import (
	"context"
	"fmt"
	"slices"

	"strata/core/config"
	"strata/core/graph"
	"strata/core/partition"
	"strata/core/registry"
	"strata/core/sampling"
	"strata/plugins/strategy/internal/memest"
	"strata/plugins/strategy/internal/options"
	"strata/plugins/strategy/internal/steprun"
)

// MicroBatch is one micro-batch of a batch: its output nodes, its share of
// the batch's blocks and its estimated peak.
type MicroBatch struct {
	Nodes  []int32          // global ids of its outputs (the last block's destinations)
	Rows   []int32          // the rows of its outputs among the batch's, ascending
	Blocks []sampling.Block // its sub-blocks (see splitBlocks)
	Est    memest.Estimate  // zero unless estimated
}

// SplitFrom returns mb's blocks: Blocks when the split kept them,
// otherwise mb's share of the batch's blocks, split afresh (a Lazy
// Splitter's micro-batches).
func (mb *MicroBatch) SplitFrom(batch []sampling.Block) []sampling.Block {
	if mb.Blocks != nil {
		return mb.Blocks
	}
	return SplitBlocks(batch, mb.Rows)
}

// SplitBlocks returns the blocks that compute the given destination rows
// (local ids) of a batch's last block: layer by layer down, each row keeps
// all its edges, in the same order, and the sources it reads become the
// destinations of the block below. A micro-batch over these blocks sees the
// same neighbours as the whole batch, so its outputs equal the batch's.
// Destinations stay the first sources, in order (the block convention).
func SplitBlocks(blocks []sampling.Block, rows []int32) []sampling.Block {
	var s BlockSplitter
	return s.Split(blocks, rows)
}

// BlockSplitter splits blocks as SplitBlocks does, keeping between calls
// a table of the new local id of each old source, so that many splits of
// one batch (every K that Splitter.Auto tries, and the one-node splits of
// its feasibility bound) cost what their sub-blocks hold rather than a
// hash map each. Not safe for concurrent use.
type BlockSplitter struct {
	pos []int32 // new local id + 1 of each old local source; 0 = not taken (all 0 between calls)
}

// Split returns SplitBlocks(blocks, rows).
func (s *BlockSplitter) Split(blocks []sampling.Block, rows []int32) []sampling.Block {
	out := make([]sampling.Block, len(blocks))
	need := rows
	for l := len(blocks) - 1; l >= 0; l-- {
		b := blocks[l]
		if len(s.pos) < b.Adj.NumCols {
			s.pos = make([]int32, b.Adj.NumCols)
		}
		pos := s.pos
		src := make([]int32, 0, 2*len(need)) // old local source ids, in the new order
		for _, r := range need {
			src = append(src, r)
			pos[r] = int32(len(src))
		}
		a := b.Adj
		indptr := make([]int64, len(need)+1)
		var n int64
		for _, r := range need {
			n += a.Indptr[r+1] - a.Indptr[r]
		}
		idx := make([]int32, 0, n)
		var vals []float32
		if a.Values != nil {
			vals = make([]float32, 0, n)
		}
		for i, r := range need {
			for e := a.Indptr[r]; e < a.Indptr[r+1]; e++ {
				c := int32(a.Col(e))
				j := pos[c] - 1
				if j < 0 {
					j = int32(len(src))
					src = append(src, c)
					pos[c] = j + 1
				}
				idx = append(idx, j)
				if vals != nil {
					vals = append(vals, a.Values[e])
				}
			}
			indptr[i+1] = int64(len(idx))
		}
		for _, c := range src {
			pos[c] = 0
		}
		nb := sampling.Block{Dst: make([]int32, len(need)), Src: make([]int32, len(src)), Excluded: b.Excluded,
			Adj: &graph.CSR{NumRows: len(need), NumCols: len(src), Indptr: indptr, Idx32: idx, Values: vals}}
		for i, r := range need {
			nb.Dst[i] = b.Dst[r]
		}
		for i, c := range src {
			nb.Src[i] = b.Src[c]
		}
		out[l] = nb
		need = src // sources of block l are destinations of block l-1, same ids
	}
	return out
}

// Splitter splits batches into micro-batches with the configured
// partitioner, for a fixed K or, with an estimator and a device capacity,
// the smallest K whose largest micro-batch's estimated peak fits (Betty's
// memory-aware repartitioning). A Splitter is used by one goroutine at a
// time.
type Splitter struct {
	part     partition.Partitioner
	id       string // the partitioner's registry ID, for messages
	square   bool   // the partitioner takes the graph among the outputs
	Est      *memest.Estimator
	Capacity int64
	// Lazy keeps no micro-batch's blocks once it is estimated (Blocks
	// nil): the caller splits each when it runs it (SplitFrom), so a
	// batch in K micro-batches holds one micro-batch's blocks at a time,
	// not K (those of a deep model each reach most of the graph).
	Lazy   bool
	blocks BlockSplitter // the sub-blocks of every split
}

// newSplitter provisions the [partition] plugin; what names what it splits
// ("training nodes", "output nodes of each mini-batch") for messages.
// needPartitioner checks that micro-batching has a [partition] to split
// what with.
func NeedPartitioner(cfg *config.Config, what string) error {
	if cfg.Partition.Name != "" || options.SplitOf(cfg).MicroBatches == 1 {
		return nil // one micro-batch splits nothing
	}
	return cfg.KeyError(fmt.Sprintf("%s = %s needs a partitioner to split the %s: add [partition] with name = \"betty-reg\" (or %s)",
		options.SplitKeyName(cfg), options.SplitOf(cfg).Text(), what, registry.QuoteList(partitionerNames())), options.SplitKey(cfg)...)
}

func NewSplitter(ctx context.Context, cfg *config.Config, what string) (*Splitter, error) {
	if err := NeedPartitioner(cfg, what); err != nil {
		return nil, err
	}
	if cfg.Partition.Name == "" {
		return &Splitter{}, nil // micro_batches = 1: one micro-batch, no partitioner
	}
	part, ok := cfg.Partition.Module.(partition.Partitioner)
	if !ok {
		return nil, fmt.Errorf("partition.name = %q is not a partitioner", cfg.Partition.Name)
	}
	s := &Splitter{part: part, id: cfg.Partition.ID}
	if sq, ok := part.(partition.SquareOnly); ok && sq.SquareOnly() {
		s.square = true
	}
	return s, nil
}

// partition splits the outputs of a batch (its last block's destinations)
// into k non-empty parts and returns the local rows of each, ascending.
// Partitioners that need a square graph split the graph induced on the
// outputs (the last block's columns that are destinations); the others the
// last block itself, outputs by the inputs they read (betty-reg's REG).
func (s *Splitter) partition(ctx context.Context, blocks []sampling.Block, k int) ([][]int32, error) {
	last := blocks[len(blocks)-1].Adj
	n := last.NumRows
	if k > n {
		return nil, fmt.Errorf("partition: %d micro-batches for %d output nodes", k, n)
	}
	parts := make([]int32, n)
	if k > 1 {
		g := last
		if s.square {
			g = squareBlock(last)
		}
		var err error
		if parts, err = s.part.Partition(ctx, g, k, nil); err != nil {
			return nil, fmt.Errorf("partition: %s splitting %d output nodes into %d micro-batches: %w", s.id, n, k, err)
		}
	}
	rows := make([][]int32, k)
	for i, p := range parts {
		rows[p] = append(rows[p], int32(i))
	}
	FillEmpty(rows)
	return rows, nil
}

// FillEmpty gives every empty part one row from the largest part (its
// last), so that k parts of n >= k rows are all non-empty. A partitioner
// may leave parts empty when the graph it splits falls apart into fewer
// connected pieces than parts (isolated outputs that share no inputs).
func FillEmpty(rows [][]int32) {
	for p := range rows {
		if len(rows[p]) > 0 {
			continue
		}
		big := 0
		for q := range rows {
			if len(rows[q]) > len(rows[big]) {
				big = q
			}
		}
		if len(rows[big]) < 2 {
			return // fewer rows than parts: the caller checked k <= n
		}
		last := len(rows[big]) - 1
		rows[p] = []int32{rows[big][last]}
		rows[big] = rows[big][:last]
	}
	for _, r := range rows {
		slices.Sort(r)
	}
}

// squareBlock returns the graph a block induces on its destinations: the
// entries whose source is a destination (local ids below NumRows).
func squareBlock(a *graph.CSR) *graph.CSR {
	out := &graph.CSR{NumRows: a.NumRows, NumCols: a.NumRows, Indptr: make([]int64, a.NumRows+1), Idx32: []int32{}}
	for r := 0; r < a.NumRows; r++ {
		for e := a.Indptr[r]; e < a.Indptr[r+1]; e++ {
			if c := a.Col(e); c < int64(a.NumRows) {
				out.Idx32 = append(out.Idx32, int32(c))
			}
		}
		out.Indptr[r+1] = int64(len(out.Idx32))
	}
	return out
}

// Split returns the k micro-batches of a batch, estimated when s has an
// estimator, and the largest estimate.
func (s *Splitter) Split(ctx context.Context, blocks []sampling.Block, k int) ([]MicroBatch, memest.Estimate, error) {
	rows, err := s.partition(ctx, blocks, k)
	if err != nil {
		return nil, memest.Estimate{}, err
	}
	return s.microBatches(blocks, rows)
}

func (s *Splitter) microBatches(blocks []sampling.Block, rows [][]int32) ([]MicroBatch, memest.Estimate, error) {
	var worst memest.Estimate
	out := make([]MicroBatch, len(rows))
	for i, r := range rows {
		sub := s.blocks.Split(blocks, r)
		out[i] = MicroBatch{Nodes: sub[len(sub)-1].Dst, Rows: r}
		if !s.Lazy {
			out[i].Blocks = sub
		}
		if s.Est == nil {
			continue
		}
		e, err := s.Est.Step(sub)
		if err != nil {
			return nil, worst, err
		}
		out[i].Est = e
		if e.Peak > worst.Peak {
			worst = e
		}
	}
	return out, worst, nil
}

// InfeasibleError says that no number of micro-batches fits the device:
// even one output node per micro-batch needs MinCapacity bytes.
type InfeasibleError struct {
	Capacity    int64 // devices.memory_bytes, or the device's memory pool (OnDevice)
	MinCapacity int64 // the smallest capacity any split of the batch fits in
	Resident    int64 // parameters, gradients and optimizer state
	Node        int32 // the output node whose micro-batch needs MinCapacity
	// EvalCapacity, when set, is what evaluation needs one node at a
	// time (the run needs the larger of the two).
	EvalCapacity int64
	// Sampled says the batch was sampled: another batch may need more.
	Sampled bool
	// OnDevice says the capacity is a device's memory pool, not
	// devices.memory_bytes (memest.Estimator.OnDevice).
	OnDevice bool
}

// capacityName names what a capacity is, for messages: the simulated
// device's devices.memory_bytes, or a device's free memory.
func capacityName(onDevice bool) string {
	if onDevice {
		return "the device's free memory (its memory pool)"
	}
	return "devices.memory_bytes"
}

func (e *InfeasibleError) Error() string {
	why := fmt.Sprintf("even a micro-batch of one output node (node %d) needs an estimated %s", e.Node, steprun.MiB(e.MinCapacity))
	if e.Resident >= e.Capacity {
		why = fmt.Sprintf("the parameters, their gradients and the optimizer state alone need %s", steprun.MiB(e.Resident))
	}
	least, note := max(e.MinCapacity, e.EvalCapacity), ""
	if e.EvalCapacity > e.MinCapacity {
		note = fmt.Sprintf(", which evaluation needs (training needs %d)", e.MinCapacity)
	}
	verb := "is"
	if e.Sampled {
		verb, note = "is at least", note+" for this sampled batch"
	}
	name := capacityName(e.OnDevice)
	return fmt.Sprintf("micro_batches = \"auto\": no number of micro-batches fits %s = %d (%s): %s; "+
		"the smallest feasible capacity %s %s = %d (%s)%s; or shrink the model (model.hidden, model.layers) or the sampler's fanouts",
		name, e.Capacity, steprun.MiB(e.Capacity), why, verb, name, least, steprun.MiB(least), note)
}

// minCapacity returns the smallest device capacity any split of the batch
// fits in: a micro-batch's peak only grows with its outputs, so the split
// into single nodes is the best there is, and its largest member bounds
// every split.
func (s *Splitter) minCapacity(ctx context.Context, blocks []sampling.Block) (memest.Estimate, int32, error) {
	var worst memest.Estimate
	var node int32
	n := len(blocks[len(blocks)-1].Dst)
	for r := range n {
		if err := ctx.Err(); err != nil {
			return worst, 0, err
		}
		e, err := s.Est.Step(s.blocks.Split(blocks, []int32{int32(r)}))
		if err != nil {
			return worst, 0, err
		}
		if e.Peak > worst.Peak {
			worst, node = e, blocks[len(blocks)-1].Dst[r]
		}
	}
	return worst, node, nil
}

// Auto finds the smallest K (from a lower bound, as Betty: K, K+1, ...;
// in steps of K/8 beyond K = 8) whose largest micro-batch's estimated peak
// fits s.capacity, and returns its micro-batches. It fails with an
// *InfeasibleError when no K can fit.
func (s *Splitter) Auto(ctx context.Context, blocks []sampling.Block) ([]MicroBatch, memest.Estimate, error) {
	n := len(blocks[len(blocks)-1].Dst)
	whole, err := s.Est.Step(blocks)
	if err != nil {
		return nil, whole, err
	}
	if whole.Peak <= s.Capacity {
		mbs, _, err := s.microBatches(blocks, [][]int32{steprun.Iota32(n)})
		return mbs, whole, err
	}
	infeasible := func() error {
		lo, node, err := s.minCapacity(ctx, blocks)
		if err != nil {
			return err
		}
		return &InfeasibleError{Capacity: s.Capacity, MinCapacity: lo.Peak, Resident: whole.Resident, Node: node, OnDevice: s.Est.Device() != nil}
	}
	if whole.Resident >= s.Capacity {
		return nil, whole, infeasible()
	}
	// The micro-batches' non-resident bytes add up to at least the whole
	// batch's (their sources overlap, their outputs and edges partition
	// the batch's), so the largest is at least 1/K of it.
	need, room := whole.Peak-whole.Resident, s.Capacity-whole.Resident
	k := max(2, min(int((need+room-1)/room), n))
	for {
		if err := ctx.Err(); err != nil {
			return nil, whole, err
		}
		mbs, worst, err := s.Split(ctx, blocks, k)
		if err != nil {
			return nil, worst, err
		}
		if worst.Peak <= s.Capacity {
			return mbs, worst, nil
		}
		if k == n {
			return nil, worst, infeasible()
		}
		k = min(n, k+max(1, k/8))
	}
}
