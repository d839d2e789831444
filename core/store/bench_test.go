package store_test

import (
	"cmp"
	"context"
	"slices"
	"testing"

	"strata/core/backend"
	"strata/core/backend/sim"
	"strata/core/graph"
	"strata/core/graph/synth"
	"strata/core/sampling"
	"strata/core/store"
	"strata/core/tensor"
	"strata/core/topology"
	"strata/plugins/sampler"
)

// BenchmarkSamplersThroughStore samples batches of 1000 seeds with
// uniform and KHop (fanouts 10, 25) through one store on the simulated
// DGX-1, half the topology on the GPUs (modulo 8, by degree) and half on
// the host, as GPU 0 reads it. Besides the CPU time it reports the bytes
// the reads moved over links per batch (32-byte sectors) and the time the
// simulator predicts for them (links in parallel).
func BenchmarkSamplersThroughStore(b *testing.B) {
	d, err := synth.RMAT(synth.RMATOptions{Scale: 16, EdgeFactor: 16, FeatDim: 1, NumClasses: 2, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	g := graph.Symmetrize(d.Graph)
	n := g.NumRows
	rank := degreeRank(g)
	topo, _ := topology.Preset("dgx1-v100-8", 0, 0)
	for _, sp := range []struct {
		name string
		s    sampling.Sampler
	}{
		{"uniform", &sampler.Uniform{Fanouts: []int{10, 25}}},
		{"khop", &sampler.KHop{Fanouts: []int{10, 25}}},
	} {
		b.Run(sp.name, func(b *testing.B) {
			be, _ := sim.New(topo, 1)
			devs := make([]tensor.Tier, 8)
			for i := range devs {
				devs[i] = sim.DeviceTier(i)
			}
			s, err := store.New(be, make([]float32, n), 1, rank, store.Options{Devices: devs, Capacity: []int64{1 << 30}, Topology: true, Graph: g, GraphRatio: 0.5})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			seeds := make([]int32, 1000)
			be.ResetTraffic()
			var moved int64
			b.ResetTimer()
			for i := range b.N {
				for j := range seeds {
					seeds[j] = int32((i*1000 + j) * 7919 % n)
				}
				v, _ := s.Topology(devs[0])
				gs, _ := sampling.AsGraphSampler(sp.s)
				if _, err := gs.SampleGraph(context.Background(), v, dedup(seeds), uint64(i)); err != nil {
					b.Fatal(err)
				}
				st := v.Take()
				for _, x := range st.Bytes {
					moved += x
				}
				if err := s.CountTopology(st); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(moved)/float64(b.N), "linkB/batch")
			b.ReportMetric(be.Predicted().TransferS[backend.PurposeTopology]/float64(b.N)*1e6, "predicted-µs/batch")
		})
	}
}

// dedup drops repeated seeds, keeping the first.
func dedup(ids []int32) []int32 {
	seen := map[int32]bool{}
	out := ids[:0:0]
	for _, v := range ids {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// degreeRank ranks the nodes by descending degree, ties by id.
func degreeRank(g *graph.CSR) []int32 {
	n := g.NumRows
	rank := make([]int32, n)
	for i := range rank {
		rank[i] = int32(i)
	}
	deg := func(v int32) int64 { return g.Indptr[v+1] - g.Indptr[v] }
	slices.SortStableFunc(rank, func(a, b int32) int { return cmp.Compare(deg(b), deg(a)) })
	return rank
}
