package backendtest

import (
	"fmt"
	"math"

	"strata/core/graph"
	"strata/core/ir"
	"strata/internal/floattol"
)

// unaryModel is how a correct kernel computes a unary function and its
// gradient, for the bounds: fwd gives y = f(x), bwd dx = f'(x)·dy, as the
// op table's F and DF define them (NeedsX, NeedsY). Every ClassUnary op of
// ir.Ops needs one (TestUnaryModels).
type unaryModel struct {
	fwd func(ar arith, x val, alpha float64) val
	bwd func(ar arith, x, y, dy val, alpha float64) val
}

// when picks a when the (exact) input x is positive, else b.
func when(x val, a, b func() val) val {
	if x.V > 0 {
		return a()
	}
	return b()
}

func zero() val { return in(0) }

// powAlpha is x^alpha with alpha rounded to the dtype first: the rounding
// of alpha moves the result by |x^alpha·ln x|·u|alpha|.
func powAlpha(ar arith, x val, alpha float64) val {
	v := ar.Pow(x, alpha)
	v.E += math.Abs(v.V*math.Log(x.V)) * ar.U * math.Abs(alpha)
	return v
}

// unaryModels are the models by ir.OpSpec.Name.
var unaryModels = map[string]unaryModel{
	"Identity": {
		fwd: func(_ arith, x val, _ float64) val { return x },
		bwd: func(_ arith, _, _, dy val, _ float64) val { return dy }},
	"ReLU": {
		fwd: func(_ arith, x val, _ float64) val { return when(x, func() val { return x }, zero) },
		bwd: func(_ arith, x, _, dy val, _ float64) val { return when(x, func() val { return dy }, zero) }},
	"LeakyReLU": {
		fwd: func(ar arith, x val, a float64) val {
			return when(x, func() val { return x }, func() val { return ar.Mul(ar.Param(a), x) })
		},
		bwd: func(ar arith, x, _, dy val, a float64) val {
			return when(x, func() val { return dy }, func() val { return ar.Mul(ar.Param(a), dy) })
		}},
	"ELU": {
		fwd: func(ar arith, x val, a float64) val {
			return when(x, func() val { return x }, func() val { return ar.Mul(ar.Param(a), ar.Expm1(x)) })
		},
		bwd: func(ar arith, x, y, dy val, a float64) val {
			return when(x, func() val { return dy }, func() val { return ar.Mul(dy, ar.Add(y, ar.Param(a))) })
		}},
	"Sigmoid": {
		fwd: func(ar arith, x val, _ float64) val { return ar.Sigmoid(x) },
		bwd: func(ar arith, _, y, dy val, _ float64) val { return ar.Mul(ar.Mul(dy, y), ar.Sub(in(1), y)) }},
	"Tanh": {
		fwd: func(ar arith, x val, _ float64) val { return ar.Tanh(x) },
		bwd: func(ar arith, _, y, dy val, _ float64) val { return ar.Mul(dy, ar.Sub(in(1), ar.Mul(y, y))) }},
	"Exp": {
		fwd: func(ar arith, x val, _ float64) val { return ar.Exp(x) },
		bwd: func(ar arith, _, y, dy val, _ float64) val { return ar.Mul(dy, y) }},
	"Neg": {
		fwd: func(_ arith, x val, _ float64) val { return floattol.Neg(x) },
		bwd: func(_ arith, _, _, dy val, _ float64) val { return floattol.Neg(dy) }},
	"Log": {
		fwd: func(ar arith, x val, _ float64) val { return ar.Log(x) },
		bwd: func(ar arith, x, _, dy val, _ float64) val { return ar.Div(dy, x) }},
	"Sqrt": {
		fwd: func(ar arith, x val, _ float64) val { return ar.Sqrt(x) },
		bwd: func(ar arith, _, y, dy val, _ float64) val { return ar.Div(ar.Mul(dy, in(0.5)), y) }},
	"Pow": {
		fwd: func(ar arith, x val, a float64) val { return powAlpha(ar, x, a) },
		bwd: func(ar arith, x, _, dy val, a float64) val {
			return ar.Mul(dy, ar.Mul(ar.Param(a), powAlpha(ar, x, a-1)))
		}},
	"Abs": {
		fwd: func(_ arith, x val, _ float64) val { return val{V: math.Abs(x.V), E: x.E} },
		bwd: func(_ arith, x, _, dy val, _ float64) val {
			return val{V: dy.V * sign(x.V), E: dy.E}
		}},
	"Sign": {
		fwd: func(_ arith, x val, _ float64) val { return in(sign(x.V)) },
		bwd: func(_ arith, _, _, _ val, _ float64) val { return zero() }},
	"ClampMin": {
		fwd: func(ar arith, x val, a float64) val { return floattol.Max(x, ar.Param(a)) },
		bwd: clampBwd},
	"ClampMax": {
		fwd: func(ar arith, x val, a float64) val {
			return floattol.Neg(floattol.Max(floattol.Neg(x), floattol.Neg(ar.Param(a))))
		},
		bwd: clampBwd},
	"Shift": {
		fwd: func(ar arith, x val, a float64) val { return ar.Add(x, ar.Param(a)) },
		bwd: func(_ arith, _, _, dy val, _ float64) val { return dy }},
	"Cos": {
		fwd: func(ar arith, x val, _ float64) val { return ar.Cos(x) },
		bwd: func(ar arith, x, _, dy val, _ float64) val { return floattol.Neg(ar.Mul(dy, ar.Sin(x))) }},
}

