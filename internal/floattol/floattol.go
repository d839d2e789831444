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
// implementations differ by at most twice that. Underflow is outside the
// model: the tests that use it work with values far from it.
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
// bounds |f”'| near x) against its rounding error eps/h (eps bounds the
// error of each computed f): h = (3·eps/d3)^(1/3).
func CentralStep(eps, d3 float64) float64 { return math.Cbrt(3 * eps / d3) }

// Central bounds the error of that central difference with step h:
// h²/6·d3 + eps/h.
func Central(h, eps, d3 float64) float64 { return h*h/6*d3 + eps/h }
