package partitioners

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"

	"strata/core/graph"
	"strata/core/graph/synth"
)

// The benchmarks partition an R-MAT graph of scale 16 (65,536 nodes, 2^20
// edges, Graph500 parameters, seed 1); set STRATA_BENCH_SCALE to change
// the scale, e.g.
//
//	STRATA_BENCH_SCALE=18 go test -run '^$' -bench . -benchtime 3x ./partitioners/
//
// Partitioning large graphs takes long and prints nothing; set the
// MetisOptions.Progress callback to follow the stages.

var benchGraphs sync.Map // scale -> *graph.CSR

func benchRMAT(b *testing.B) *graph.CSR {
	b.Helper()
	scale := 16
	if s := os.Getenv("STRATA_BENCH_SCALE"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			b.Fatalf("STRATA_BENCH_SCALE=%q: %v", s, err)
		}
		scale = v
	}
	if g, ok := benchGraphs.Load(scale); ok {
		return g.(*graph.CSR)
	}
	d, err := synth.RMAT(synth.RMATOptions{Scale: scale, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	benchGraphs.Store(scale, d.Graph)
	return d.Graph
}

// batchBlock returns the bipartite block of a batch of outputs random
// nodes of g: row i lists the in-neighbours of the i-th output, the
// columns are g's node ids.
func batchBlock(g *graph.CSR, outputs int, seed uint64) *graph.CSR {
	rng := splitmix64(seed)
	blk := &graph.CSR{NumRows: outputs, NumCols: g.NumCols, Indptr: make([]int64, outputs+1)}
	for i := 0; i < outputs; i++ {
		v := int64(rng.below(uint64(g.NumRows)))
		for e := g.Indptr[v]; e < g.Indptr[v+1]; e++ {
			blk.Idx32 = append(blk.Idx32, int32(g.Col(e)))
		}
		blk.Indptr[i+1] = int64(len(blk.Idx32))
	}
	return blk
}

func BenchmarkMetisRMAT(b *testing.B) {
	g := benchRMAT(b)
	for _, k := range []int{4, 16, 64} {
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			m := &Metis{MetisOptions: defaultMetisOptions()}
			var parts []int32
			for b.Loop() {
				var err error
				if parts, err = m.Partition(context.Background(), g, k, nil); err != nil {
					b.Fatal(err)
				}
			}
			q := Quality(g, parts, k)
			b.ReportMetric(q.CutFraction, "cut/edge")
			b.ReportMetric(q.ReplicationFactor, "alpha")
		})
	}
}

func BenchmarkHongTuRMAT(b *testing.B) {
	g := benchRMAT(b)
	h := &HongTu2Level{M: 4, Balance: "edges", MetisOptions: defaultMetisOptions()}
	const k = 16
	var parts []int32
	for b.Loop() {
		var err error
		if parts, err = h.Partition(context.Background(), g, k, nil); err != nil {
			b.Fatal(err)
		}
	}
	q := Quality(g, parts, k)
	b.ReportMetric(q.EdgeBalance, "edge-balance")
	b.ReportMetric(q.ReplicationFactor, "alpha")
}

// BenchmarkRedundancyGraphRMAT builds Betty's REG of a 4096-output batch
// and of the whole graph (every node an output) with a hub limit: the
// unlimited full graph costs Σ d² ≈ 7.8·10^8 pair updates at scale 16.
func BenchmarkRedundancyGraphRMAT(b *testing.B) {
	g := benchRMAT(b)
	for _, tt := range []struct {
		name   string
		block  *graph.CSR
		maxHub int
	}{
		{"batch=4096", batchBlock(g, 4096, 1), 0},
		{"full/max_hub=256", g, 256},
	} {
		b.Run(tt.name, func(b *testing.B) {
			var st REGStats
			for b.Loop() {
				var err error
				if _, _, st, err = RedundancyGraph(context.Background(), tt.block, tt.maxHub); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(st.Edges), "reg-entries")
			b.ReportMetric(float64(st.Pairs), "pairs")
			b.ReportMetric(float64(st.SkippedHubs), "skipped-hubs")
		})
	}
}

func BenchmarkBettyRMAT(b *testing.B) {
	g := benchRMAT(b)
	blk := batchBlock(g, 4096, 1)
	bt := &BettyREG{MetisOptions: defaultMetisOptions()}
	const k = 8
	var parts []int32
	for b.Loop() {
		var err error
		if parts, _, err = bt.PartitionBlock(context.Background(), blk, k, nil); err != nil {
			b.Fatal(err)
		}
	}
	rnd, _ := (&Random{Seed: 1}).Partition(context.Background(), blk, k, nil)
	b.ReportMetric(Quality(blk, parts, k).Redundancy, "redundancy")
	b.ReportMetric(Quality(blk, rnd, k).Redundancy, "random-redundancy")
}

func BenchmarkQualityRMAT(b *testing.B) {
	g := benchRMAT(b)
	parts, _ := (&Random{Seed: 1}).Partition(context.Background(), g, 16, nil)
	for b.Loop() {
		Quality(g, parts, 16)
	}
}
