package cpu

import (
	"math"

	"strata/core/backend"
	"strata/core/tensor"
)

// Batch norm, loss, argmax, Adam and dropout, in Go. Column statistics are
// accumulated in float64 over fixed row chunks (see reduceRows).

// toFloat64 returns t's elements as float64.
func toFloat64(t *tensor.Tensor) []float64 {
	if s := F64(t); s != nil {
		return s
	}
	s := F32(t)
	out := make([]float64, len(s))
	for i, v := range s {
		out[i] = float64(v)
	}
	return out
}

// BatchNorm normalises columns with the batch mean and biased variance.
func (b *Backend) BatchNorm(x, gamma, beta, y, mean, invStd *tensor.Tensor, eps float64) error {
	dt, err := chk.BatchNorm(x, gamma, beta, y, mean, invStd)
	if err != nil {
		return err
	}
	if dt == tensor.Float32 {
		batchNorm(b, fl[float32](x), x.Rows(), x.Cols(), gamma, beta, y, mean, invStd, eps)
	} else {
		batchNorm(b, fl[float64](x), x.Rows(), x.Cols(), gamma, beta, y, mean, invStd, eps)
	}
	return nil
}

func batchNorm[T float](b *Backend, x []T, n, c int, gamma, beta, y, mean, invStd *tensor.Tensor, eps float64) {
	mu := sumRows(b, x, n, c)
	for j := range mu {
		mu[j] /= float64(n)
	}
	vr := b.reduceRows(int64(n), int64(c), func(lo, hi int64, p []float64) {
		for i := int(lo); i < int(hi); i++ {
			for j, v := range x[i*c : (i+1)*c] {
				d := float64(v) - mu[j]
				p[j] += d * d
			}
		}
	})
	inv := make([]float64, c)
	for j := range vr {
		inv[j] = 1 / math.Sqrt(vr[j]/float64(n)+eps)
	}
	setFloat64(mean, mu)
	setFloat64(invStd, inv)
	normalize(b, x, n, c, toFloat64(gamma), toFloat64(beta), mu, inv, fl[T](y))
}

// normalize writes y = (x-mu)·inv·gamma + beta.
func normalize[T float](b *Backend, x []T, n, c int, gamma, beta, mu, inv []float64, y []T) {
	scale := make([]float64, c)
	for j := range scale {
		scale[j] = inv[j] * gamma[j]
	}
	b.eachRow(n, c, func(lo, hi int) {
		for k := lo * c; k < hi*c; k += c {
			for j, v := range x[k : k+c] {
				y[k+j] = T((float64(v)-mu[j])*scale[j] + beta[j])
			}
		}
	})
}

// BatchNormBackward computes dx, dgamma and dbeta of BatchNorm.
func (b *Backend) BatchNormBackward(x, gamma, dy, mean, invStd, dx, dgamma, dbeta *tensor.Tensor) error {
	dt, err := chk.BatchNormBackward(x, gamma, dy, mean, invStd, dx, dgamma, dbeta)
	if err != nil {
		return err
	}
	if dt == tensor.Float32 {
		batchNormBackward(b, fl[float32](x), fl[float32](dy), fl[float32](dx), x.Rows(), x.Cols(), gamma, mean, invStd, dgamma, dbeta)
	} else {
		batchNormBackward(b, fl[float64](x), fl[float64](dy), fl[float64](dx), x.Rows(), x.Cols(), gamma, mean, invStd, dgamma, dbeta)
	}
	return nil
}

func batchNormBackward[T float](b *Backend, x, dy, dx []T, n, c int, gamma, mean, invStd, dgamma, dbeta *tensor.Tensor) {
	g, mu, inv := toFloat64(gamma), toFloat64(mean), toFloat64(invStd)
	// s[0:c] = Σ dy, s[c:2c] = Σ dy·x̂.
	s := b.reduceRows(int64(n), int64(2*c), func(lo, hi int64, p []float64) {
		for i := int(lo); i < int(hi); i++ {
			for j := 0; j < c; j++ {
				d := float64(dy[i*c+j])
				p[j] += d
				p[c+j] += d * (float64(x[i*c+j]) - mu[j]) * inv[j]
			}
		}
	})
	db, dg := s[:c], s[c:]
	setFloat64(dbeta, db)
	setFloat64(dgamma, dg)
	nf := float64(n)
	b.eachRow(n, c, func(lo, hi int) {
		for k := lo * c; k < hi*c; k += c {
			for j, v := range x[k : k+c] {
				xh := (float64(v) - mu[j]) * inv[j]
				dx[k+j] = T(g[j] * inv[j] * (float64(dy[k+j]) - db[j]/nf - xh*dg[j]/nf))
			}
		}
	})
}

