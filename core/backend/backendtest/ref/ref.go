// Package ref holds the host references of the backend ops with their
// error bounds: the exact result of each op (computed in float64) and a
// bound on the error of any correct implementation, in the model of
// internal/floattol (every +, −, ×, ÷ rounds once; an elementary function
// is within floattol.FuncULPs ulps; sums go in any order). The
// conformance suite (backendtest) and the cpu backend's tests check
// results against them. Every float64 argument of an op (alpha, beta,
// eps, a learning rate) is a Param: a kernel may round it to its dtype
// first. Give Arith the sum of the dtype's unit roundoff and float64's, so
// that a bound covers the reference's own rounding too.
package ref

import (
	"math"

	"strata/core/graph"
	"strata/internal/floattol"
)

type (
	// Val is floattol.Val: an exact value and its error bound.
	Val = floattol.Val
	// Arith is floattol.Arith: the arithmetic a bound is derived in.
	Arith = floattol.Arith
)

var in = floattol.In

// GEMM is c = alpha·op(a)·op(b) + beta·c (beta 0: c is not read).
func GEMM(ar Arith, ta, tb bool, m, n, k int, alpha float64, av, bv []float64, beta float64, cv []float64) []Val {
	out := make([]Val, m*n)
	al, be := ar.Param(alpha), ar.Param(beta)
	for i := range m {
		for j := range n {
			terms := make([]Val, 0, k+1)
			for p := range k {
				ai, bi := i*k+p, p*n+j
				if ta {
					ai = p*m + i
				}
				if tb {
					bi = j*k + p
				}
				terms = append(terms, ar.Mul(al, ar.Mul(in(av[ai]), in(bv[bi]))))
			}
			if beta != 0 {
				terms = append(terms, ar.Mul(be, in(cv[i*n+j])))
			}
			out[i*n+j] = ar.Sum(terms...)
		}
	}
	return out
}

// DropoutGEMMBound bounds one element of c = op(dropout(x))·b + beta·c
// without knowing the mask: every element of x counts as kept, scaled by
// 1/(1-p) (rounded to the dtype, then a product): the k+1 terms take k
// additions and at most 4 roundings each, so γ_{k+4} of
// Σ|x||b|/(1-p) + |beta||c|.
func DropoutGEMMBound(u float64, transX bool, m, n, k int, p float64, xv, bv []float64, beta float64, cv []float64) []float64 {
	out := make([]float64, m*n)
	for i := range m {
		for j := range n {
			mag := math.Abs(beta * cv[i*n+j])
			if beta == 0 {
				mag = 0
			}
			for q := range k {
				xi := i*k + q
				if transX {
					xi = q*m + i
				}
				mag += math.Abs(xv[xi]*bv[q*n+j]) / (1 - p)
			}
			out[i*n+j] = floattol.Gamma(k+4, u) * mag
		}
	}
	return out
}

// edges lists the edges of g as (dst, src) pairs, in CSR order.
func edges(g *graph.CSR) (dst, src []int) {
	for i := range g.NumRows {
		for k := g.Indptr[i]; k < g.Indptr[i+1]; k++ {
			dst, src = append(dst, i), append(src, int(g.Col(k)))
		}
	}
	return dst, src
}

// SpMM is y = A·x + beta·y (Aᵀ with trans) for x with h heads of cc
// columns; w is nil (the adjacency's values, ones without), [E] or
// [E,h] (wh = h).
func SpMM(ar Arith, g *graph.CSR, trans bool, w []float64, wh int, x []float64, h, cc int, beta float64, y []float64) []Val {
	dst, src := edges(g)
	rows := g.NumRows
	if trans {
		rows, dst, src = g.NumCols, src, dst
	}
	f := h * cc
	terms := make([][]Val, rows*f)
	for e := range dst {
		for j := range f {
			wt := 1.0
			switch {
			case w == nil && g.Values != nil:
				wt = float64(g.Values[e])
			case w != nil && wh == 0:
				wt = w[e]
			case w != nil:
				wt = w[e*wh+j/cc]
			}
			o := dst[e]*f + j
			terms[o] = append(terms[o], ar.Mul(in(wt), in(x[src[e]*f+j])))
		}
	}
	out := make([]Val, rows*f)
	for o := range out {
		if beta != 0 {
			terms[o] = append(terms[o], ar.Mul(ar.Param(beta), in(y[o])))
		}
		out[o] = ar.Sum(terms[o]...)
	}
	return out
}

// Scatter is y[idx[i], :] += x[i, :] over cols columns, idx[i] < 0
// skipped (ScatterAdd, and ScatterArgmax column by column).
func Scatter(ar Arith, x []float64, idx func(i, col int) int, n, cols int, y []float64) []Val {
	terms := make([][]Val, len(y))
	for o := range y {
		terms[o] = []Val{in(y[o])}
	}
	for i := range n {
		for j := range cols {
			if r := idx(i, j); r >= 0 {
				terms[r*cols+j] = append(terms[r*cols+j], in(x[i*cols+j]))
			}
		}
	}
	out := make([]Val, len(y))
	for o := range out {
		out[o] = ar.Sum(terms[o]...)
	}
	return out
}

