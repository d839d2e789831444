package ref

import (
	"fmt"
	"math"

	"strata/core/graph"
	"strata/core/ir"
	"strata/internal/floattol"
)

// Unary is how a correct kernel computes a unary function and its
// gradient, for the bounds: Fwd gives y = f(x), Bwd dx = f'(x)·dy, as the
// op table's F and DF define them (NeedsX, NeedsY). Every ClassUnary op of
// ir.Ops needs one (TestUnaryModels).
type Unary struct {
	Fwd func(ar Arith, x Val, alpha float64) Val
	Bwd func(ar Arith, x, y, dy Val, alpha float64) Val
}

// when picks a when the (exact) input x is positive, else b.
func when(x Val, a, b func() Val) Val {
	if x.V > 0 {
		return a()
	}
	return b()
}

func zero() Val { return in(0) }

// powAlpha is x^alpha with alpha rounded to the dtype first: the rounding
// of alpha moves the result by |x^alpha·ln x|·u|alpha|.
func powAlpha(ar Arith, x Val, alpha float64) Val {
	v := ar.Pow(x, alpha)
	v.E += math.Abs(v.V*math.Log(x.V)) * ar.U * math.Abs(alpha)
	return v
}

// unaryModels are the models by ir.OpSpec.Name.
var unaryModels = map[string]Unary{
	"Identity": {
		Fwd: func(_ Arith, x Val, _ float64) Val { return x },
		Bwd: func(_ Arith, _, _, dy Val, _ float64) Val { return dy }},
	"ReLU": {
		Fwd: func(_ Arith, x Val, _ float64) Val { return when(x, func() Val { return x }, zero) },
		Bwd: func(_ Arith, x, _, dy Val, _ float64) Val { return when(x, func() Val { return dy }, zero) }},
	"LeakyReLU": {
		Fwd: func(ar Arith, x Val, a float64) Val {
			return when(x, func() Val { return x }, func() Val { return ar.Mul(ar.Param(a), x) })
		},
		Bwd: func(ar Arith, x, _, dy Val, a float64) Val {
			return when(x, func() Val { return dy }, func() Val { return ar.Mul(ar.Param(a), dy) })
		}},
	"ELU": {
		Fwd: func(ar Arith, x Val, a float64) Val {
			return when(x, func() Val { return x }, func() Val { return ar.Mul(ar.Param(a), ar.Expm1(x)) })
		},
		Bwd: func(ar Arith, x, y, dy Val, a float64) Val {
			return when(x, func() Val { return dy }, func() Val { return ar.Mul(dy, ar.Add(y, ar.Param(a))) })
		}},
	"Sigmoid": {
		Fwd: func(ar Arith, x Val, _ float64) Val { return ar.Sigmoid(x) },
		Bwd: func(ar Arith, _, y, dy Val, _ float64) Val { return ar.Mul(ar.Mul(dy, y), ar.Sub(in(1), y)) }},
	"Tanh": {
		Fwd: func(ar Arith, x Val, _ float64) Val { return ar.Tanh(x) },
		Bwd: func(ar Arith, _, y, dy Val, _ float64) Val { return ar.Mul(dy, ar.Sub(in(1), ar.Mul(y, y))) }},
	"Exp": {
		Fwd: func(ar Arith, x Val, _ float64) Val { return ar.Exp(x) },
		Bwd: func(ar Arith, _, y, dy Val, _ float64) Val { return ar.Mul(dy, y) }},
	"Neg": {
		Fwd: func(_ Arith, x Val, _ float64) Val { return floattol.Neg(x) },
		Bwd: func(_ Arith, _, _, dy Val, _ float64) Val { return floattol.Neg(dy) }},
	"Log": {
		Fwd: func(ar Arith, x Val, _ float64) Val { return ar.Log(x) },
		Bwd: func(ar Arith, x, _, dy Val, _ float64) Val { return ar.Div(dy, x) }},
	"Sqrt": {
		Fwd: func(ar Arith, x Val, _ float64) Val { return ar.Sqrt(x) },
		Bwd: func(ar Arith, _, y, dy Val, _ float64) Val { return ar.Div(ar.Mul(dy, in(0.5)), y) }},
	"Pow": {
		Fwd: func(ar Arith, x Val, a float64) Val { return powAlpha(ar, x, a) },
		Bwd: func(ar Arith, x, _, dy Val, a float64) Val {
			return ar.Mul(dy, ar.Mul(ar.Param(a), powAlpha(ar, x, a-1)))
		}},
	"Abs": {
		Fwd: func(_ Arith, x Val, _ float64) Val { return Val{V: math.Abs(x.V), E: x.E} },
		Bwd: func(_ Arith, x, _, dy Val, _ float64) Val {
			return Val{V: dy.V * sign(x.V), E: dy.E}
		}},
	"Sign": {
		Fwd: func(_ Arith, x Val, _ float64) Val { return in(sign(x.V)) },
		Bwd: func(_ Arith, _, _, _ Val, _ float64) Val { return zero() }},
	"ClampMin": {
		Fwd: func(ar Arith, x Val, a float64) Val { return floattol.Max(x, ar.Param(a)) },
		Bwd: clampBwd},
	"ClampMax": {
		Fwd: func(ar Arith, x Val, a float64) Val {
			return floattol.Neg(floattol.Max(floattol.Neg(x), floattol.Neg(ar.Param(a))))
		},
		Bwd: clampBwd},
	"Shift": {
		Fwd: func(ar Arith, x Val, a float64) Val { return ar.Add(x, ar.Param(a)) },
		Bwd: func(_ Arith, _, _, dy Val, _ float64) Val { return dy }},
	"Cos": {
		Fwd: func(ar Arith, x Val, _ float64) Val { return ar.Cos(x) },
		Bwd: func(ar Arith, x, _, dy Val, _ float64) Val { return floattol.Neg(ar.Mul(dy, ar.Sin(x))) }},
}

