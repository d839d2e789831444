package sampler

import (
	"context"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"strata/core/graph"
	_ "strata/core/graph/formats" // the formats graph.Open reads
	_ "strata/core/graph/numpy"
)

// Benchmarks report sampled edges per second (all blocks of a batch, as
// the peer's minibatch.py counts sampled_edges_per_s) for batches of 1024
// seeds with the peer's fanouts: its "25,10" (seeds first, PyG order) is
// fanouts = [10, 25] here (first layer first, DGL order).
//
//	go test ./plugins/sampler/ -run '^$' -bench . -benchtime 2s
//
// With STRATA_PEER_RMAT set to the peer's R-MAT directory (OGB layout,
// e.g. /tmp/gnn-peers-data/rmat-20-16-128-16-0), BenchmarkPeerRMAT* run on
// that graph, symmetrised as the peer does, with seeds drawn from its
// training split.

const benchBatch = 1024

// benchSeeds returns nb batches of benchBatch distinct seeds from pool,
// in a fixed shuffled order.
func benchSeeds(pool []int32, nb int) [][]int32 {
	p := append([]int32(nil), pool...)
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
	var out [][]int32
	for b := 0; b < nb && (b+1)*benchBatch <= len(p); b++ {
		out = append(out, p[b*benchBatch:(b+1)*benchBatch])
	}
	return out
}

func runSamplerBench(b *testing.B, g *graph.CSR, batches [][]int32, s Sampler) {
	b.Helper()
	ctx := context.Background()
	var edges int64
	i := 0
	start := time.Now()
	for ; b.Loop(); i++ {
		blocks, err := s.Sample(ctx, g, batches[i%len(batches)], uint64(i))
		if err != nil {
			b.Fatal(err)
		}
		for _, bl := range blocks {
			edges += bl.NumEdges()
		}
	}
	sec := time.Since(start).Seconds()
	b.ReportMetric(float64(edges)/sec, "edges/s")
	b.ReportMetric(float64(edges)/float64(i), "edges/batch")
}

func benchSamplers() []struct {
	name string
	s    Sampler
} {
	return []struct {
		name string
		s    Sampler
	}{
		{"uniform", &Uniform{Fanouts: []int{10, 25}}},
		{"uniform-replace", &Uniform{Fanouts: []int{10, 25}, Replace: true}},
		{"khop", &KHop{Fanouts: []int{10, 25}}},
		{"randomwalk", &RandomWalk{NumLayers: 2, Walks: 4, WalkLength: 3, TopK: 5, Weights: true}},
	}
}

// BenchmarkSampleRMAT18 samples a symmetrised R-MAT graph of 2^18 nodes
// (about 7.6 M stored edges).
func BenchmarkSampleRMAT18(b *testing.B) {
	g := rmatGraph(b, 18)
	all := make([]int32, g.NumRows)
	for i := range all {
		all[i] = int32(i)
	}
	batches := benchSeeds(all, 64)
	for _, bs := range benchSamplers() {
		b.Run(bs.name, func(b *testing.B) { runSamplerBench(b, g, batches, bs.s) })
	}
}

var peerOnce struct {
	sync.Once
	g     *graph.CSR
	train []int32
	err   error
}

// BenchmarkPeerRMAT runs on the peer's R-MAT dataset (STRATA_PEER_RMAT).
func BenchmarkPeerRMAT(b *testing.B) {
	dir := os.Getenv("STRATA_PEER_RMAT")
	if dir == "" {
		b.Skip("STRATA_PEER_RMAT not set")
	}
	peerOnce.Do(func() {
		d, err := graph.Open(dir)
		if err != nil {
			peerOnce.err = err
			return
		}
		peerOnce.g = graph.Symmetrize(d.Graph)
		peerOnce.train = d.Train
		if len(d.Train) < benchBatch {
			peerOnce.train = make([]int32, d.NumNodes)
			for i := range peerOnce.train {
				peerOnce.train[i] = int32(i)
			}
		}
	})
	if peerOnce.err != nil {
		b.Fatal(peerOnce.err)
	}
	batches := benchSeeds(peerOnce.train, 100)
	for _, bs := range benchSamplers() {
		b.Run(bs.name, func(b *testing.B) { runSamplerBench(b, peerOnce.g, batches, bs.s) })
	}
}
