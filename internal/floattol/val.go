package floattol

import "math"

// Val is a quantity of a computation: V its exact value (computed in
// float64 by the test's reference) and E a bound on how far any correct
// implementation's computed value can be from it. Build Vals with an
// Arith, which adds each operation's rounding; every rule is rigorous, not
// first-order.
type Val struct{ V, E float64 }

// Arith is the arithmetic of a format with unit roundoff U, in which a
// result below the smallest normal number may also be off by Tiny (it is
// flushed to zero, or rounded in the subnormal range): each operation adds
// Tiny to its error. To bound a float64 reference's own rounding together
// with the implementation's, give U and Tiny the sums of both formats':
// the bound of the sum is at least the sum of the bounds (each is a series
// in u with nonnegative terms). Checked32 and Checked64 are those.
type Arith struct{ U, Tiny float64 }

// Checked32 and Checked64 bound a float32 or float64 implementation and a
// float64 reference of it at once.
var (
	Checked32 = Arith{U: UFloat32 + UFloat64, Tiny: MinNormal32 + MinNormal64}
	Checked64 = Arith{U: 2 * UFloat64, Tiny: 2 * MinNormal64}
)

// In is an input of the computation: exactly what the implementation reads.
func In(v float64) Val { return Val{V: v} }

// Ins returns the inputs vs.
func Ins(vs []float64) []Val {
	out := make([]Val, len(vs))
	for i, v := range vs {
		out[i] = In(v)
	}
	return out
}

// Values returns the V of each Val.
func Values(vs []Val) []float64 {
	out := make([]float64, len(vs))
	for i, v := range vs {
		out[i] = v.V
	}
	return out
}

// Errors returns the E of each Val.
func Errors(vs []Val) []float64 {
	out := make([]float64, len(vs))
	for i, v := range vs {
		out[i] = v.E
	}
	return out
}

// round is one rounding of a computed quantity whose exact value is v and
// whose operands were off by e: e + u·(|v| + e) + tiny.
func (a Arith) round(v, e float64) Val { return Val{v, e + a.U*(math.Abs(v)+e) + a.Tiny} }

// Param is a float64 argument (a scale, a learning rate) that the
// implementation may first round to its format.
func (a Arith) Param(v float64) Val { return a.round(v, 0) }

// Add returns x + y, rounded.
func (a Arith) Add(x, y Val) Val { return a.round(x.V+y.V, x.E+y.E) }

// Sub returns x − y, rounded.
func (a Arith) Sub(x, y Val) Val { return a.round(x.V-y.V, x.E+y.E) }

// Neg returns −x, which is exact.
func Neg(x Val) Val { return Val{-x.V, x.E} }

// Mul returns x·y, rounded: |x̂ŷ − xy| ≤ |x|e_y + |y|e_x + e_x·e_y.
func (a Arith) Mul(x, y Val) Val {
	return a.round(x.V*y.V, math.Abs(x.V)*y.E+math.Abs(y.V)*x.E+x.E*y.E)
}

// Div returns x/y, rounded; +Inf error when y's error interval holds 0:
// |x̂/ŷ − x/y| = |x̂y − xŷ|/|ŷy| ≤ (|y|e_x + |x|e_y)/(|y|(|y|−e_y)).
func (a Arith) Div(x, y Val) Val {
	ay := math.Abs(y.V)
	if ay <= y.E {
		return Val{x.V / y.V, math.Inf(1)}
	}
	return a.round(x.V/y.V, (ay*x.E+math.Abs(x.V)*y.E)/(ay*(ay-y.E)))
}

// Sum returns Σ xs in any order of the additions: the terms' own errors
// plus γ_{n−1} times the sum of the computed terms' magnitudes.
func (a Arith) Sum(xs ...Val) Val {
	var v, mag, e float64
	for _, x := range xs {
		v += x.V
		mag += math.Abs(x.V)
		e += x.E
	}
	n := max(len(xs)-1, 0)
	return Val{v, e + Gamma(n, a.U)*(mag+e) + float64(n)*a.Tiny}
}

