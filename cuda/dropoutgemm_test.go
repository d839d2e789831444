//go:build cuda

package cuda

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"strata/core/backend"
	"strata/core/tensor"
)

// DropoutGEMM masks x a block of scratch rows at a time, each block from
// its first row's key on (or its stream offset without keys). On shapes
// whose scratch holds fewer rows than x it equals DropoutApply followed by
// GEMM on the same backend exactly: x, b, c, beta and the scale (p = 0.5)
// are small integers or halves, so every sum is exact in any order.
func TestDropoutGEMMKeyedBlocks(t *testing.T) {
	be := open(t, Options{})
	rng := rand.New(rand.NewPCG(3, 4))
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for _, sh := range [][3]int{{2600, 3, 5}, {3, 2, 10240}} {
			for _, transX := range []bool{false, true} {
				for _, kind := range []string{"none", "identity", "wide"} {
					name := fmt.Sprintf("%s/m=%d,n=%d,k=%d/trans=%v/keys=%s", dt.Short(), sh[0], sh[1], sh[2], transX, kind)
					t.Run(name, func(t *testing.T) {
						dropoutGEMMBlocks(t, be, rng, dt, sh, transX, kind)
					})
				}
			}
		}
	}
}

// dropoutGEMMBlocks runs one case of TestDropoutGEMMKeyedBlocks.
func dropoutGEMMBlocks(t *testing.T, be *Backend, rng *rand.Rand, dt tensor.DType, sh [3]int, transX bool, kind string) {
	const seed, p, beta = 99, 0.5, 0.5
	m, n, k := sh[0], sh[1], sh[2]
	xr, xc := m, k
	if transX {
		xr, xc = k, m
	}
	need := backend.DropoutGEMMScratch(m, n, k)
	if block := need / xc; block >= xr {
		t.Fatalf("scratch of %d elements holds all %d rows of x: one block", need, xr)
	}
	x := intTensor(t, be, rng, dt, 2, xr, xc)
	bm := intTensor(t, be, rng, dt, 3, k, n)
	c0 := intTensor(t, be, rng, dt, 4, m, n)
	var rows *tensor.Tensor
	if kind != "none" {
		keys := make([]int64, xr)
		for i := range keys {
			keys[i] = int64(i)
			if kind == "wide" {
				keys[i] = int64(rng.Uint64())
			}
		}
		rows = mustAlloc(t, be, tensor.Int64, DeviceTier, xr)
		must(t, be.Upload(rows, keys))
	}
	want, got := mustAlloc(t, be, dt, DeviceTier, m, n), mustAlloc(t, be, dt, DeviceTier, m, n)
	must(t, be.Copy(want, c0))
	must(t, be.Copy(got, c0))
	masked := mustAlloc(t, be, dt, DeviceTier, xr, xc)
	must(t, be.DropoutApply(seed, rows, p, x, nil, masked))
	must(t, be.GEMM(transX, false, 1, masked, bm, beta, want))
	scratch := mustAlloc(t, be, dt, DeviceTier, need)
	must(t, be.DropoutGEMM(seed, rows, p, transX, x, bm, beta, got, scratch, nil))
	w, g := download64(t, be, want), download64(t, be, got)
	for i := range w {
		if g[i] != w[i] {
			t.Fatalf("c[%d, %d] = %v, want %v (DropoutApply, then GEMM)", i/n, i%n, g[i], w[i])
		}
	}
}

// intTensor uploads a rows×cols tensor of random integers in [-h, h].
func intTensor(t *testing.T, be *Backend, rng *rand.Rand, dt tensor.DType, h int, rows, cols int) *tensor.Tensor {
	t.Helper()
	v := make([]float64, rows*cols)
	for i := range v {
		v[i] = float64(rng.IntN(2*h+1) - h)
	}
	x := mustAlloc(t, be, dt, DeviceTier, rows, cols)
	if dt == tensor.Float32 {
		f := make([]float32, len(v))
		for i, e := range v {
			f[i] = float32(e)
		}
		must(t, be.Upload(x, f))
	} else {
		must(t, be.Upload(x, v))
	}
	return x
}

// download64 returns a float tensor's elements as float64.
func download64(t *testing.T, be *Backend, x *tensor.Tensor) []float64 {
	t.Helper()
	v := make([]float64, x.Numel())
	if x.DType() == tensor.Float32 {
		f := make([]float32, len(v))
		must(t, be.Download(x, f))
		for i, e := range f {
			v[i] = float64(e)
		}
	} else {
		must(t, be.Download(x, v))
	}
	return v
}
