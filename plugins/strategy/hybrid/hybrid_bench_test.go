package hybrid

import (
	"context"
	"runtime"
	"testing"

	"strata/core/backend/cpu"
	"strata/core/graph"
	"strata/core/tensor"
	"strata/core/train"
	"strata/plugins/sampler"
	"strata/plugins/strategy/internal/steprun"
)

// BenchmarkHyscaleCalibrate measures the CPU side of costmodel.hyscale's
// machine description on this machine, one thread each (the model scales
// them by the threads of each task). Its three figures are the [hybrid]
// keys (docs/hyscale.md, "Calibration"):
//
//	gemm    cpu_gflops  the cpu backend's GEMM on one thread, 4096×512 ·
//	                    512×128 float32 (a GNN layer's update)
//	gather  cpu_gbps    random 512-wide float32 rows copied out of a 128
//	                    MiB feature matrix, one goroutine (feature loading,
//	                    and the aggregation's reads)
//	sample  sample_meps uniform sampling, fanouts [10, 25], of batches of
//	                    1024 seeds on R-MAT 2^16, GOMAXPROCS = 1
//
// go test -run '^$' -bench HyscaleCalibrate -benchtime 3x ./plugins/strategy/
func BenchmarkHyscaleCalibrate(b *testing.B) {
	b.Run("gemm", func(b *testing.B) {
		be := cpu.New(cpu.Options{Threads: 1})
		const m, k, n = 4096, 512, 128
		alloc := func(r, c int) *tensor.Tensor {
			t, err := be.Alloc(tensor.Float32, []int{r, c}, tensor.Host)
			if err != nil {
				b.Fatal(err)
			}
			if err := be.Fill(t, 0.5); err != nil {
				b.Fatal(err)
			}
			return t
		}
		x, w, y := alloc(m, k), alloc(k, n), alloc(m, n)
		b.ResetTimer()
		for range b.N {
			if err := be.GEMM(false, false, 1, x, w, 0, y); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(2*m*k*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "cpu_gflops")
	})
	b.Run("gather", func(b *testing.B) {
		const rows, dim, batch = 1 << 16, 512, 1 << 14
		feats := make([]float32, rows*dim)
		for i := range feats {
			feats[i] = float32(i % 7)
		}
		ids := make([]int32, batch)
		s := uint64(1)
		for i := range ids {
			s = s*6364136223846793005 + 1442695040888963407
			ids[i] = int32(s>>33) % rows
		}
		b.ResetTimer()
		var x []float32
		for range b.N {
			x = steprun.GatherRows(feats, dim, ids)
		}
		_ = x
		b.ReportMetric(float64(batch*dim*4)*float64(b.N)/b.Elapsed().Seconds()/1e9, "cpu_gbps")
	})
	b.Run("sample", func(b *testing.B) {
		ds, err := graph.Open("rmat-16")
		if err != nil {
			b.Fatal(err)
		}
		adjs, err := train.BuildAdjacencies(ds, true)
		if err != nil {
			b.Fatal(err)
		}
		u := &sampler.Uniform{Fanouts: []int{10, 25}}
		seeds := make([]int32, 1024)
		for i := range seeds {
			seeds[i] = int32(i * 61 % ds.NumNodes)
		}
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		var edges int64
		b.ResetTimer()
		for i := range b.N {
			blocks, err := u.Sample(context.Background(), adjs.Adj, seeds, uint64(i))
			if err != nil {
				b.Fatal(err)
			}
			for _, bl := range blocks {
				edges += bl.NumEdges()
			}
		}
		b.ReportMetric(float64(edges)/b.Elapsed().Seconds()/1e6, "sample_meps")
	})
}
