package train

import (
	"context"
	"fmt"
	"slices"

	"strata/core/config"
	"strata/partitioners"
	"strata/plugins/registry"
	"strata/plugins/sampler"
)

// microBatches splits every step into K micro-batches of training nodes, as
// Betty does: each micro-batch runs over the full-neighbour blocks of its
// nodes, the gradients of all of them accumulate into one optimizer step,
// and peak memory is that of the largest micro-batch, not of the graph.
//
// The step's gradient equals the full-graph gradient: every micro-batch's
// mean loss is weighed by its share of the training nodes, and block edges
// carry the full graph's normalisation weights. (Dropout draws differ, and
// batch norm sees each micro-batch's statistics.)
type microBatches struct {
	*blockRunner
	train  [][]int32 // micro-batches of training nodes, ascending
	total  int       // training nodes
	inputs []int     // input rows (block 0 sources) per micro-batch, last step
	// wholeInputs is the input rows of the whole batch (all training
	// nodes at once), the denominator of the redundancy.
	wholeInputs int
}

// redundancy returns Betty's redundancy of the last step: the micro-batches'
// input rows summed, over the whole batch's.
func (m *microBatches) redundancy() float64 {
	s := 0
	for _, n := range m.inputs {
		s += n
	}
	return float64(s) / float64(m.wholeInputs)
}

func newMicroBatches(ctx context.Context, cfg *config.Config, e stepEnv) (*microBatches, error) {
	k := cfg.Train.MicroBatches
	train := e.ds.Train
	if k > len(train) {
		return nil, cfg.KeyError(fmt.Sprintf("train.micro_batches = %d is more than the %d training nodes", k, len(train)), "train", "micro_batches")
	}
	if cfg.Partition.Name == "" {
		return nil, cfg.KeyError(fmt.Sprintf("train.micro_batches = %d needs a partitioner to split the training nodes: add [partition] with name = \"betty-reg\" (or %s)",
			k, registry.QuoteList(partitionerNames())), "train", "micro_batches")
	}
	part, ok := cfg.Partition.Module.(partitioners.Partitioner)
	if !ok {
		return nil, fmt.Errorf("partition.name = %q is not a partitioner", cfg.Partition.Name)
	}
	if err := registry.Provision(ctx, cfg.Partition.Module); err != nil {
		return nil, fmt.Errorf("partition: %w", err)
	}
	// Split the training nodes by their last-layer block: rows are the
	// training nodes, columns the nodes they read.
	last, err := (&sampler.Full{Layers: 1}).Sample(ctx, e.adjs.adj, train, 0)
	if err != nil {
		return nil, err
	}
	g := last[0].Adj
	if sq, ok := part.(partitioners.SquareOnly); ok && sq.SquareOnly() {
		g = induced(e.adjs.adj, train) // METIS: the graph among the training nodes
	}
	parts, err := part.Partition(ctx, g, k, nil)
	if err != nil {
		return nil, fmt.Errorf("partition: splitting %d training nodes into %d micro-batches: %w", len(train), k, err)
	}
	// Evaluation reads every node, bound for inference (no gradients): on
	// a device with a capacity in twice as many chunks as training, so it
	// fits wherever training does, otherwise in one piece.
	evalChunks := 1
	if cfg.Devices.MemoryBytes > 0 {
		evalChunks = 2 * k
	}
	r, err := newBlockRunner(e, evalChunks)
	if err != nil {
		return nil, err
	}
	m := &microBatches{blockRunner: r, total: len(train), train: make([][]int32, k)}
	for i, p := range parts {
		m.train[p] = append(m.train[p], train[i])
	}
	for i, mb := range m.train {
		if len(mb) == 0 {
			r.release()
			return nil, fmt.Errorf("partition: %s left micro-batch %d of %d empty", cfg.Partition.ID, i, k)
		}
		slices.Sort(mb)
	}
	whole, err := r.full.Sample(ctx, e.adjs.adj, train, 0)
	if err != nil {
		r.release()
		return nil, err
	}
	m.wholeInputs = len(whole[0].Src)
	return m, nil
}

func partitionerNames() []string {
	var out []string
	for _, mi := range registry.Namespace("partitioner") {
		out = append(out, mi.Name())
	}
	return out
}

// epoch is one optimizer step over all micro-batches.
func (m *microBatches) epoch(ctx context.Context, seed uint64, update func() error) (float64, error) {
	if err := m.ps.ZeroGrads(); err != nil {
		return 0, err
	}
	m.inputs = m.inputs[:0]
	var loss float64
	for i, nodes := range m.train {
		blocks, err := m.full.Sample(ctx, m.e.adjs.adj, nodes, 0)
		if err != nil {
			return 0, err
		}
		bb, err := m.bind(blocks, nil, nil, false)
		if err != nil {
			return 0, fmt.Errorf("micro-batch %d: %w", i, err)
		}
		l, err := m.trainBatch(ctx, bb, nodes, seed^uint64(i+1)*0x9e3779b97f4a7c15, float64(len(nodes))/float64(m.total), true)
		m.inputs = append(m.inputs, len(blocks[0].Src))
		bb.release(m.e)
		if err != nil {
			return 0, fmt.Errorf("micro-batch %d: %w", i, err)
		}
		loss += l
	}
	return loss, update()
}
