// Package partitioners holds graph partitioners: modules of the
// "partitioner" registry namespace that split the nodes of a graph into k
// parts.
//
// Registered modules:
//
//	partitioner.range   contiguous id ranges, balanced by node count (or node
//	                    weights) or by edges (config balance = "edges")
//	partitioner.random  a seeded, count-balanced random assignment
//	partitioner.hash    node id modulo k
//	partitioner.metis   METIS 5.1 (cgo, Debian's libmetis) k-way or recursive
//	                    min-edge-cut partitioning of the symmetrised graph
//	partitioner.hongtu-2level
//	                    HongTu's 2-level partitioning: METIS into m
//	                    partitions, each cut into k/m edge-balanced chunks
//	partitioner.betty-reg
//	                    Betty's redundancy-embedded-graph partitioning of a
//	                    batch's output nodes (also bipartite blocks)
//
// Quality measures a partition (edge cut, balance, HongTu's neighbour
// replication factor, Betty's input redundancy) and RedundancyGraph builds
// Betty's REG of a bipartite block.
package partitioners

import (
	"fmt"
	"math/bits"

	"strata/core/graph"
	"strata/core/partition"
	"strata/core/registry"
)

// The contract's types (core/partition), under their package-local names.
type (
	// Partitioner is partition.Partitioner.
	Partitioner = partition.Partitioner
	// SquareOnly is partition.SquareOnly.
	SquareOnly = partition.SquareOnly
	// Staged is partition.Staged.
	Staged = partition.Staged
	// Metrics is partition.Metrics.
	Metrics = partition.Metrics
)

// Quality measures a partition of g (partition.Quality).
func Quality(g *graph.CSR, parts []int32, k int) Metrics { return partition.Quality(g, parts, k) }

// checkArgs validates the arguments common to every partitioner.
func checkArgs(id string, g *graph.CSR, k int, nodeWeights []int64) error {
	if g == nil {
		return fmt.Errorf("%s: nil graph", id)
	}
	n := g.NumRows
	if k <= 0 {
		return fmt.Errorf("%s: k = %d parts: k must be >= 1", id, k)
	}
	if k > n {
		return fmt.Errorf("%s: k = %d parts for a graph of %d nodes: k must be <= the number of nodes", id, k, n)
	}
	if k > 1<<31-1 {
		return fmt.Errorf("%s: k = %d parts does not fit in int32", id, k)
	}
	if nodeWeights != nil {
		if len(nodeWeights) != n {
			return fmt.Errorf("%s: %d node weights for %d nodes", id, len(nodeWeights), n)
		}
		for i, w := range nodeWeights {
			if w < 0 {
				return fmt.Errorf("%s: node %d has negative weight %d", id, i, w)
			}
		}
	}
	return nil
}

// checkEvery is how many nodes a loop processes between ctx checks.
const checkEvery = 1 << 18

// splitmix64 is a small, fully specified PRNG so that seeded results are
// reproducible across Go versions.
type splitmix64 uint64

func (s *splitmix64) next() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// below returns a number in [0, n) (multiply-shift; the bias is below 2^-32
// for n < 2^32).
func (s *splitmix64) below(n uint64) uint64 {
	hi, _ := bits.Mul64(s.next(), n)
	return hi
}

func init() {
	registry.Register(new(Range))
	registry.Register(new(Random))
	registry.Register(new(Hash))
}

// ReportStages implements Staged for the METIS-based partitioners.
func (o *MetisOptions) ReportStages(f func(stage string)) { o.Progress = f }

// Stages implements Staged.
func (m *Metis) Stages() []string { return []string{"symmetrize", "metis"} }

// Stages implements Staged.
func (h *HongTu2Level) Stages() []string { return []string{"symmetrize", "metis", "chunks"} }

// Stages implements Staged.
func (b *BettyREG) Stages() []string { return []string{"reg", "metis"} }