// clampBwd passes dy where the clamp let x through (x == y, exact inputs).
func clampBwd(_ Arith, x, y, dy Val, _ float64) Val {
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

// UnaryModel returns the model of a unary op, or an error naming it.
func UnaryModel(s ir.OpSpec) (Unary, error) {
	m, ok := unaryModels[s.Name]
	if !ok {
		return m, fmt.Errorf("unary %s has no error model in backendtest's unaryModels: add how a kernel computes it and its gradient", s.Name)
	}
	return m, nil
}

// Binary is y = a op b for the binary ops (b broadcast by index).
func Binary(ar Arith, name string, a, b []float64) ([]Val, error) {
	out := make([]Val, len(a))
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
			return nil, fmt.Errorf("binary %s has no error model in backendtest's Binary", name)
		}
	}
	return out, nil
}

// Act applies a SpMMBiasAct activation to a computed z: the
// activation's Lipschitz constant (1 for identity and ReLU, max(1, alpha)
// for ELU) times z's error, then the activation's own rounding.
func Act(ar Arith, act string, z Val, alpha float64) Val {
	switch act {
	case "ReLU":
		return floattol.Max(z, in(0))
	case "ELU":
		v := z.V
		if v <= 0 {
			v = alpha * math.Expm1(v)
		}
		e := max(1, alpha) * z.E
		return Val{V: v, E: e + (2*floattol.FuncULPs+2)*ar.U*(math.Abs(v)+e)}
	}
	return z
}

