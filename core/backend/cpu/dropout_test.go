package cpu

import (
	"math"
	"testing"

	"strata/core/backend"
	"strata/core/tensor"
)

// TestDropoutExact checks the float32 dropout kernels (AVX2 and, where
// the CPU has it, AVX-512) bit for bit against the scalar definition
// (Uniform), over chunk boundaries that are not multiples of the vector
// widths, and DropoutApply against DropoutMask followed by Mul, with and
// without a stored mask.
func TestDropoutExact(t *testing.T) {
	if !hasAVX512() {
		t.Log("no AVX-512 here: both runs take the AVX2 kernels")
	}
	for _, run := range []struct {
		grains, avx2Only bool
	}{{false, false}, {false, true}, {true, false}, {true, true}} {
		if run.grains {
			tinyGrains(t)
		}
		for _, dt := range dtypes {
			for _, p := range []float64{0, 0.1, 0.5, 0.6, 1 - 1e-9, 1} {
				for _, n := range []int{1, 7, 8, 13, 16, 17, 33, 333, 4099} {
					c := newTC(t, 3, dt, 5)
					c.be = New(Options{Threads: 3, AVX2Only: run.avx2Only})
					mask := c.zeros(n, 1)
					c.ok(c.be.DropoutMask(1234, nil, p, mask))
					scale := round(dt, 1/(1-p))
					for i, v := range get(mask) {
						want := 0.0
						if Uniform(1234, uint64(i)) >= p {
							want = scale
						}
						if v != want && !(math.IsInf(want, 1) && math.IsInf(v, 1)) {
							t.Fatalf("%v p=%v n=%d: mask[%d] = %v, want %v", dt, p, n, i, v, want)
						}
					}
					x, _ := c.rand(n, 1)
					y0 := c.zeros(n, 1)
					c.ok(c.be.Elementwise(backend.Mul, x, mask, y0))
					for _, withMask := range []bool{true, false} {
						var m2 *tensor.Tensor
						if withMask {
							m2 = c.zeros(n, 1)
						}
						y := c.zeros(n, 1)
						c.ok(c.be.DropoutApply(1234, nil, p, x, m2, y))
						a, b := get(y0), get(y)
						for i := range a {
							if math.Float64bits(a[i]) != math.Float64bits(b[i]) && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
								t.Fatalf("%v p=%v n=%d: DropoutApply y[%d] = %v, want %v", dt, p, n, i, b[i], a[i])
							}
						}
						if withMask {
							a, b := get(mask), get(m2)
							for i := range a {
								if a[i] != b[i] && !(math.IsInf(a[i], 1) && math.IsInf(b[i], 1)) {
									t.Fatalf("%v p=%v n=%d: DropoutApply mask[%d] = %v, want %v", dt, p, n, i, b[i], a[i])
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestDropoutKeyedExact checks keyed masks (rows keyed by random 64-bit
// keys, read unsigned) bit for bit against the scalar definition:
// element (r, c) is stream index DropoutIndex(keys[r], cols, c), with
// the AVX2 and AVX-512 kernels, across row widths that are and are not
// multiples of the vector widths; DropoutApply with the same keys
// multiplies by that mask.
func TestDropoutKeyedExact(t *testing.T) {
	for _, avx2Only := range []bool{false, true} {
		for _, dt := range dtypes {
			for _, p := range []float64{0.1, 0.5, 1 - 1e-9} {
				for _, cols := range []int{1, 2, 4, 7, 8, 13, 16, 33} {
					const rows = 19
					c := newTC(t, 3, dt, 6)
					c.be = New(Options{Threads: 3, AVX2Only: avx2Only})
					keys := c.randKeys(rows)
					mask := c.zeros(rows, cols)
					c.ok(c.be.DropoutMask(99, keys, p, mask))
					scale := round(dt, 1/(1-p))
					got, ks := get(mask), I64(keys)
					for r := range rows {
						for col := range cols {
							want := 0.0
							if Uniform(99, backend.DropoutIndex(uint64(ks[r]), cols, col)) >= p {
								want = scale
							}
							if v := got[r*cols+col]; v != want {
								t.Fatalf("%v avx2only=%v p=%v cols=%d: mask[%d,%d] = %v, want %v", dt, avx2Only, p, cols, r, col, v, want)
							}
						}
					}
					x, _ := c.rand(rows, cols)
					y0, y := c.zeros(rows, cols), c.zeros(rows, cols)
					c.ok(c.be.Elementwise(backend.Mul, x, mask, y0))
					c.ok(c.be.DropoutApply(99, keys, p, x, nil, y))
					for i, a := range get(y0) {
						if b := get(y)[i]; math.Float64bits(a) != math.Float64bits(b) {
							t.Fatalf("%v avx2only=%v p=%v cols=%d: DropoutApply y[%d] = %v, want %v", dt, avx2Only, p, cols, i, b, a)
						}
					}
				}
			}
		}
	}
}

// TestActivationKernelsExact checks the float32 C activation and
// elementwise kernels bit for bit against the Go loops they replace.
func TestActivationKernelsExact(t *testing.T) {
	n := 1003
	x, y, dy := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)*0.37)) * 3
		y[i] = float32(math.Cos(float64(i) * 0.11))
		dy[i] = float32(math.Sin(float64(i)*1.3)) * 2
	}
	x[5], x[6], x[7] = 0, float32(math.Copysign(0, -1)), float32(math.NaN())
	x[11] = float32(math.Inf(-1))
	same := func(name string, a, b []float32) {
		t.Helper()
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
				t.Fatalf("%s[%d] = %v, want %v", name, i, b[i], a[i])
			}
		}
	}
	const alpha = 0.2
	want, got := make([]float32, n), make([]float32, n)
	apply(backend.ReLU, alpha, x, want)
	cReLU(x, got)
	same("relu", want, got)
	apply(backend.LeakyReLU, alpha, x, want)
	cLeaky(alpha, x, got)
	same("leaky", want, got)
	applyBackward(backend.ReLU, alpha, x, nil, dy, want)
	cReLUBwd(x, dy, got)
	same("relu bwd", want, got)
	applyBackward(backend.LeakyReLU, alpha, x, nil, dy, want)
	cActBwd(false, alpha, x, nil, dy, got)
	same("leaky bwd", want, got)
	applyBackward(backend.ELU, 1, x, y, dy, want)
	cActBwd(true, 1, x, y, dy, got)
	same("elu bwd", want, got)
	binary(backend.Mul, x, dy, want)
	cMul(x, dy, got)
	same("mul", want, got)
	for _, op := range []backend.Binary{backend.Add, backend.Mul} {
		c := 17
		rows := n / c
		for r := 0; r < rows; r++ {
			binary(op, x[r*c:(r+1)*c], y[:c], want[r*c:(r+1)*c])
		}
		cRowsOp(op == backend.Mul, x[:rows*c], y[:c], got[:rows*c], c)
		same("rows", want[:rows*c], got[:rows*c])
	}
}
