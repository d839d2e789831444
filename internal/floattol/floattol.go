// Package floattol derives the error bounds that strata's tests allow
// between floating-point results from the computation they check: the
// format, the length of each reduction, the magnitude of its terms and
// the conditioning of the functions on the way, never what one machine
// produced. A bound that holds for every correct implementation holds on
// every CPU and GPU, whichever BLAS kernels, thread counts, chunkings or
// summation orders compute the result.
//
// The model is the standard one (Higham, Accuracy and Stability of
// Numerical Algorithms, 2nd ed., §2.2): a correct +, −, × or ÷ returns
// the exact result of its operands times (1+δ) with |δ| ≤ u, the unit
// roundoff of its format (2^-24 for float32, 2^-53 for float64). A fused
// multiply-add, or an accumulator wider than the format, rounds less
// often and stays inside the same bounds. An elementary function (exp,
// log, tanh, pow, ...) is within FuncULPs units in the last place of its
// exact value. Under this model a sum of n terms in any order is within
// γ_{n−1}·Σ|x_i| of the exact sum, and a dot product of length n within
// γ_n·Σ|x_i||y_i| (Higham §3.1), with γ_n = n·u/(1−n·u); two correct
// implementations differ by at most twice that. A result below the
// smallest normal number may be off by that number (flushed to zero, or
// rounded among subnormals): Val's arithmetic adds it to each operation;
// the plain bounds leave it out, for the tests whose values are far from
// it.
//
// Val carries a value with a bound on the error of any correct
// implementation of the computation that produced it (a running error
// analysis, Higham §3.3), for the tests whose reference is an algorithm
// rather than one reduction.
package floattol

import "math"

// Unit roundoffs u = 2^-p of the formats strata computes or stores in, p
// being the significand's precision.
const (
	UBFloat16 = 0x1p-8
	UFloat16  = 0x1p-11
	UFloat32  = 0x1p-24
	UFloat64  = 0x1p-53
)

// The smallest normal numbers of float32 and float64: the absolute error
// of an operation whose result underflows.
const (
	MinNormal32 = 0x1p-126
	MinNormal64 = 0x1p-1022
)

// FuncULPs bounds the error of an elementary function (exp, expm1, log,
// sqrt, rsqrt, tanh, sigmoid, pow, cos, sin) of a correct implementation,
// in units in the last place of the result: CUDA's documented maxima for
// the functions strata's kernels call (powf 4 ulp; expf, tanhf, cosf,
// rsqrtf 2; the double versions 1 or 2), above glibc's and Go's (under 1–2).
// One ulp is at most 2u relative, so a function adds 2·FuncULPs·u.
const FuncULPs = 4

// Gamma returns γ_n = n·u/(1−n·u), the bound on the relative error that n
// roundings of unit roundoff u accumulate; +Inf once n·u ≥ 1 (nothing is
// bounded), 0 for n ≤ 0.
func Gamma(n int, u float64) float64 {
	if n <= 0 {
		return 0
	}
	nu := float64(n) * u
	if nu >= 1 {
		return math.Inf(1)
	}
	return nu / (1 - nu)
}

// Sum bounds the error of a sum of n terms in any order (recursive,
// pairwise, blocked, split over threads or ranks): γ_{n−1}·mag, mag being
// Σ|x_i| (Higham (4.4)).
func Sum(n int, u, mag float64) float64 { return Gamma(n-1, u) * mag }

// Dot bounds the error of a dot product of length n in any order, each
// product rounded once (or fused): γ_n·mag, mag being Σ|x_i||y_i|
// (Higham (3.5)).
func Dot(n int, u, mag float64) float64 { return Gamma(n, u) * mag }

// GEMM bounds the error of one element of c = α·op(a)·op(b) + β·c with
// inner size k in any order of the k products (BLAS kernels, tiles, split
// inner dimensions summed in turn): the k+1 terms (k products, β·c) take at
// most k additions, and each one product, one scaling by α or β and one
// rounding of α or β to the format, so γ_{k+3}·mag with
// mag = |α|·Σ_p|a_ip||b_pj| + |β|·|c_ij|.
func GEMM(k int, u, mag float64) float64 { return Gamma(k+3, u) * mag }

