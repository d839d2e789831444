package cpu

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"testing"

	"strata/core/backend"
	"strata/core/graph"
	"strata/core/tensor"
)

// Benchmarks use synthetic R-MAT graphs (a,b,c,d = .57,.19,.19,.05, average
// degree 16). Vertex ids are randomly permuted, as in Graph500, unless the
// "degree" order is asked for: ids relabelled by decreasing in-degree.
// Columns are sorted within each row in both orders.

var (
	rmatMu    sync.Mutex
	rmatCache = map[string]*graph.CSR{}
)

func rmat(scale int, order string) *graph.CSR {
	rmatMu.Lock()
	defer rmatMu.Unlock()
	key := fmt.Sprint(scale, order)
	if g := rmatCache[key]; g != nil {
		return g
	}
	n := 1 << scale
	m := 16 * n
	rng := rand.New(rand.NewPCG(uint64(scale), 7))
	const a, ab, abc = 0.57 * (1 << 63) * 2, 0.76 * (1 << 63) * 2, 0.95 * (1 << 63) * 2
	src, dst := make([]int32, m), make([]int32, m)
	for e := range m {
		var s, d int32
		for l := range scale {
			r := float64(rng.Uint64())
			switch {
			case r < a:
			case r < ab:
				d |= 1 << l
			case r < abc:
				s |= 1 << l
			default:
				s |= 1 << l
				d |= 1 << l
			}
		}
		src[e], dst[e] = s, d
	}
	perm := rng.Perm(n)
	for e := range m {
		src[e], dst[e] = int32(perm[src[e]]), int32(perm[dst[e]])
	}
	if order == "degree" {
		deg := make([]int, n)
		for _, d := range dst {
			deg[d]++
		}
		byDeg := make([]int, n)
		for i := range byDeg {
			byDeg[i] = i
		}
		sort.SliceStable(byDeg, func(i, j int) bool { return deg[byDeg[i]] > deg[byDeg[j]] })
		label := make([]int32, n)
		for newID, old := range byDeg {
			label[old] = int32(newID)
		}
		for e := range m {
			src[e], dst[e] = label[src[e]], label[dst[e]]
		}
	}
	g := &graph.CSR{NumRows: n, NumCols: n, Indptr: make([]int64, n+1), Idx32: make([]int32, m)}
	for _, d := range dst {
		g.Indptr[d+1]++
	}
	for i := range n {
		g.Indptr[i+1] += g.Indptr[i]
	}
	next := append([]int64(nil), g.Indptr[:n]...)
	for e := range m {
		g.Idx32[next[dst[e]]] = src[e]
		next[dst[e]]++
	}
	for i := range n {
		slices.Sort(g.Idx32[g.Indptr[i]:g.Indptr[i+1]])
	}
	rmatCache[key] = g
	return g
}

type benchEnv struct {
	be *Backend
	g  *graph.CSR
	a  backend.Adj
}

func newBench(b *testing.B, scale int, order string) *benchEnv {
	b.Helper()
	be := New(Options{})
	g := rmat(scale, order)
	a, err := be.UploadGraph(g, tensor.Host)
	if err != nil {
		b.Fatal(err)
	}
	return &benchEnv{be: be, g: g, a: a}
}

func (e *benchEnv) alloc(b *testing.B, dt tensor.DType, shape ...int) *tensor.Tensor {
	t, err := e.be.Alloc(dt, shape, tensor.Host)
	if err != nil {
		b.Fatal(err)
	}
	if dt == tensor.Float32 {
		r := rand.New(rand.NewPCG(1, 2))
		for i := range F32(t) {
			F32(t)[i] = r.Float32()
		}
	}
	return t
}

func report(b *testing.B, flops, bytes float64) {
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(flops/sec/1e9, "GFLOPS")
	b.ReportMetric(bytes/sec/1e9, "GB/s")
}

// spmmBytes is the traffic of one float32 SpMM with [E] weights, counting
// every gathered row of x as a fresh read.
func spmmBytes(rows, nnz, f int) float64 {
	return float64(nnz*(4+4) + nnz*f*4 + rows*f*4 + rows*8)
}

func BenchmarkSpMM(b *testing.B) {
	for _, scale := range []int{18, 20} {
		for _, f := range []int{16, 64, 128} {
			b.Run(fmt.Sprintf("n=2^%d/F=%d", scale, f), func(b *testing.B) {
				e := newBench(b, scale, "random")
				n, nnz := e.g.NumRows, int(e.g.NNZ())
				w, x, y := e.alloc(b, tensor.Float32, nnz), e.alloc(b, tensor.Float32, n, f), e.alloc(b, tensor.Float32, n, f)
				b.ResetTimer()
				for range b.N {
					if err := e.be.SpMM(ctx, e.a, false, w, x, 0, y); err != nil {
						b.Fatal(err)
					}
				}
				report(b, 2*float64(nnz)*float64(f), spmmBytes(n, nnz, f))
			})
		}
	}
}

