//go:build cuda

package cuda

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"strata/core/graph/synth"
	"strata/core/tensor"
)

// benchScale is log2 of the benchmark graph's node count: 20 by default,
// STRATA_BENCH_SCALE otherwise (small under the CPU mock).
func benchScale(b *testing.B) int {
	if s := os.Getenv("STRATA_BENCH_SCALE"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 4 || n > 26 {
			b.Fatalf("STRATA_BENCH_SCALE = %q: want an integer in [4,26]", s)
		}
		return n
	}
	return 20
}

// BenchmarkSpMM times the aggregation of F = 128 float32 features over an
// R-MAT graph (average degree 16), forward and transposed, and reports the
// bytes it must move (column ids, the source rows it gathers, the output)
// per second: a lower bound on achieved bandwidth, as cached source rows
// are counted every time they are used.
func BenchmarkSpMM(b *testing.B) {
	scale := benchScale(b)
	ds, err := synth.RMAT(synth.RMATOptions{Scale: scale, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	be := open(b, Options{})
	a, err := be.UploadGraph(ds.Graph, DeviceTier)
	must(b, err)
	defer be.ReleaseGraph(a)
	n, nnz := ds.Graph.NumRows, ds.Graph.NNZ()
	for _, f := range []int{32, 128} {
		for _, trans := range []bool{false, true} {
			b.Run(fmt.Sprintf("rmat%d/F=%d/trans=%v", scale, f, trans), func(b *testing.B) {
				x := mustAlloc(b, be, tensor.Float32, DeviceTier, n, f)
				y := mustAlloc(b, be, tensor.Float32, DeviceTier, n, f)
				defer be.Release(x)
				defer be.Release(y)
				must(b, be.SpMM(b.Context(), a, trans, nil, x, 0, y)) // JIT and warm-up
				must(b, be.Synchronize())
				b.ResetTimer()
				for range b.N {
					must(b, be.SpMM(b.Context(), a, trans, nil, x, 0, y))
				}
				must(b, be.Synchronize())
				b.StopTimer()
				bytes := float64(nnz)*(4+4*float64(f)) + float64(n)*(8+4*float64(f))
				if trans {
					bytes += float64(nnz) * 8 // the edge permutation
				}
				b.ReportMetric(bytes*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
	}
}

// BenchmarkCopyDtoD measures device-to-device copy bandwidth (bytes read
// plus bytes written per second), the ceiling SpMM is compared with.
func BenchmarkCopyDtoD(b *testing.B) {
	be := open(b, Options{})
	for _, mib := range []int{64, 512} {
		b.Run(fmt.Sprintf("%dMiB", mib), func(b *testing.B) {
			n := mib << 18 // float32 elements
			src := mustAlloc(b, be, tensor.Float32, DeviceTier, n)
			dst := mustAlloc(b, be, tensor.Float32, DeviceTier, n)
			defer be.Release(src)
			defer be.Release(dst)
			must(b, be.Copy(dst, src))
			must(b, be.Synchronize())
			b.ResetTimer()
			for range b.N {
				must(b, be.Copy(dst, src))
			}
			must(b, be.Synchronize())
			b.StopTimer()
			b.ReportMetric(2*float64(mib<<20)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// BenchmarkGEMM reports cuBLAS float32 throughput on the shapes of a
// hidden-128 layer over 2^scale nodes.
func BenchmarkGEMM(b *testing.B) {
	be := open(b, Options{})
	n := 1 << benchScale(b)
	x := mustAlloc(b, be, tensor.Float32, DeviceTier, n, 128)
	w := mustAlloc(b, be, tensor.Float32, DeviceTier, 128, 128)
	y := mustAlloc(b, be, tensor.Float32, DeviceTier, n, 128)
	must(b, be.GEMM(false, false, 1, x, w, 0, y))
	must(b, be.Synchronize())
	b.ResetTimer()
	for range b.N {
		must(b, be.GEMM(false, false, 1, x, w, 0, y))
	}
	must(b, be.Synchronize())
	b.StopTimer()
	b.ReportMetric(2*float64(n)*128*128*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
}