// BatchNorm is y = (x − μ)·invStd·γ + β with the batch statistics of
// x [n,k] (two passes: the mean, then the mean square deviation), and the
// statistics themselves.
func BatchNorm(ar Arith, x, gamma, beta []float64, n, k int, eps float64) (y, mean, inv []Val) {
	y, mean, inv = make([]Val, n*k), make([]Val, k), make([]Val, k)
	rn := ar.Param(1 / float64(n))
	for j := range k {
		col := make([]Val, n)
		for i := range n {
			col[i] = in(x[i*k+j])
		}
		mean[j] = ar.Mul(ar.Sum(col...), rn)
		sq := make([]Val, n)
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

// BatchNormBackward is dbeta = Σ dy, dgamma = Σ dy·x̂ and
// dx = γ·invStd·(dy − dbeta/n − x̂·dgamma/n), x̂ = (x − μ)·invStd, with
// the statistics given.
func BatchNormBackward(ar Arith, x, gamma, dy, mu, is []float64, n, k int) (dx, dg, db []Val) {
	dx, dg, db = make([]Val, n*k), make([]Val, k), make([]Val, k)
	rn := ar.Param(1 / float64(n))
	for j := range k {
		xh := make([]Val, n)
		dys, prods := make([]Val, n), make([]Val, n)
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

// BatchNormInfer is y = (x − mean)/√(var + eps)·γ + β.
func BatchNormInfer(ar Arith, x, gamma, beta, mean, vr []float64, n, k int, eps float64) []Val {
	y := make([]Val, n*k)
	for j := range k {
		inv := ar.Div(in(1), ar.Sqrt(ar.Add(in(vr[j]), ar.Param(eps))))
		for i := range n {
			y[i*k+j] = ar.Add(ar.Mul(ar.Mul(ar.Sub(in(x[i*k+j]), in(mean[j])), inv), in(gamma[j])), in(beta[j]))
		}
	}
	return y
}

// SoftmaxCE is the mean over idx (a repeated row counts each time) of
// lse(z_r) − z_r[label], lse = m + ln Σ exp(z − m), and its gradient
// (softmax − onehot)/|idx| accumulated per occurrence (zero elsewhere).
func SoftmaxCE(ar Arith, z []float64, labels, idx []int, k int) (loss Val, dz []Val) {
	rm := ar.Param(1 / float64(len(idx)))
	grads := make([][]Val, len(z))
	losses := make([]Val, len(idx))
	for t, r := range idx {
		row := z[r*k:][:k]
		m := math.Inf(-1)
		for _, v := range row {
			m = max(m, v)
		}
		ex := make([]Val, k)
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
	dz = make([]Val, len(z))
	for i := range dz {
		dz[i] = ar.Sum(grads[i]...)
	}
	return ar.Mul(ar.Sum(losses...), rm), dz
}

// Adam is p, m and v of AdamStep's reference, carried over steps.
type Adam struct{ P, M, V []Val }

// NewAdam starts from parameters p and zero moments.
func NewAdam(p []float64) *Adam {
	return &Adam{floattol.Ins(p), Consts(len(p), 0), Consts(len(p), 0)}
}

// Step applies one AdamStep: g += wd·p; m = b1·m + (1−b1)·g;
// v = b2·v + (1−b2)·g²; p −= lr·(m/bc1)/(√(v/bc2) + eps), the bias
// corrections bc = 1 − b^t computed in float64 and passed as Params.
func (s *Adam) Step(ar Arith, g []float64, lr, b1, b2, eps, wd float64, t int) {
	bc1, bc2 := ar.Param(1-math.Pow(b1, float64(t))), ar.Param(1-math.Pow(b2, float64(t)))
	for i := range s.P {
		gi := ar.Add(in(g[i]), ar.Mul(ar.Param(wd), s.P[i]))
		if wd == 0 {
			gi = in(g[i])
		}
		s.M[i] = ar.Add(ar.Mul(ar.Param(b1), s.M[i]), ar.Mul(ar.Param(1-b1), gi))
		s.V[i] = ar.Add(ar.Mul(ar.Param(b2), s.V[i]), ar.Mul(ar.Param(1-b2), ar.Mul(gi, gi)))
		den := ar.Add(ar.Sqrt(ar.Div(s.V[i], bc2)), ar.Param(eps))
		s.P[i] = ar.Sub(s.P[i], ar.Mul(ar.Param(lr), ar.Div(ar.Div(s.M[i], bc1), den)))
	}
}

// LSTM is LSTMAggregate and its backward on the host with bounds: per
// row, its sources in CSR order through the cell from a zero state (gates
// i, f, g, o), then backpropagation through time. Each backend's backward
// reads its own saved forward state, which the bounds carry.
type LSTM struct {
	ar        Arith
	g         *graph.CSR
	h         int
	xw        []Val
	whh, bias []float64
	steps     [][]lstmStep // per row
	Out       []Val        // [R,H], after Forward
	DXW, DWHH []Val        // [S,4H] and [H,4H], after Backward
}

// NewLSTM runs the forward of an LSTM of hidden size h over g, xw [S,4H]
// being x·W_ih (inputs, or computed values with their bounds).
func NewLSTM(ar Arith, g *graph.CSR, h int, xw []Val, whh, bias []float64) *LSTM {
	l := &LSTM{ar: ar, g: g, h: h, xw: xw, whh: whh, bias: bias}
	l.forward()
	return l
}

type lstmStep struct {
	src                  int
	act, cprev, c, hprev []Val
}

// forward fills Out and the saved steps.
func (l *LSTM) forward() {
	ar, h, g4 := l.ar, l.h, 4*l.h
	l.Out, l.steps = make([]Val, l.g.NumRows*h), make([][]lstmStep, l.g.NumRows)
	for i := range l.Out {
		l.Out[i] = in(0)
	}
	for i := range l.g.NumRows {
		hs, cs := Consts(h, 0), Consts(h, 0)
		for k := l.g.Indptr[i]; k < l.g.Indptr[i+1]; k++ {
			src := int(l.g.Col(k))
			st := lstmStep{src: src, act: make([]Val, g4), cprev: cs, hprev: hs, c: make([]Val, h)}
			for j := range g4 {
				terms := []Val{l.xw[src*g4+j], in(l.bias[j])}
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
			hn := make([]Val, h)
			for j := range h {
				ig, f, u, o := st.act[j], st.act[h+j], st.act[2*h+j], st.act[3*h+j]
				st.c[j] = ar.Add(ar.Mul(f, cs[j]), ar.Mul(ig, u))
				hn[j] = ar.Mul(o, ar.Tanh(st.c[j]))
			}
			l.steps[i] = append(l.steps[i], st)
			hs, cs = hn, st.c
		}
		copy(l.Out[i*h:], hs)
	}
}

// Consts returns n exact values v.
func Consts(n int, v float64) []Val {
	out := make([]Val, n)
	for i := range out {
		out[i] = in(v)
	}
	return out
}

// Backward fills DXW and DWHH for the output gradient dout.
func (l *LSTM) Backward(dout []float64) {
	ar, h, g4 := l.ar, l.h, 4*l.h
	dxw := make([][]Val, l.g.NumCols*g4)
	dwhh := make([][]Val, h*g4)
	one := in(1)
	for i, steps := range l.steps {
		dh, dc := floattol.Ins(dout[i*h:][:h]), Consts(h, 0)
		for s := len(steps) - 1; s >= 0; s-- {
			st := steps[s]
			dz := make([]Val, g4)
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
				terms := make([]Val, g4)
				for j := range g4 {
					dwhh[q*g4+j] = append(dwhh[q*g4+j], ar.Mul(st.hprev[q], dz[j]))
					terms[j] = ar.Mul(in(l.whh[q*g4+j]), dz[j])
				}
				dh[q] = ar.Sum(terms...)
			}
		}
	}
	l.DXW, l.DWHH = sums(ar, dxw), sums(ar, dwhh)
}

// sums sums each list of terms (in any order).
func sums(ar Arith, terms [][]Val) []Val {
	out := make([]Val, len(terms))
	for i, t := range terms {
		out[i] = ar.Sum(t...)
	}
	return out
}

// TargetLoss is the mean over idx (a repeated row counts each time) and
// the k columns of the element loss: with mse (x−y)², otherwise the
// sigmoid binary cross-entropy max(x,0) − x·y + ln(1+e^−|x|); and its
// gradient, 2(x−y) or σ(x) − y, over |idx|·k, accumulated per occurrence
// (zero elsewhere).
func TargetLoss(ar Arith, mse bool, x, y []float64, idx []int, k int) (loss Val, dx []Val) {
	rm := ar.Param(1 / float64(len(idx)*k))
	grads := make([][]Val, len(x))
	losses := make([]Val, 0, len(idx)*k)
	for _, r := range idx {
		for j := r * k; j < (r+1)*k; j++ {
			xv, yv := in(x[j]), in(y[j])
			var l, g Val
			if mse {
				d := ar.Sub(xv, yv)
				l, g = ar.Mul(d, d), ar.Mul(in(2), d)
			} else {
				soft := ar.Log(ar.Add(in(1), ar.Exp(in(-math.Abs(x[j])))))
				l = ar.Add(ar.Sub(in(max(x[j], 0)), ar.Mul(xv, yv)), soft)
				g = ar.Sub(ar.Sigmoid(xv), yv)
			}
			losses = append(losses, l)
			grads[j] = append(grads[j], ar.Mul(g, rm))
		}
	}
	dx = make([]Val, len(x))
	for i := range dx {
		dx[i] = ar.Sum(grads[i]...)
	}
	return ar.Mul(ar.Sum(losses...), rm), dx
}