// BenchmarkSpMMOrder compares random vertex ids with degree-sorted ids.
func BenchmarkSpMMOrder(b *testing.B) {
	for _, order := range []string{"random", "degree"} {
		b.Run(order, func(b *testing.B) {
			e := newBench(b, 20, order)
			n, nnz, f := e.g.NumRows, int(e.g.NNZ()), 128
			w, x, y := e.alloc(b, tensor.Float32, nnz), e.alloc(b, tensor.Float32, n, f), e.alloc(b, tensor.Float32, n, f)
			b.ResetTimer()
			for range b.N {
				if err := e.be.SpMM(ctx, e.a, false, w, x, 0, y); err != nil {
					b.Fatal(err)
				}
			}
			report(b, 2*float64(nnz)*float64(f), spmmBytes(n, nnz, f))
		})
	}
}

// BenchmarkSpMMTrans runs Aᵀ·x through the transposed CSR and permutation.
func BenchmarkSpMMTrans(b *testing.B) {
	e := newBench(b, 20, "random")
	n, nnz, f := e.g.NumRows, int(e.g.NNZ()), 64
	w, x, y := e.alloc(b, tensor.Float32, nnz), e.alloc(b, tensor.Float32, n, f), e.alloc(b, tensor.Float32, n, f)
	b.ResetTimer()
	for range b.N {
		if err := e.be.SpMM(ctx, e.a, true, w, x, 0, y); err != nil {
			b.Fatal(err)
		}
	}
	report(b, 2*float64(nnz)*float64(f), spmmBytes(n, nnz, f)+8*float64(nnz))
}

// BenchmarkSpMMTransOnce is one Aᵀ·x on a freshly uploaded graph, as
// chunked training runs it (a chunk's graph serves one backward product
// a pass): through the transpose, which the product builds first
// ("transpose"), and by scattering A's entries (Graph.ScatterTranspose,
// "scatter"); the same bits. R-MAT 2^16 with 16 columns (GCN's layer 1
// backward at 2^20 has chunks of this size).
//
// go test -run '^$' -bench SpMMTransOnce -benchtime 20x ./core/backend/cpu/
func BenchmarkSpMMTransOnce(b *testing.B) {
	for _, mode := range []string{"transpose", "scatter"} {
		b.Run(mode, func(b *testing.B) {
			e := newBench(b, 16, "random")
			n, nnz, f := e.g.NumRows, int(e.g.NNZ()), 16
			w, x, y := e.alloc(b, tensor.Float32, nnz), e.alloc(b, tensor.Float32, n, f), e.alloc(b, tensor.Float32, n, f)
			b.ResetTimer()
			for range b.N {
				a, err := e.be.UploadGraph(e.g, tensor.Host)
				if err != nil {
					b.Fatal(err)
				}
				if mode == "scatter" {
					a.(*Graph).ScatterTranspose()
				}
				if err := e.be.SpMM(ctx, a, true, w, x, 0, y); err != nil {
					b.Fatal(err)
				}
				e.be.ReleaseGraph(a)
			}
		})
	}
}

// BenchmarkSpMMGo is the same SpMM (same chunks and goroutines) with the
// inner loops in plain Go instead of the C AVX2 kernel.
func BenchmarkSpMMGo(b *testing.B) {
	for _, f := range []int{16, 128} {
		b.Run(fmt.Sprintf("n=2^20/F=%d", f), func(b *testing.B) {
			e := newBench(b, 20, "random")
			n, nnz := e.g.NumRows, int(e.g.NNZ())
			w, x, y := e.alloc(b, tensor.Float32, nnz), e.alloc(b, tensor.Float32, n, f), e.alloc(b, tensor.Float32, n, f)
			c := &e.a.(*Graph).fwd
			ws, xs, ys := F32(w), F32(x), F32(y)
			b.ResetTimer()
			for range b.N {
				e.be.parallel(ctx, c.chunks(f), func(lo, hi int64) { goSpMM(c, ws, xs, ys, f, lo, hi) })
			}
			report(b, 2*float64(nnz)*float64(f), spmmBytes(n, nnz, f))
		})
	}
}

func goSpMM(c *csr, w, x, y []float32, f int, lo, hi int64) {
	for i := lo; i < hi; i++ {
		yr := y[int(i)*f : int(i+1)*f]
		clear(yr)
		for k := c.indptr[i]; k < c.indptr[i+1]; k++ {
			wk, xr := w[k], x[int(c.idx32[k])*f:][:f]
			for j := range yr {
				yr[j] += wk * xr[j]
			}
		}
	}
}

