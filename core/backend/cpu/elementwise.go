package cpu

import (
	"math"

	"strata/core/backend"
	"strata/core/tensor"
)

// Elementwise ops run in Go, over chunks of at least elemGrain elements.

var elemGrain = 1 << 16

type float interface{ float32 | float64 }

// fl returns the float storage of t as []T (T must match t's dtype).
func fl[T float](t *tensor.Tensor) []T {
	if t == nil {
		return nil
	}
	bf := t.Buffer().(*buffer)
	var z T
	if _, ok := any(z).(float32); ok {
		return any(elems(bf.f32, t)).([]T)
	}
	return any(elems(bf.f64, t)).([]T)
}

// each runs fn over chunks of [0, n) in parallel when n is large.
func (b *Backend) each(n int, fn func(lo, hi int)) {
	chunks := max(1, min(8*b.threads, n/elemGrain))
	b.parallel(nil, evenBounds(int64(n), int64(chunks)), func(lo, hi int64) { fn(int(lo), int(hi)) })
}

// eachRow runs fn over chunks of the rows of an n×c matrix.
func (b *Backend) eachRow(n, c int, fn func(lo, hi int)) {
	chunks := max(1, min(8*b.threads, n*c/elemGrain, n))
	b.parallel(nil, evenBounds(int64(n), int64(chunks)), func(lo, hi int64) { fn(int(lo), int(hi)) })
}

// Apply computes y = f(x) elementwise; x and y may be the same tensor.
func (b *Backend) Apply(f backend.Unary, alpha float64, x, y *tensor.Tensor) error {
	dt, err := chk.Apply(f, x, y)
	if err != nil {
		return err
	}
	if dt == tensor.Float32 {
		xs, ys := fl[float32](x), fl[float32](y)
		switch f {
		case backend.ReLU:
			b.each(len(xs), func(lo, hi int) { cReLU(xs[lo:hi], ys[lo:hi]) })
			return nil
		case backend.LeakyReLU:
			b.each(len(xs), func(lo, hi int) { cLeaky(float32(alpha), xs[lo:hi], ys[lo:hi]) })
			return nil
		}
		b.each(len(xs), func(lo, hi int) { apply(f, float32(alpha), xs[lo:hi], ys[lo:hi]) })
	} else {
		xs, ys := fl[float64](x), fl[float64](y)
		b.each(len(xs), func(lo, hi int) { apply(f, alpha, xs[lo:hi], ys[lo:hi]) })
	}
	return nil
}

func apply[T float](f backend.Unary, alpha T, x, y []T) {
	y = y[:len(x)]
	switch f {
	case backend.Identity:
		copy(y, x)
	case backend.ReLU:
		for i, v := range x {
			if v > 0 {
				y[i] = v
			} else {
				y[i] = 0
			}
		}
	case backend.LeakyReLU:
		for i, v := range x {
			if v > 0 {
				y[i] = v
			} else {
				y[i] = alpha * v
			}
		}
	case backend.ELU:
		for i, v := range x {
			if v > 0 {
				y[i] = v
			} else {
				y[i] = T(float64(alpha) * math.Expm1(float64(v)))
			}
		}
	case backend.Sigmoid:
		for i, v := range x {
			y[i] = T(sigmoid(float64(v)))
		}
	case backend.Tanh:
		for i, v := range x {
			y[i] = T(math.Tanh(float64(v)))
		}
	case backend.Exp:
		for i, v := range x {
			y[i] = T(math.Exp(float64(v)))
		}
	case backend.Neg:
		for i, v := range x {
			y[i] = -v
		}
	case backend.Log:
		for i, v := range x {
			y[i] = T(math.Log(float64(v)))
		}
	case backend.Sqrt:
		for i, v := range x {
			y[i] = T(math.Sqrt(float64(v)))
		}
	case backend.Pow:
		for i, v := range x {
			y[i] = T(math.Pow(float64(v), float64(alpha)))
		}
	case backend.Abs:
		for i, v := range x {
			y[i] = T(math.Abs(float64(v)))
		}
	case backend.Sign:
		for i, v := range x {
			y[i] = signOf(v)
		}
	case backend.ClampMin:
		for i, v := range x {
			y[i] = max(v, alpha)
		}
	case backend.ClampMax:
		for i, v := range x {
			y[i] = min(v, alpha)
		}
	case backend.Cos:
		for i, v := range x {
			y[i] = T(math.Cos(float64(v)))
		}
	case backend.Shift:
		for i, v := range x {
			y[i] = v + alpha
		}
	}
}