// clampBwd passes dy where the clamp let x through (x == y, exact inputs).
func clampBwd(_ arith, x, y, dy val, _ float64) val {
	if x.V == y.V {
		return dy
	}
	return zero()
}

// sign is -1, 0 or 1.
func sign(v float64) float64 {
	if v == 0 {
		return 0
	}
	return math.Copysign(1, v)
}

// modelOf returns the model of a unary op, or an error naming it.
func modelOf(s ir.OpSpec) (unaryModel, error) {
	m, ok := unaryModels[s.Name]
	if !ok {
		return m, fmt.Errorf("unary %s has no error model in backendtest's unaryModels: add how a kernel computes it and its gradient", s.Name)
	}
	return m, nil
}

// refBinary is y = a op b for the binary ops (b broadcast by index).
func refBinary(ar arith, name string, a, b []float64) ([]val, error) {
	out := make([]val, len(a))
	for i, av := range a {
		x, y := in(av), in(b[i%len(b)])
		switch name {
		case "Add":
			out[i] = ar.Add(x, y)
		case "Sub":
			out[i] = ar.Sub(x, y)
		case "Mul":
			out[i] = ar.Mul(x, y)
		case "Div":
			out[i] = ar.Div(x, y)
		case "Minimum":
			out[i] = in(min(x.V, y.V))
		case "Maximum":
			out[i] = in(max(x.V, y.V))
		case "Equal":
			out[i] = in(map[bool]float64{false: 0, true: 1}[x.V == y.V])
		default:
			return nil, fmt.Errorf("binary %s has no error model in backendtest's refBinary", name)
		}
	}
	return out, nil
}

// refAct applies a SpMMBiasAct activation to a computed z: the
// activation's Lipschitz constant (1 for identity and ReLU, max(1, alpha)
// for ELU) times z's error, then the activation's own rounding.
func refAct(ar arith, act string, z val, alpha float64) val {
	switch act {
	case "ReLU":
		return floattol.Max(z, in(0))
	case "ELU":
		v := z.V
		if v <= 0 {
			v = alpha * math.Expm1(v)
		}
		e := max(1, alpha) * z.E
		return val{V: v, E: e + (2*floattol.FuncULPs+2)*ar.U*(math.Abs(v)+e)}
	}
	return z
}

// refBatchNorm is y = (x − μ)·invStd·γ + β with the batch statistics of
// x [n,k] (two passes: the mean, then the mean square deviation), and the
// statistics themselves.
func refBatchNorm(ar arith, x, gamma, beta []float64, n, k int, eps float64) (y, mean, inv []val) {
	y, mean, inv = make([]val, n*k), make([]val, k), make([]val, k)
	rn := ar.Param(1 / float64(n))
	for j := range k {
		col := make([]val, n)
		for i := range n {
			col[i] = in(x[i*k+j])
		}
		mean[j] = ar.Mul(ar.Sum(col...), rn)
		sq := make([]val, n)
		for i := range n {
			d := ar.Sub(col[i], mean[j])
			sq[i] = ar.Mul(d, d)
		}
		inv[j] = ar.Div(in(1), ar.Sqrt(ar.Add(ar.Mul(ar.Sum(sq...), rn), ar.Param(eps))))
		for i := range n {
			y[i*k+j] = ar.Add(ar.Mul(ar.Mul(ar.Sub(col[i], mean[j]), inv[j]), in(gamma[j])), in(beta[j]))
		}
	}
	return y, mean, inv
}