// BatchNormInfer normalises with the given mean and variance.
func (b *Backend) BatchNormInfer(x, gamma, beta, mean, variance, y *tensor.Tensor, eps float64) error {
	dt, err := chk.BatchNormInfer(x, gamma, beta, mean, variance, y)
	if err != nil {
		return err
	}
	vr := toFloat64(variance)
	inv := make([]float64, len(vr))
	for j, v := range vr {
		inv[j] = 1 / math.Sqrt(v+eps)
	}
	g, be, mu := toFloat64(gamma), toFloat64(beta), toFloat64(mean)
	if dt == tensor.Float32 {
		normalize(b, fl[float32](x), x.Rows(), x.Cols(), g, be, mu, inv, fl[float32](y))
	} else {
		normalize(b, fl[float64](x), x.Rows(), x.Cols(), g, be, mu, inv, fl[float64](y))
	}
	return nil
}

// SoftmaxCrossEntropy returns the mean cross-entropy over the rows in idx
// and writes its gradient into dlogits (zero elsewhere) when set. Repeated
// rows count once per occurrence.
func (b *Backend) SoftmaxCrossEntropy(logits, labels, idx, dlogits *tensor.Tensor) (float64, error) {
	const op = "SoftmaxCrossEntropy"
	dt, err := chk.SoftmaxCrossEntropy(logits, labels, idx, dlogits)
	if err != nil {
		return 0, err
	}
	n, k := logits.Rows(), logits.Cols()
	if err := checkRange(op, "idx", idx, 0, int64(n)); err != nil {
		return 0, err
	}
	rows := toInt64(idx)
	lab := I32(labels)
	seen := make([]bool, n)
	dup := false
	for _, r := range rows {
		if l := lab[r]; l < 0 || int(l) >= k {
			return 0, errf(op, "label %d of row %d is outside [0,%d)", l, r, k)
		}
		dup = dup || seen[r]
		seen[r] = true
	}
	if dlogits != nil {
		b.Fill(dlogits, 0)
	}
	if len(rows) == 0 {
		return 0, nil
	}
	var loss []float64
	if dt == tensor.Float32 {
		loss = softmaxCE(b, fl[float32](logits), lab, rows, k, fl[float32](dlogits), dup)
	} else {
		loss = softmaxCE(b, fl[float64](logits), lab, rows, k, fl[float64](dlogits), dup)
	}
	return loss[0] / float64(len(rows)), nil
}

func toInt64(t *tensor.Tensor) []int64 {
	if s := I64(t); s != nil {
		return s
	}
	s := I32(t)
	out := make([]int64, len(s))
	for i, v := range s {
		out[i] = int64(v)
	}
	return out
}

// softmaxCE sums the per-row losses over fixed chunks of idx; gradients go
// straight to their rows, or serially when idx repeats a row.
func softmaxCE[T float](b *Backend, z []T, lab []int32, rows []int64, k int, dz []T, dup bool) []float64 {
	inv := 1 / float64(len(rows))
	be := b
	if dup {
		be = &Backend{threads: 1}
	}
	return be.reduceRows(int64(len(rows)), 1, func(lo, hi int64, p []float64) {
		for _, r := range rows[lo:hi] {
			zr := z[int(r)*k : int(r+1)*k]
			m := math.Inf(-1)
			for _, v := range zr {
				m = max(m, float64(v))
			}
			s := 0.0
			for _, v := range zr {
				s += math.Exp(float64(v) - m)
			}
			lse := m + math.Log(s)
			l := lab[r]
			p[0] += lse - float64(zr[l])
			if dz != nil {
				dr := dz[int(r)*k : int(r+1)*k]
				for j, v := range zr {
					g := math.Exp(float64(v)-lse) * inv
					if j == int(l) {
						g -= inv
					}
					dr[j] += T(g)
				}
			}
		}
	})
}

// ArgmaxRows writes the first column holding each row's maximum (-1 for a
// row with no columns).
func (b *Backend) ArgmaxRows(x, out *tensor.Tensor) error {
	dt, err := chk.ArgmaxRows(x, out)
	if err != nil {
		return err
	}
	k := x.Cols()
	o := I32(out)
	if dt == tensor.Float32 {
		argmaxRows(b, fl[float32](x), k, o)
	} else {
		argmaxRows(b, fl[float64](x), k, o)
	}
	return nil
}

func argmaxRows[T float](b *Backend, x []T, k int, out []int32) {
	b.eachRow(len(out), k, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			best := -1
			for j, v := range x[r*k : (r+1)*k] {
				if best < 0 || v > x[r*k+best] {
					best = j
				}
			}
			out[r] = int32(best)
		}
	})
}

// AdamStep updates p, m and v in place (arithmetic in float64 per element).
func (b *Backend) AdamStep(p, g, m, v *tensor.Tensor, lr, beta1, beta2, eps, wd float64, t int) error {
	dt, err := chk.AdamStep(p, g, m, v, t)
	if err != nil {
		return err
	}
	bc1 := 1 - math.Pow(beta1, float64(t))
	bc2 := 1 - math.Pow(beta2, float64(t))
	h := adamHyper{lr, beta1, beta2, eps, wd, bc1, bc2}
	if dt == tensor.Float32 {
		ps, gs, ms, vs := fl[float32](p), fl[float32](g), fl[float32](m), fl[float32](v)
		b.each(len(ps), func(lo, hi int) { adam(h, ps[lo:hi], gs[lo:hi], ms[lo:hi], vs[lo:hi]) })
	} else {
		ps, gs, ms, vs := fl[float64](p), fl[float64](g), fl[float64](m), fl[float64](v)
		b.each(len(ps), func(lo, hi int) { adam(h, ps[lo:hi], gs[lo:hi], ms[lo:hi], vs[lo:hi]) })
	}
	return nil
}