func BenchmarkSpMMMax(b *testing.B) {
	e := newBench(b, 18, "random")
	n, f := e.g.NumRows, 64
	x, y := e.alloc(b, tensor.Float32, n, f), e.alloc(b, tensor.Float32, n, f)
	am := e.alloc(b, tensor.Int32, n, f)
	b.ResetTimer()
	for range b.N {
		if err := e.be.SpMMMax(ctx, e.a, x, y, am); err != nil {
			b.Fatal(err)
		}
	}
	nnz := float64(e.g.NNZ())
	report(b, nnz*float64(f), nnz*4+nnz*float64(f)*4+float64(n*f*8))
}

func BenchmarkGEMM(b *testing.B) {
	for _, n := range []int{1 << 16, 1 << 20} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			e := &benchEnv{be: New(Options{})}
			x, w, y := e.alloc(b, tensor.Float32, n, 128), e.alloc(b, tensor.Float32, 128, 128), e.alloc(b, tensor.Float32, n, 128)
			b.ResetTimer()
			for range b.N {
				if err := e.be.GEMM(false, false, 1, x, w, 0, y); err != nil {
					b.Fatal(err)
				}
			}
			report(b, 2*float64(n)*128*128, float64(n)*128*8)
		})
	}
	// The weight gradient shape: 128×N · N×128, split over K.
	b.Run("grad/N=1048576", func(b *testing.B) {
		n := 1 << 20
		e := &benchEnv{be: New(Options{})}
		x, dy, dw := e.alloc(b, tensor.Float32, n, 128), e.alloc(b, tensor.Float32, n, 128), e.alloc(b, tensor.Float32, 128, 128)
		b.ResetTimer()
		for range b.N {
			if err := e.be.GEMM(true, false, 1, x, dy, 0, dw); err != nil {
				b.Fatal(err)
			}
		}
		report(b, 2*float64(n)*128*128, float64(n)*128*8)
	})
}

func BenchmarkSDDMM(b *testing.B) {
	for _, h := range []int{1, 4} {
		b.Run(fmt.Sprintf("n=2^18/F=64/H=%d", h), func(b *testing.B) {
			e := newBench(b, 18, "random")
			n, nnz, f := e.g.NumRows, int(e.g.NNZ()), 64
			x, y, out := e.alloc(b, tensor.Float32, n, f), e.alloc(b, tensor.Float32, n, f), e.alloc(b, tensor.Float32, nnz, h)
			b.ResetTimer()
			for range b.N {
				if err := e.be.SDDMM(ctx, e.a, x, y, out); err != nil {
					b.Fatal(err)
				}
			}
			report(b, 2*float64(nnz)*float64(f), float64(nnz*(4+4*h)+nnz*f*4+n*f*4))
		})
	}
}

func BenchmarkEdgeSoftmax(b *testing.B) {
	for _, h := range []int{1, 4} {
		b.Run(fmt.Sprintf("n=2^20/H=%d", h), func(b *testing.B) {
			e := newBench(b, 20, "random")
			nnz := int(e.g.NNZ())
			s, out := e.alloc(b, tensor.Float32, nnz, h), e.alloc(b, tensor.Float32, nnz, h)
			b.ResetTimer()
			for range b.N {
				if err := e.be.EdgeSoftmax(ctx, e.a, s, out); err != nil {
					b.Fatal(err)
				}
			}
			report(b, 0, float64(nnz*h*4*2))
			b.ReportMetric(float64(nnz*h)/(b.Elapsed().Seconds()/float64(b.N))/1e6, "Medges/s")
		})
	}
}