// refBatchNormBackward is dbeta = Σ dy, dgamma = Σ dy·x̂ and
// dx = γ·invStd·(dy − dbeta/n − x̂·dgamma/n), x̂ = (x − μ)·invStd, with
// the statistics given.
func refBatchNormBackward(ar arith, x, gamma, dy, mu, is []float64, n, k int) (dx, dg, db []val) {
	dx, dg, db = make([]val, n*k), make([]val, k), make([]val, k)
	rn := ar.Param(1 / float64(n))
	for j := range k {
		xh := make([]val, n)
		dys, prods := make([]val, n), make([]val, n)
		for i := range n {
			xh[i] = ar.Mul(ar.Sub(in(x[i*k+j]), in(mu[j])), in(is[j]))
			dys[i] = in(dy[i*k+j])
			prods[i] = ar.Mul(dys[i], xh[i])
		}
		db[j], dg[j] = ar.Sum(dys...), ar.Sum(prods...)
		scale := ar.Mul(in(gamma[j]), in(is[j]))
		mb, mg := ar.Mul(db[j], rn), ar.Mul(dg[j], rn)
		for i := range n {
			inner := ar.Sum(dys[i], floattol.Neg(mb), floattol.Neg(ar.Mul(xh[i], mg)))
			dx[i*k+j] = ar.Mul(scale, inner)
		}
	}
	return dx, dg, db
}

// refBatchNormInfer is y = (x − mean)/√(var + eps)·γ + β.
func refBatchNormInfer(ar arith, x, gamma, beta, mean, vr []float64, n, k int, eps float64) []val {
	y := make([]val, n*k)
	for j := range k {
		inv := ar.Div(in(1), ar.Sqrt(ar.Add(in(vr[j]), ar.Param(eps))))
		for i := range n {
			y[i*k+j] = ar.Add(ar.Mul(ar.Mul(ar.Sub(in(x[i*k+j]), in(mean[j])), inv), in(gamma[j])), in(beta[j]))
		}
	}
	return y
}

// refSoftmaxCE is the mean over idx (a repeated row counts each time) of
// lse(z_r) − z_r[label], lse = m + ln Σ exp(z − m), and its gradient
// (softmax − onehot)/|idx| accumulated per occurrence (zero elsewhere).
func refSoftmaxCE(ar arith, z []float64, labels, idx []int, k int) (loss val, dz []val) {
	rm := ar.Param(1 / float64(len(idx)))
	grads := make([][]val, len(z))
	losses := make([]val, len(idx))
	for t, r := range idx {
		row := z[r*k:][:k]
		m := math.Inf(-1)
		for _, v := range row {
			m = max(m, v)
		}
		ex := make([]val, k)
		for j, v := range row {
			ex[j] = ar.Exp(ar.Sub(in(v), in(m)))
		}
		lse := ar.Add(in(m), ar.Log(ar.Sum(ex...)))
		losses[t] = ar.Sub(lse, in(row[labels[r]]))
		for j, v := range row {
			g := ar.Mul(ar.Exp(ar.Sub(in(v), lse)), rm)
			if j == labels[r] {
				g = ar.Sub(g, rm)
			}
			grads[r*k+j] = append(grads[r*k+j], g)
		}
	}
	dz = make([]val, len(z))
	for i := range dz {
		dz[i] = ar.Sum(grads[i]...)
	}
	return ar.Mul(ar.Sum(losses...), rm), dz
}

// adamState is p, m and v of AdamStep's reference, carried over steps.
type adamState struct{ p, m, v []val }

// step applies one AdamStep: g += wd·p; m = b1·m + (1−b1)·g;
// v = b2·v + (1−b2)·g²; p −= lr·(m/bc1)/(√(v/bc2) + eps), the bias
// corrections bc = 1 − b^t computed in float64 and passed as Params.
func (s *adamState) step(ar arith, g []float64, lr, b1, b2, eps, wd float64, t int) {
	bc1, bc2 := ar.Param(1-math.Pow(b1, float64(t))), ar.Param(1-math.Pow(b2, float64(t)))
	for i := range s.p {
		gi := ar.Add(in(g[i]), ar.Mul(ar.Param(wd), s.p[i]))
		if wd == 0 {
			gi = in(g[i])
		}
		s.m[i] = ar.Add(ar.Mul(ar.Param(b1), s.m[i]), ar.Mul(ar.Param(1-b1), gi))
		s.v[i] = ar.Add(ar.Mul(ar.Param(b2), s.v[i]), ar.Mul(ar.Param(1-b2), ar.Mul(gi, gi)))
		den := ar.Add(ar.Sqrt(ar.Div(s.v[i], bc2)), ar.Param(eps))
		s.p[i] = ar.Sub(s.p[i], ar.Mul(ar.Param(lr), ar.Div(ar.Div(s.m[i], bc1), den)))
	}
}