// SDDMM is out[e,h] = <x[dst(e)] head h, y[src(e)] head h>.
func SDDMM(ar Arith, g *graph.CSR, x, y []float64, h, cc int) []Val {
	dst, src := edges(g)
	out := make([]Val, len(dst)*h)
	f := h * cc
	for e := range dst {
		for hh := range h {
			a, b := x[dst[e]*f+hh*cc:][:cc], y[src[e]*f+hh*cc:][:cc]
			out[e*h+hh] = ar.Dot(floattol.Ins(a), floattol.Ins(b))
		}
	}
	return out
}

// UAddV is out[e,h] = u[src(e),h] + v[dst(e),h].
func UAddV(ar Arith, g *graph.CSR, u, v []float64, h int) []Val {
	dst, src := edges(g)
	out := make([]Val, len(dst)*h)
	for e := range dst {
		for hh := range h {
			out[e*h+hh] = ar.Add(in(u[src[e]*h+hh]), in(v[dst[e]*h+hh]))
		}
	}
	return out
}

// EdgeReduce sums e [E,h] into the destinations (or the sources).
func EdgeReduce(ar Arith, g *graph.CSR, toSrc bool, ev []float64, h int) []Val {
	dst, src := edges(g)
	rows := g.NumRows
	if toSrc {
		rows, dst = g.NumCols, src
	}
	terms := make([][]Val, rows*h)
	for e, d := range dst {
		for hh := range h {
			terms[d*h+hh] = append(terms[d*h+hh], in(ev[e*h+hh]))
		}
	}
	out := make([]Val, rows*h)
	for o := range out {
		out[o] = ar.Sum(terms[o]...)
	}
	return out
}

// EdgeSoftmax is the softmax of s [E,h] over each destination's edges,
// as exp(s − max)/Σ exp(s − max), the sum in any order (an implementation
// without the max shift rounds less).
func EdgeSoftmax(ar Arith, g *graph.CSR, s []float64, h int) []Val {
	out := make([]Val, len(s))
	for i := range g.NumRows {
		k0, k1 := int(g.Indptr[i]), int(g.Indptr[i+1])
		for hh := range h {
			m := math.Inf(-1)
			for k := k0; k < k1; k++ {
				m = max(m, s[k*h+hh])
			}
			ex := make([]Val, 0, k1-k0)
			for k := k0; k < k1; k++ {
				ex = append(ex, ar.Exp(ar.Sub(in(s[k*h+hh]), in(m))))
			}
			sum := ar.Sum(ex...)
			for k := k0; k < k1; k++ {
				out[k*h+hh] = ar.Div(ex[k-k0], sum)
			}
		}
	}
	return out
}

// EdgeSoftmaxBackward is ds = out·(dout − Σ_row out·dout).
func EdgeSoftmaxBackward(ar Arith, g *graph.CSR, o, dout []float64, h int) []Val {
	out := make([]Val, len(o))
	for i := range g.NumRows {
		k0, k1 := int(g.Indptr[i]), int(g.Indptr[i+1])
		for hh := range h {
			var os, ds []Val
			for k := k0; k < k1; k++ {
				os, ds = append(os, in(o[k*h+hh])), append(ds, in(dout[k*h+hh]))
			}
			dot := ar.Dot(os, ds)
			for k := k0; k < k1; k++ {
				out[k*h+hh] = ar.Mul(in(o[k*h+hh]), ar.Sub(in(dout[k*h+hh]), dot))
			}
		}
	}
	return out
}

// HeadDot is y[n,h] = Σ_c x[n,h·C+c]·a[h,c].
func HeadDot(ar Arith, x, a []float64, n, h, cc int) []Val {
	out := make([]Val, n*h)
	for i := range n {
		for hh := range h {
			out[i*h+hh] = ar.Dot(floattol.Ins(x[i*h*cc+hh*cc:][:cc]), floattol.Ins(a[hh*cc:][:cc]))
		}
	}
	return out
}

// HeadDotBackward is dx += dy ⊗ a per head and da += Σ_n dy·x.
func HeadDotBackward(ar Arith, x, a, dy, dx, da []float64, n, h, cc int) (dxv, dav []Val) {
	f := h * cc
	dxv = make([]Val, n*f)
	daTerms := make([][]Val, f)
	for j := range f {
		daTerms[j] = []Val{in(da[j])}
	}
	for i := range n {
		for j := range f {
			g := in(dy[i*h+j/cc])
			dxv[i*f+j] = ar.Add(in(dx[i*f+j]), ar.Mul(g, in(a[j])))
			daTerms[j] = append(daTerms[j], ar.Mul(g, in(x[i*f+j])))
		}
	}
	dav = make([]Val, f)
	for j := range f {
		dav[j] = ar.Sum(daTerms[j]...)
	}
	return dxv, dav
}

// SumRows is y[c] = Σ_i x[i,c].
func SumRows(ar Arith, x []float64, rows, cols int) []Val {
	out := make([]Val, cols)
	for j := range cols {
		col := make([]Val, rows)
		for i := range rows {
			col[i] = in(x[i*cols+j])
		}
		out[j] = ar.Sum(col...)
	}
	return out
}