func signOf[T float](v T) T {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

func sigmoid(v float64) float64 {
	if v >= 0 {
		return 1 / (1 + math.Exp(-v))
	}
	e := math.Exp(v)
	return e / (1 + e)
}

// ApplyBackward computes dx = f'(x)·dy from x, y = f(x) and dy. Only the
// operands f needs must be set (ir.OpSpec's NeedsX and NeedsY).
func (b *Backend) ApplyBackward(f backend.Unary, alpha float64, x, y, dy, dx *tensor.Tensor) error {
	dt, x, y, err := chk.ApplyBackward(f, x, y, dy, dx)
	if err != nil {
		return err
	}
	if dt == tensor.Float32 {
		xs, ys, gs, ds := fl[float32](x), fl[float32](y), fl[float32](dy), fl[float32](dx)
		switch f {
		case backend.ReLU:
			b.each(len(gs), func(lo, hi int) { cReLUBwd(xs[lo:hi], gs[lo:hi], ds[lo:hi]) })
			return nil
		case backend.LeakyReLU, backend.ELU:
			elu := f == backend.ELU
			b.each(len(gs), func(lo, hi int) {
				cActBwd(elu, float32(alpha), xs[lo:hi], part(ys, lo, hi), gs[lo:hi], ds[lo:hi])
			})
			return nil
		}
		b.each(len(gs), func(lo, hi int) {
			applyBackward(f, float32(alpha), part(xs, lo, hi), part(ys, lo, hi), gs[lo:hi], ds[lo:hi])
		})
	} else {
		xs, ys, gs, ds := fl[float64](x), fl[float64](y), fl[float64](dy), fl[float64](dx)
		b.each(len(gs), func(lo, hi int) { applyBackward(f, alpha, part(xs, lo, hi), part(ys, lo, hi), gs[lo:hi], ds[lo:hi]) })
	}
	return nil
}

func part[T any](s []T, lo, hi int) []T {
	if s == nil {
		return nil
	}
	return s[lo:hi]
}

func applyBackward[T float](f backend.Unary, alpha T, x, y, dy, dx []T) {
	dx = dx[:len(dy)]
	switch f {
	case backend.Identity:
		copy(dx, dy)
	case backend.ReLU:
		for i, g := range dy {
			if x[i] > 0 {
				dx[i] = g
			} else {
				dx[i] = 0
			}
		}
	case backend.LeakyReLU:
		for i, g := range dy {
			if x[i] > 0 {
				dx[i] = g
			} else {
				dx[i] = alpha * g
			}
		}
	case backend.ELU:
		for i, g := range dy {
			if x[i] > 0 {
				dx[i] = g
			} else {
				dx[i] = g * (y[i] + alpha)
			}
		}
	case backend.Sigmoid:
		for i, g := range dy {
			dx[i] = g * y[i] * (1 - y[i])
		}
	case backend.Tanh:
		for i, g := range dy {
			dx[i] = g * (1 - y[i]*y[i])
		}
	case backend.Exp:
		for i, g := range dy {
			dx[i] = g * y[i]
		}
	case backend.Neg:
		for i, g := range dy {
			dx[i] = -g
		}
	case backend.Log:
		for i, g := range dy {
			dx[i] = g / x[i]
		}
	case backend.Sqrt:
		for i, g := range dy {
			dx[i] = g * 0.5 / y[i]
		}
	case backend.Pow:
		for i, g := range dy {
			dx[i] = g * T(float64(alpha)*math.Pow(float64(x[i]), float64(alpha)-1))
		}
	case backend.Abs:
		for i, g := range dy {
			dx[i] = g * signOf(x[i])
		}
	case backend.Sign:
		clear(dx)
	case backend.ClampMin, backend.ClampMax:
		for i, g := range dy {
			if x[i] == y[i] {
				dx[i] = g
			} else {
				dx[i] = 0
			}
		}
	case backend.Cos:
		for i, g := range dy {
			dx[i] = -g * T(math.Sin(float64(x[i])))
		}
	case backend.Shift:
		copy(dx, dy)
	}
}

// Elementwise computes y = a op b; b is a's shape, a row vector of a.Cols()
// elements applied to every row, or a single element.
func (b *Backend) Elementwise(op backend.Binary, a, bt, y *tensor.Tensor) error {
	dt, cols, err := chk.Elementwise(op, a, bt, y)
	if err != nil {
		return err
	}
	if dt == tensor.Float32 {
		elementwise(b, op, fl[float32](a), fl[float32](bt), fl[float32](y), cols)
	} else {
		elementwise(b, op, fl[float64](a), fl[float64](bt), fl[float64](y), cols)
	}
	return nil
}

// elementwise applies op with b broadcast over rows of cols elements (cols 0:
// b is a scalar; cols len(a): no broadcast).
func elementwise[T float](be *Backend, op backend.Binary, a, b, y []T, cols int) {
	switch {
	case cols == 0:
		s := b[0]
		be.each(len(a), func(lo, hi int) { binScalar(op, a[lo:hi], s, y[lo:hi]) })
	case cols == len(a):
		if a32, ok := any(a).([]float32); ok && op == backend.Mul {
			b32, y32 := any(b).([]float32), any(y).([]float32)
			be.each(len(a), func(lo, hi int) { cMul(a32[lo:hi], b32[lo:hi], y32[lo:hi]) })
			return
		}
		be.each(len(a), func(lo, hi int) { binary(op, a[lo:hi], b[lo:hi], y[lo:hi]) })
	default:
		if a32, ok := any(a).([]float32); ok && (op == backend.Add || op == backend.Mul) {
			b32, y32 := any(b).([]float32), any(y).([]float32)
			be.eachRow(len(a)/cols, cols, func(lo, hi int) {
				cRowsOp(op == backend.Mul, a32[lo*cols:hi*cols], b32, y32[lo*cols:hi*cols], cols)
			})
			return
		}
		be.eachRow(len(a)/cols, cols, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				binary(op, a[r*cols:(r+1)*cols], b, y[r*cols:(r+1)*cols])
			}
		})
	}
}