// lstmRef is LSTMAggregate and its backward on the host with bounds: per
// row, its sources in CSR order through the cell from a zero state (gates
// i, f, g, o), then backpropagation through time. Each backend's backward
// reads its own saved forward state, which the bounds carry.
type lstmRef struct {
	ar        arith
	g         *graph.CSR
	h         int
	xw, whh   []float64
	bias      []float64
	out       []val
	steps     [][]lstmStep // per row
	dxw, dwhh []val
}

type lstmStep struct {
	src                  int
	act, cprev, c, hprev []val
}

// forward fills out and the saved steps.
func (l *lstmRef) forward() {
	ar, h, g4 := l.ar, l.h, 4*l.h
	l.out, l.steps = make([]val, l.g.NumRows*h), make([][]lstmStep, l.g.NumRows)
	for i := range l.out {
		l.out[i] = in(0)
	}
	for i := range l.g.NumRows {
		hs, cs := vals(h, 0), vals(h, 0)
		for k := l.g.Indptr[i]; k < l.g.Indptr[i+1]; k++ {
			src := int(l.g.Col(k))
			st := lstmStep{src: src, act: make([]val, g4), cprev: cs, hprev: hs, c: make([]val, h)}
			for j := range g4 {
				terms := []val{in(l.xw[src*g4+j]), in(l.bias[j])}
				for q := range h {
					terms = append(terms, ar.Mul(hs[q], in(l.whh[q*g4+j])))
				}
				z := ar.Sum(terms...)
				if j/h == 2 {
					st.act[j] = ar.Tanh(z)
				} else {
					st.act[j] = ar.Sigmoid(z)
				}
			}
			hn := make([]val, h)
			for j := range h {
				ig, f, u, o := st.act[j], st.act[h+j], st.act[2*h+j], st.act[3*h+j]
				st.c[j] = ar.Add(ar.Mul(f, cs[j]), ar.Mul(ig, u))
				hn[j] = ar.Mul(o, ar.Tanh(st.c[j]))
			}
			l.steps[i] = append(l.steps[i], st)
			hs, cs = hn, st.c
		}
		copy(l.out[i*h:], hs)
	}
}

func vals(n int, v float64) []val {
	out := make([]val, n)
	for i := range out {
		out[i] = in(v)
	}
	return out
}

// backward fills dxw and dwhh for the output gradient dout.
func (l *lstmRef) backward(dout []float64) {
	ar, h, g4 := l.ar, l.h, 4*l.h
	dxw := make([][]val, l.g.NumCols*g4)
	dwhh := make([][]val, h*g4)
	one := in(1)
	for i, steps := range l.steps {
		dh, dc := floattol.Ins(dout[i*h:][:h]), vals(h, 0)
		for s := len(steps) - 1; s >= 0; s-- {
			st := steps[s]
			dz := make([]val, g4)
			for j := range h {
				ig, f, u, o := st.act[j], st.act[h+j], st.act[2*h+j], st.act[3*h+j]
				tc := ar.Tanh(st.c[j])
				d := ar.Add(dc[j], ar.Mul(ar.Mul(dh[j], o), ar.Sub(one, ar.Mul(tc, tc))))
				dz[j] = ar.Mul(ar.Mul(d, u), ar.Mul(ig, ar.Sub(one, ig)))
				dz[h+j] = ar.Mul(ar.Mul(d, st.cprev[j]), ar.Mul(f, ar.Sub(one, f)))
				dz[2*h+j] = ar.Mul(ar.Mul(d, ig), ar.Sub(one, ar.Mul(u, u)))
				dz[3*h+j] = ar.Mul(ar.Mul(dh[j], tc), ar.Mul(o, ar.Sub(one, o)))
				dc[j] = ar.Mul(d, f)
			}
			for j := range g4 {
				dxw[st.src*g4+j] = append(dxw[st.src*g4+j], dz[j])
			}
			for q := range h {
				terms := make([]val, g4)
				for j := range g4 {
					dwhh[q*g4+j] = append(dwhh[q*g4+j], ar.Mul(st.hprev[q], dz[j]))
					terms[j] = ar.Mul(in(l.whh[q*g4+j]), dz[j])
				}
				dh[q] = ar.Sum(terms...)
			}
		}
	}
	l.dxw, l.dwhh = sums(ar, dxw), sums(ar, dwhh)
}

// sums sums each list of terms (in any order).
func sums(ar arith, terms [][]val) []val {
	out := make([]val, len(terms))
	for i, t := range terms {
		out[i] = ar.Sum(t...)
	}
	return out
}