type adamHyper struct{ lr, b1, b2, eps, wd, bc1, bc2 float64 }

func adam[T float](h adamHyper, p, g, m, v []T) {
	g, m, v = g[:len(p)], m[:len(p)], v[:len(p)]
	for i := range p {
		pi := float64(p[i])
		gi := float64(g[i]) + h.wd*pi
		mi := h.b1*float64(m[i]) + (1-h.b1)*gi
		vi := h.b2*float64(v[i]) + (1-h.b2)*gi*gi
		m[i], v[i] = T(mi), T(vi)
		p[i] = T(pi - h.lr*(mi/h.bc1)/(math.Sqrt(vi/h.bc2)+h.eps))
	}
}

// DropoutMask sets element (r, c) of mask to 1/(1-p) when the stream of
// seed at index DropoutIndex(K[r], cols, c) is kept at rate p and to 0
// otherwise, K being rows' keys (r when rows is nil): the mask depends
// only on seed, the row keys and the columns.
func (b *Backend) DropoutMask(seed uint64, rows *tensor.Tensor, p float64, mask *tensor.Tensor) error {
	dt, err := chk.DropoutMask(rows, p, mask)
	if err != nil {
		return err
	}
	if dt == tensor.Float32 {
		b.dropout32(seed, rows, p, fl[float32](mask), nil, nil, mask.Cols())
	} else {
		b.dropout64(seed, rows, p, fl[float64](mask), nil, nil, mask.Cols())
	}
	return nil
}

// DropoutApply computes y = x·m in one pass, m being the mask DropoutMask
// makes for (seed, rows, p); it also stores m into mask unless mask is
// nil (a caller that needs no backward pass skips that write). x and y
// may be the same tensor. The engine uses it through an optional
// interface.
func (b *Backend) DropoutApply(seed uint64, rows *tensor.Tensor, p float64, x, mask, y *tensor.Tensor) error {
	dt, err := chk.DropoutApply(rows, p, x, mask, y)
	if err != nil {
		return err
	}
	if dt == tensor.Float32 {
		b.dropout32(seed, rows, p, fl[float32](mask), fl[float32](x), fl[float32](y), x.Cols())
	} else {
		b.dropout64(seed, rows, p, fl[float64](mask), fl[float64](x), fl[float64](y), x.Cols())
	}
	return nil
}

// dropout32 writes the mask of (seed, rows, p) over a matrix of cols
// columns into ms and x·mask into ys (each when not nil) with the C
// kernels: one flat span without keys, row by row with them.
func (b *Backend) dropout32(seed uint64, rows *tensor.Tensor, p float64, ms, xs, ys []float32, cols int) {
	scale := float32(1 / (1 - p))
	base, thr := backend.Mix64(seed), backend.DropoutThreshold(p)
	if rows == nil {
		n := max(len(ms), len(xs))
		b.each(n, func(lo, hi int) { cDropout(b.wide, base, thr, scale, lo, hi, ms, xs, ys) })
		return
	}
	keys := I64(rows)
	b.eachRow(len(keys), cols, func(lo, hi int) { cDropoutRows(b.wide, base, thr, scale, keys, cols, lo, hi, ms, xs, ys) })
}

// dropout64 is dropout32 in float64, in Go.
func (b *Backend) dropout64(seed uint64, rows *tensor.Tensor, p float64, ms, xs, ys []float64, cols int) {
	scale := 1 / (1 - p)
	base := backend.Mix64(seed)
	var keys []int64
	if rows != nil {
		keys = I64(rows)
	}
	n := max(len(ms), len(xs)) / max(cols, 1)
	b.eachRow(n, cols, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			k := uint64(r)
			if keys != nil {
				k = uint64(keys[r])
			}
			for c := range cols {
				i, m := r*cols+c, 0.0
				if uniform(base, backend.DropoutIndex(k, cols, c)) >= p {
					m = scale
				}
				if ms != nil {
					ms[i] = m
				}
				if ys != nil {
					ys[i] = xs[i] * m
				}
			}
		}
	})
}

// Uniform is the dropout stream: a splitmix64 counter hash of (seed, i) as a
// float64 in [0,1) with 53 random bits.
func Uniform(seed, i uint64) float64 { return uniform(backend.Mix64(seed), i) }

func uniform(base, i uint64) float64 {
	return float64(int64(backend.Mix64(base+(i+1)*0x9E3779B97F4A7C15)>>11)) * (1.0 / (1 << 53))
}