func binary[T float](op backend.Binary, a, b, y []T) {
	b, y = b[:len(a)], y[:len(a)]
	switch op {
	case backend.Add:
		for i := range a {
			y[i] = a[i] + b[i]
		}
	case backend.Sub:
		for i := range a {
			y[i] = a[i] - b[i]
		}
	case backend.Mul:
		for i := range a {
			y[i] = a[i] * b[i]
		}
	case backend.Div:
		for i := range a {
			y[i] = a[i] / b[i]
		}
	case backend.Minimum:
		for i := range a {
			y[i] = min(a[i], b[i])
		}
	case backend.Maximum:
		for i := range a {
			y[i] = max(a[i], b[i])
		}
	case backend.Equal:
		for i := range a {
			y[i] = eq(a[i], b[i])
		}
	}
}

func eq[T float](a, b T) T {
	if a == b {
		return 1
	}
	return 0
}

func binScalar[T float](op backend.Binary, a []T, s T, y []T) {
	y = y[:len(a)]
	switch op {
	case backend.Add:
		for i := range a {
			y[i] = a[i] + s
		}
	case backend.Sub:
		for i := range a {
			y[i] = a[i] - s
		}
	case backend.Mul:
		for i := range a {
			y[i] = a[i] * s
		}
	case backend.Div:
		for i := range a {
			y[i] = a[i] / s
		}
	case backend.Minimum:
		for i := range a {
			y[i] = min(a[i], s)
		}
	case backend.Maximum:
		for i := range a {
			y[i] = max(a[i], s)
		}
	case backend.Equal:
		for i := range a {
			y[i] = eq(a[i], s)
		}
	}
}

// Axpby computes y = alpha·x + beta·y; with beta 0, y is not read.
func (b *Backend) Axpby(alpha float64, x *tensor.Tensor, beta float64, y *tensor.Tensor) error {
	dt, err := chk.Axpby(x, y)
	if err != nil {
		return err
	}
	if dt == tensor.Float32 {
		xs, ys := fl[float32](x), fl[float32](y)
		b.each(len(xs), func(lo, hi int) { axpby(float32(alpha), xs[lo:hi], float32(beta), ys[lo:hi]) })
	} else {
		xs, ys := fl[float64](x), fl[float64](y)
		b.each(len(xs), func(lo, hi int) { axpby(alpha, xs[lo:hi], beta, ys[lo:hi]) })
	}
	return nil
}

func axpby[T float](alpha T, x []T, beta T, y []T) {
	y = y[:len(x)]
	if beta == 0 && alpha == 1 {
		copy(y, x) // 1·v is v, bit for bit
		return
	}
	if beta == 0 {
		for i, v := range x {
			y[i] = alpha * v
		}
		return
	}
	for i, v := range x {
		y[i] = alpha*v + beta*y[i]
	}
}

// Fill sets every element to v (converted to t's dtype).
func (b *Backend) Fill(t *tensor.Tensor, v float64) error {
	if err := chk.Fill(t); err != nil {
		return err
	}
	bf := t.Buffer().(*buffer)
	n := t.Numel()
	b.each(n, func(lo, hi int) {
		fill(part(bf.f32, lo, hi), float32(v))
		fill(part(bf.f64, lo, hi), v)
		fill(part(bf.i32, lo, hi), int32(v))
		fill(part(bf.i64, lo, hi), int64(v))
	})
	return nil
}

func fill[T any](s []T, v T) {
	for i := range s {
		s[i] = v
	}
}

// SumRows computes y[c] = Σ_i x[i,c], accumulating in float64 over fixed
// row chunks.
func (b *Backend) SumRows(x, y *tensor.Tensor) error {
	dt, err := chk.SumRows(x, y)
	if err != nil {
		return err
	}
	n, c := x.Rows(), x.Cols()
	var s []float64
	if dt == tensor.Float32 {
		s = sumRows(b, fl[float32](x), n, c)
	} else {
		s = sumRows(b, fl[float64](x), n, c)
	}
	setFloat64(y, s)
	return nil
}

func sumRows[T float](b *Backend, x []T, n, c int) []float64 {
	return b.reduceRows(int64(n), int64(c), func(lo, hi int64, p []float64) {
		for i := int(lo); i < int(hi); i++ {
			for j, v := range x[i*c : (i+1)*c] {
				p[j] += float64(v)
			}
		}
	})
}
