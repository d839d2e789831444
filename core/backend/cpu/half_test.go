package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"strata/core/backend"
	"strata/core/tensor"
)

// halfTensor stores v (len rows·cols) narrowed to dt and returns it with
// the float32 values it holds (the exact widening, by core/tensor).
func halfTensor(t *testing.T, be *Backend, dt tensor.DType, shape []int, v []float64) (*tensor.Tensor, []float32) {
	t.Helper()
	bits := make([]uint16, len(v))
	f := make([]float32, len(v))
	for i, x := range v {
		f[i] = float32(x)
	}
	tensor.EncodeHalf(dt, bits, f)
	tensor.DecodeHalf(dt, f, bits)
	x, err := be.Alloc(dt, shape, tensor.Host)
	if err != nil {
		t.Fatal(err)
	}
	if err := be.Upload(x, bits); err != nil {
		t.Fatal(err)
	}
	return x, f
}

// TestWidenMatchesReference widens every 16-bit pattern with the C loader
// (F16C for binary16) and compares with core/tensor's exact widening: the
// same bits, NaN for NaN; a row length that is not a multiple of 8 runs
// the scalar tail too.
func TestWidenMatchesReference(t *testing.T) {
	be := New(Options{Threads: 2})
	for _, dt := range []tensor.DType{tensor.Float16, tensor.BFloat16} {
		all := make([]uint16, 1<<16)
		for i := range all {
			all[i] = uint16(i)
		}
		x, err := be.Alloc(dt, []int{4096, 16}, tensor.Host)
		if err != nil {
			t.Fatal(err)
		}
		if err := be.Upload(x, all); err != nil {
			t.Fatal(err)
		}
		for _, shape := range [][]int{{4096, 16}, {1 << 16 / 13, 13}} {
			xs, _ := tensor.View(x, shape)
			if xs == nil {
				xs = tensor.New(dt, []int{len(all) / 13, 13}, x.Buffer())
			}
			y, _ := be.Alloc(tensor.Float32, xs.Shape(), tensor.Host)
			if err := be.Widen(xs, y); err != nil {
				t.Fatal(err)
			}
			want := make([]float32, xs.Numel())
			tensor.DecodeHalf(dt, want, all[:xs.Numel()])
			for i, g := range F32(y) {
				w := want[i]
				if w != w && g != g {
					continue
				}
				if math.Float32bits(g) != math.Float32bits(w) {
					t.Fatalf("%v %v: widen(%#04x) = %g (%#08x), want %g (%#08x)", dt, shape, all[i], g, math.Float32bits(g), w, math.Float32bits(w))
				}
			}
		}
	}
	if err := be.Widen(newTC(t, 1, tensor.Float32, 1).zeros(2, 2), newTC(t, 1, tensor.Float32, 1).zeros(2, 2)); err == nil {
		t.Error("Widen accepted a float32 x")
	}
}

// TestDropoutGEMMHalfMatchesWidened checks the converting loader: a
// DropoutGEMM over 16-bit x equals Widen followed by the float32
// DropoutGEMM bit for bit, with and without dropout (p = 0 is the plain
// product), forward and transposed, with and without keep bits, split
// inner dimension included.
func TestDropoutGEMMHalfMatchesWidened(t *testing.T) {
	cases := []struct{ m, n, k int }{{5, 3, 7}, {1300, 9, 33}, {300, 300, 12}, {20, 5, 8200}, {0, 4, 6}, {4, 6, 0}}
	for _, dt := range []tensor.DType{tensor.Float16, tensor.BFloat16} {
		for _, cs := range cases {
			for _, transX := range []bool{false, true} {
				for _, p := range []float64{0, 0.5} {
					t.Run(fmt.Sprintf("%v/%dx%dx%d/trans=%v/p=%v", dt, cs.m, cs.n, cs.k, transX, p), func(t *testing.T) {
						c := newTC(t, 3, tensor.Float32, 5)
						rng := rand.New(rand.NewPCG(3, 4))
						xs := []int{cs.m, cs.k}
						if transX {
							xs = []int{cs.k, cs.m}
						}
						v := make([]float64, xs[0]*xs[1])
						for i := range v {
							v[i] = 4*rng.Float64() - 2
						}
						xh, xf := halfTensor(t, c.be, dt, xs, v)
						xw := c.zeros(xs...)
						c.ok(c.be.Widen(xh, xw))
						for i, f := range F32(xw) {
							if f != xf[i] {
								t.Fatalf("Widen: x[%d] = %g, want %g", i, f, xf[i])
							}
						}
						b, _ := c.rand(cs.k, cs.n)
						_, cv := c.rand(cs.m, cs.n)
						scratch := c.zeros(max(backend.DropoutGEMMScratch(cs.m, cs.n, cs.k), 1))
						for _, withKeep := range []bool{false, true} {
							var k1, k2 *tensor.Tensor
							if withKeep && p > 0 {
								ks := backend.DropoutKeepWords(xs[0], xs[1])
								var err error
								k1, err = c.be.Alloc(tensor.Int32, ks, tensor.Host)
								c.ok(err)
								k2, err = c.be.Alloc(tensor.Int32, ks, tensor.Host)
								c.ok(err)
								if transX { // record the bits with a forward call
									ones := c.put([]int{cs.m, 1}, make([]float64, cs.m))
									sc := c.zeros(max(backend.DropoutGEMMScratch(cs.k, 1, cs.m), 1))
									c.ok(c.be.DropoutGEMM(7, nil, p, false, xw, ones, 0, c.zeros(cs.k, 1), sc, k1))
									c.ok(c.be.DropoutGEMM(7, nil, p, false, xh, ones, 0, c.zeros(cs.k, 1), sc, k2))
								}
							}
							want, got := c.put([]int{cs.m, cs.n}, cv), c.put([]int{cs.m, cs.n}, cv)
							c.ok(c.be.DropoutGEMM(7, nil, p, transX, xw, b, 0.5, want, scratch, k1))
							c.ok(c.be.DropoutGEMM(7, nil, p, transX, xh, b, 0.5, got, scratch, k2))
							for i, w := range F32(want) {
								if g := F32(got)[i]; math.Float32bits(g) != math.Float32bits(w) {
									t.Fatalf("keep=%v: c[%d] = %g, widened %g", withKeep, i, g, w)
								}
							}
							if p == 0 { // the plain product: GEMM on the widened x
								ref := c.put([]int{cs.m, cs.n}, cv)
								c.ok(c.be.GEMM(transX, false, 1, xw, b, 0.5, ref))
								for i, w := range F32(ref) {
									if g := F32(got)[i]; math.Float32bits(g) != math.Float32bits(w) {
										t.Fatalf("p=0: c[%d] = %g, GEMM %g", i, g, w)
									}
								}
							}
						}
					})
				}
			}
		}
	}
}