// Orders bounds the difference between two correct computations of the
// same quantity whose errors are each within bound: two summation orders
// (threads, chunks, ranks, fused and unfused kernels) differ by at most
// twice what either may be off.
func Orders(bound float64) float64 { return 2 * bound }

// Exceeds returns the index of the element of got whose difference from
// want exceeds its bound the most, and that difference over the bound;
// idx is -1 when every element is within its bound. A NaN matches only a
// NaN and an infinity only itself. Slices of different lengths give
// (0, +Inf).
func Exceeds(got, want, bound []float64) (idx int, ratio float64) {
	if len(got) != len(want) || len(bound) != len(want) {
		return 0, math.Inf(1)
	}
	idx = -1
	for i := range want {
		if r := excess(got[i], want[i], bound[i]); r > 1 && r > ratio {
			idx, ratio = i, r
		}
	}
	return idx, ratio
}

// excess is |g−w|/b, 0 for equal values (NaN with NaN included) and +Inf
// for a NaN or infinity against anything else.
func excess(g, w, b float64) float64 {
	switch {
	case g == w, math.IsNaN(g) && math.IsNaN(w):
		return 0
	case math.IsNaN(g), math.IsNaN(w), math.IsInf(g, 0), math.IsInf(w, 0):
		return math.Inf(1)
	case b <= 0:
		return math.Inf(1)
	}
	return math.Abs(g-w) / b
}

// CentralStep returns the step h of a central difference
// (f(x+h) − f(x−h))/2h that balances its truncation error h²/6·d3 (d3
// bounds the third derivative near x) against its rounding error eps/h
// (eps bounds the error of each computed f): h = (3·eps/d3)^(1/3). For a
// function of scale s in its value and in its third derivative (inputs of
// order 1), d3 = s and eps = γ_k·s: h ≈ (3·k·u)^(1/3).
func CentralStep(eps, d3 float64) float64 { return math.Cbrt(3 * eps / d3) }

// Slope estimates f'(0) by the central difference D(h) = (f(h) −
// f(−h))/2h, f(d) evaluating the function with its input moved by d, and
// bounds the estimate's error from the function itself:
//   - its truncation error T (about h²/6 times the third derivative) by
//     Richardson's comparison with D(2h), which is off by 4T: D(2h) − D(h)
//     is 3T plus rounding, and |D(2h) − D(h)| leaves a factor 3 on T for
//     the O(h⁴) terms Richardson neglects;
//   - a kink (a ReLU, a max) within h, where D(h) averages two slopes and
//     f'(0) is one of them, by half the difference of the one-sided
//     differences (f(h) − f(0))/h and (f(0) − f(−h))/h; on a smooth
//     function that adds h/2 times the second derivative;
//   - its rounding error by eps/h, eps bounding the error of each
//     evaluation (and 3·eps/h more for the rounding of the two estimates).
func Slope(f func(d float64) float64, h, eps float64) (d, bound float64) {
	f0, fp, fm := f(0), f(h), f(-h)
	d1 := (fp - fm) / (2 * h)
	d2 := (f(2*h) - f(-2*h)) / (4 * h)
	kink := math.Abs((fp-f0)/h-(f0-fm)/h) / 2
	return d1, math.Abs(d2-d1) + kink + 4*eps/h
}

// Gradient is Slope for every input i < n of a function: f(i, d)
// evaluates it with input i moved by d. It returns the estimates and
// their bounds.
func Gradient(n int, f func(i int, d float64) float64, h, eps float64) (num, bound []float64) {
	num, bound = make([]float64, n), make([]float64, n)
	for i := range n {
		num[i], bound[i] = Slope(func(d float64) float64 { return f(i, d) }, h, eps)
	}
	return num, bound
}