// Dot returns Σ x_i·y_i in any order, each product rounded once (or
// fused, which rounds less).
func (a Arith) Dot(xs, ys []Val) Val {
	p := make([]Val, len(xs))
	for i := range xs {
		p[i] = a.Mul(xs[i], ys[i])
	}
	return a.Sum(p...)
}

// fn evaluates an elementary function f at x: the error x carries, times
// lip, a bound on |f'| over [x.V−x.E, x.V+x.E], then FuncULPs ulps of the
// result.
func (a Arith) fn(x Val, f func(float64) float64, lip func(lo, hi float64) float64) Val {
	v, e := f(x.V), 0.0
	if x.E > 0 {
		e = lip(x.V-x.E, x.V+x.E) * x.E
	}
	if math.IsNaN(e) {
		e = math.Inf(1)
	}
	return Val{v, e + 2*FuncULPs*a.U*(math.Abs(v)+e) + a.Tiny}
}

// Exp returns e^x.
func (a Arith) Exp(x Val) Val {
	return a.fn(x, math.Exp, func(_, hi float64) float64 { return math.Exp(hi) })
}

// Expm1 returns e^x − 1 (as one function, accurate near 0).
func (a Arith) Expm1(x Val) Val {
	return a.fn(x, math.Expm1, func(_, hi float64) float64 { return math.Exp(hi) })
}

// Log returns ln x; +Inf error when x's interval reaches 0.
func (a Arith) Log(x Val) Val {
	return a.fn(x, math.Log, func(lo, _ float64) float64 { return positive(lo, 1/lo) })
}

// Sqrt returns √x; +Inf error when x's interval reaches 0. 1/√x as
// Div(In(1), Sqrt(x)) also bounds a kernel's fused reciprocal square root
// (within FuncULPs ulps itself).
func (a Arith) Sqrt(x Val) Val {
	return a.fn(x, math.Sqrt, func(lo, _ float64) float64 { return positive(lo, 0.5/math.Sqrt(lo)) })
}

// Tanh returns tanh x.
func (a Arith) Tanh(x Val) Val {
	return a.fn(x, math.Tanh, func(lo, hi float64) float64 {
		t := math.Tanh(nearZero(lo, hi))
		return 1 - t*t
	})
}

// Sigmoid returns 1/(1+e^−x) as one function: an implementation that
// composes it from Exp, Add and Div stays within these FuncULPs (one
// exp's ulps plus two roundings).
func (a Arith) Sigmoid(x Val) Val {
	return a.fn(x, sigmoid, func(lo, hi float64) float64 {
		s := sigmoid(nearZero(lo, hi))
		return s * (1 - s)
	})
}

// Pow returns x^p for a constant p; +Inf error when x's interval reaches
// 0 with p < 1.
func (a Arith) Pow(x Val, p float64) Val {
	return a.fn(x, func(v float64) float64 { return math.Pow(v, p) }, func(lo, hi float64) float64 {
		if p >= 1 {
			return p * math.Pow(max(math.Abs(lo), math.Abs(hi)), p-1)
		}
		return positive(lo, math.Abs(p)*math.Pow(lo, p-1))
	})
}

// Cos returns cos x.
func (a Arith) Cos(x Val) Val { return a.fn(x, math.Cos, one) }

// Sin returns sin x.
func (a Arith) Sin(x Val) Val { return a.fn(x, math.Sin, one) }

func one(_, _ float64) float64 { return 1 }

func sigmoid(v float64) float64 { return 1 / (1 + math.Exp(-v)) }

// nearZero is the point of [lo, hi] closest to 0.
func nearZero(lo, hi float64) float64 {
	switch {
	case lo > 0:
		return lo
	case hi < 0:
		return hi
	}
	return 0
}

// positive returns v when lo > 0, else +Inf.
func positive(lo, v float64) float64 {
	if lo <= 0 {
		return math.Inf(1)
	}
	return v
}

// Max returns max(x, y): selecting rounds nothing, but the computed
// operands may be picked the other way round when their intervals meet,
// which max's Lipschitz constant 1 covers.
func Max(x, y Val) Val { return Val{max(x.V, y.V), max(x.E, y.E)} }