// BenchmarkSegmentProd times the segment product (segment_prod) and its
// backward over the in-edges of an R-MAT-sized random graph, 16 columns.
func BenchmarkSegmentProd(b *testing.B) {
	const f = 16
	e := newBench(b, 20, "random")
	nnz, rows := int(e.g.NNZ()), e.g.NumRows
	vals, dvals := e.alloc(b, tensor.Float32, nnz, f), e.alloc(b, tensor.Float32, nnz, f)
	out, dout := e.alloc(b, tensor.Float32, rows, f), e.alloc(b, tensor.Float32, rows, f)
	for i := range F32(vals) {
		F32(vals)[i] = 1 + float32(i%7)/8
	}
	for _, pass := range []string{"forward", "backward"} {
		b.Run("n=2^20/"+pass, func(b *testing.B) {
			for range b.N {
				var err error
				if pass == "forward" {
					err = e.be.SegmentProd(ctx, e.a, vals, out)
				} else {
					err = e.be.SegmentProdBackward(ctx, e.a, vals, dout, dvals)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(nnz)/(b.Elapsed().Seconds()/float64(b.N))/1e6, "Medges/s")
		})
	}
}

func BenchmarkGatherScatter(b *testing.B) {
	n, m, f := 1<<20, 1<<18, 128
	e := &benchEnv{be: New(Options{})}
	x, big := e.alloc(b, tensor.Float32, m, f), e.alloc(b, tensor.Float32, n, f)
	idx := e.alloc(b, tensor.Int32, n)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range I32(idx) {
		I32(idx)[i] = int32(r.IntN(m))
	}
	b.Run("Gather", func(b *testing.B) {
		for range b.N {
			if err := e.be.Gather(x, idx, big); err != nil {
				b.Fatal(err)
			}
		}
		report(b, 0, float64(n*f*4*2+n*4))
	})
	b.Run("ScatterAdd", func(b *testing.B) {
		for range b.N {
			if err := e.be.ScatterAdd(big, idx, x); err != nil {
				b.Fatal(err)
			}
		}
		report(b, float64(n*f), float64(n*f*4*3+n*4))
	})
}

func BenchmarkElementwise(b *testing.B) {
	n, c := 1<<18, 64
	e := &benchEnv{be: New(Options{})}
	x, y, z := e.alloc(b, tensor.Float32, n, c), e.alloc(b, tensor.Float32, n, c), e.alloc(b, tensor.Float32, n, c)
	bias := e.alloc(b, tensor.Float32, c)
	elems := float64(n * c)
	b.Run("ReLU", func(b *testing.B) {
		for range b.N {
			e.be.Apply(backend.ReLU, 0, x, y)
		}
		report(b, elems, elems*8)
	})
	b.Run("BiasAdd", func(b *testing.B) {
		for range b.N {
			e.be.Elementwise(backend.Add, x, bias, y)
		}
		report(b, elems, elems*8)
	})
	b.Run("Mul", func(b *testing.B) {
		for range b.N {
			e.be.Elementwise(backend.Mul, x, y, z)
		}
		report(b, elems, elems*12)
	})
	b.Run("Axpby", func(b *testing.B) {
		for range b.N {
			e.be.Axpby(0.5, x, 0.9, y)
		}
		report(b, 3*elems, elems*12)
	})
	b.Run("SumRows", func(b *testing.B) {
		for range b.N {
			e.be.SumRows(x, bias)
		}
		report(b, elems, elems*4)
	})
	b.Run("Dropout", func(b *testing.B) {
		for range b.N {
			e.be.DropoutMask(1, nil, 0.5, z)
		}
		report(b, 0, elems*4)
	})
	// The same mask with every row keyed by a global id (a chunk's or a
	// block's rows): one span per row instead of one over the tensor.
	keys := e.alloc(b, tensor.Int64, n)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range I64(keys) {
		I64(keys)[i] = int64(r.IntN(1 << 24))
	}
	b.Run("DropoutKeyed", func(b *testing.B) {
		for range b.N {
			e.be.DropoutMask(1, keys, 0.5, z)
		}
		report(b, 0, elems*4+float64(n*8))
	})
	b.Run("DropoutApplyKeyed", func(b *testing.B) {
		for range b.N {
			e.be.DropoutApply(1, keys, 0.5, x, nil, y)
		}
		report(b, 0, elems*8+float64(n*8))
	})
	b.Run("DropoutApply", func(b *testing.B) {
		for range b.N {
			e.be.DropoutApply(1, nil, 0.5, x, nil, y)
		}
		report(b, 0, elems*8)
	})
}

// BenchmarkDropoutRowWidth draws a mask over 2^23 elements flat and with
// every row keyed, for row widths of an attention dropout (1, 4 and 8
// heads: whole rows per vector, dropout_pow2_rows), an odd one (a span
// per row) and a hidden layer's.
func BenchmarkDropoutRowWidth(b *testing.B) {
	for _, cols := range []int{1, 4, 8, 7, 64} {
		n := (1 << 23) / cols
		e := &benchEnv{be: New(Options{})}
		x, y := e.alloc(b, tensor.Float32, n, cols), e.alloc(b, tensor.Float32, n, cols)
		keys := e.alloc(b, tensor.Int64, n)
		for i := range I64(keys) {
			I64(keys)[i] = int64(i*7 + 3)
		}
		for _, keyed := range []bool{false, true} {
			var rows *tensor.Tensor
			if keyed {
				rows = keys
			}
			b.Run(fmt.Sprintf("cols=%d/keyed=%v", cols, keyed), func(b *testing.B) {
				for range b.N {
					if err := e.be.DropoutApply(1, rows, 0.5, x, nil, y); err != nil {
						b.Fatal(err)
					}
				}
				report(b, 0, float64(n*cols*8))
			})
		}
	}
}
