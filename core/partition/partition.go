// Package partition is the contract of graph partitioners (registry
// namespace "partitioner"): the nodes of a graph split into k parts.
// Implementations live in partitioners/.
package partition

import (
	"context"

	"strata/core/graph"
)

// Partitioner splits the g.NumRows nodes of g into k parts and returns the
// part of every node, in [0, k). nodeWeights is optional (nil means every
// node weighs 1); partitioners that balance a load use it, others document
// that they ignore it. Errors: k <= 0, k > number of nodes, a nodeWeights
// slice of the wrong length or with negative entries, a cancelled ctx.
type Partitioner interface {
	Partition(ctx context.Context, g *graph.CSR, k int, nodeWeights []int64) ([]int32, error)
}

// SquareOnly is implemented by partitioners that split square graphs only
// (METIS needs an undirected graph); the others also split the rows of a
// bipartite block, such as a batch's output nodes.
type SquareOnly interface {
	SquareOnly() bool
}

// IsSquareOnly reports whether p splits square graphs only.
func IsSquareOnly(p Partitioner) bool {
	s, ok := p.(SquareOnly)
	return ok && s.SquareOnly()
}

// Staged is a partitioner whose Partition call runs in named stages that
// can take long on a large graph (building the REG, running METIS). A
// caller shows its progress with ReportStages; partitioners print nothing.
type Staged interface {
	// Stages lists the stages a Partition call goes through, in order.
	Stages() []string
	// ReportStages sets the function called as each stage starts (and
	// with "done" at the end); nil stops reporting.
	ReportStages(func(stage string))
}

// TwoLevel is implemented by partitioners that split a graph in two
// levels, as HongTu's 2-level partition does (partitioner.hongtu-2level,
// which strategy.chunked partitions with): m partitions (one per device),
// each cut into k/m chunks. SetPartitions sets m; Partition(ctx, g, k, w)
// then returns the chunk of every node, partition i holding the chunks
// [i·k/m, (i+1)·k/m), and fails unless k is a multiple of m.
type TwoLevel interface {
	Partitioner
	SetPartitions(m int)
}

// PartCounter is implemented by a strategy (decoded with its options) that
// splits each step's output nodes into parts with [partition]: PartCount
// returns their number, 1 when it does not split, and 0 when it picks the
// number while training (from a memory estimate). `strata partition` and
// the experiment runner's partition kinds take their default K from it.
type PartCounter interface {
	PartCount() int
}

// PartsOf returns the parts a strategy module m splits each step into
// (PartCounter), and false when m splits none.
func PartsOf(m any) (int, bool) {
	p, ok := m.(PartCounter)
	if !ok {
		return 0, false
	}
	return p.PartCount(), true
}
