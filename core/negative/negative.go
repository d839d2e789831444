// Package negative is the contract of negative samplers for link
// prediction (registry namespace "negative"): for every positive edge of a
// batch, k pairs of nodes that the model should score as non-edges.
// Implementations live in plugins/negative; each is a one-pair draw
// (Drawer) on the base (Base), which owns the checks, the per-positive
// random streams and the exclusion of known positives.
//
// Randomness: positive i of a call draws from its own stream, keyed by
// Offset(seed, i), so its negatives depend only on (seed, i, src[i],
// dst[i]). A caller that splits a batch draws positives [j, m) with seed
// Offset(seed, j) and gets exactly what one call over [0, m) with seed
// gives them (micro-batches, ranks of a distributed run).
package negative

import (
	"context"

	"strata/core/graph"
)

// Sampler draws negative pairs for positive edges.
type Sampler interface {
	// Bind prepares the sampler for a graph (core/graph convention: row i
	// of g lists the sources (in-neighbours) of node i, square); the
	// positives Draw is given are edges of g (the training graph). Called
	// once before Draw; Bind again replaces the graph.
	Bind(ctx context.Context, g *graph.CSR) error
	// Draw returns k negatives for each positive (src[i], dst[i]): nsrc,
	// ndst of length len(src)*k, positive i's negatives at [i*k, (i+1)*k).
	// The same seed, graph and arguments give the same pairs, and positive
	// i's negatives depend only on (seed, i, src[i], dst[i]) so that a
	// caller may draw a batch's negatives in any split (Offset). k < 1,
	// mismatched lengths or ids out of range are errors (naming k and the
	// fix). Draw is safe for concurrent calls between Binds.
	Draw(ctx context.Context, src, dst []int32, k int, seed uint64) (nsrc, ndst []int32, err error)
}

// Law is the distribution of one endpoint of a negative drawn for a
// positive (s, d) with exclusion off: with probability Keep the
// positive's own endpoint (s for the source, d for the destination),
// otherwise a node drawn from P.
type Law struct {
	// Keep is the probability that the positive's endpoint is kept, in
	// [0, 1].
	Keep float64
	// P is the probability of each node of the bound graph (NumRows
	// entries, summing to 1) when the endpoint is not kept; nil when Keep
	// is 1.
	P []float64
}

// Describer is implemented by every negative sampler: it declares the
// law of its draws on the bound graph, so that one conformance suite
// (negativetest) checks every sampler's distribution by a chi-square
// test. The laws hold for every positive (a sampler whose law depends on
// more than the positive's own endpoints cannot describe itself so).
type Describer interface {
	// Marginals returns the laws of a negative's source and destination
	// for the graph of the last Bind, with exclusion off.
	Marginals() (src, dst Law)
}

// Excluder is implemented by samplers with the exclude_positives option
// (every sampler on Base), so that tools and the suite can set it on a
// fresh instance before Bind.
type Excluder interface {
	SetExclude(on bool)
}

// gamma is splitmix64's increment (2^64 / the golden ratio, odd).
const gamma = 0x9E3779B97F4A7C15

// Offset returns the seed with which a Draw whose first positive is
// positive j of a larger batch drawn with seed continues that batch's
// streams: Draw(src[j:], dst[j:], k, Offset(seed, j)) equals the pairs
// from j*k on of Draw(src, dst, k, seed). Offset(seed, 0) == seed.
func Offset(seed uint64, j int) uint64 { return seed + uint64(j)*gamma }
