package argcheck

import (
	"fmt"
	"strings"

	"strata/core/backend"
	"strata/core/ir"
	"strata/core/tensor"
)

// Checker checks every operand of a backend's ops: that the tensors and
// adjacencies are the backend's own and alive (through Live and Graph,
// which only the backend can tell), then the contract of the op. Each op
// method returns what the kernel needs (dtype, sizes, heads, the typed
// adjacency), so a backend's method is one Checker call, then its kernel.
// Errors carry the backend's name: "cpu: SpMM: x has 10 rows, ...".
// G is the backend's adjacency type.
type Checker[G backend.Adj] struct {
	// Name prefixes every error the Checker makes ("cpu").
	Name string
	// Live returns nil when t is a live tensor of the backend, else the
	// (prefixed) error for operand name of op.
	Live func(op, name string, t *tensor.Tensor) error
	// Graph returns a as the backend's live adjacency, else the
	// (prefixed) error.
	Graph func(op string, a backend.Adj) (G, error)
}

// Wrap prefixes an argcheck error with the backend's name.
func (c *Checker[G]) Wrap(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", c.Name, err)
}

// Errf is an op's error with the backend's name: "cpu: op: ...".
func (c *Checker[G]) Errf(op, format string, args ...any) error {
	return c.Wrap(errf(op, format, args...))
}

// Lives checks that every tensor is a live tensor of the backend; names
// lists them, space-separated.
func (c *Checker[G]) Lives(op, names string, ts ...*tensor.Tensor) error {
	for i, t := range ts {
		if err := c.Live(op, field(names, i), t); err != nil {
			return err
		}
	}
	return nil
}

// Floats checks that every tensor is live and that all share one float
// dtype, which it returns. Tiers may differ.
func (c *Checker[G]) Floats(op, names string, ts ...*tensor.Tensor) (tensor.DType, error) {
	if err := c.Lives(op, names, ts...); err != nil {
		return 0, err
	}
	dt, err := Floats(op, names, ts...)
	return dt, c.Wrap(err)
}

// field returns the i-th space-separated word of names, without
// allocating.
func field(names string, i int) string {
	for {
		names = strings.TrimLeft(names, " ")
		j := strings.IndexByte(names, ' ')
		if j < 0 {
			j = len(names)
		}
		if i == 0 {
			return names[:j]
		}
		names, i = names[j:], i-1
	}
}

// ---- dense ----

// GEMM checks c = op(a)·op(b) and returns the dtype, m×n and k.
func (c *Checker[G]) GEMM(transA, transB bool, a, b, cm *tensor.Tensor) (dt tensor.DType, m, n, k int, err error) {
	if dt, err = c.Floats("GEMM", "a b c", a, b, cm); err != nil {
		return 0, 0, 0, 0, err
	}
	m, n, k, err = GEMM(transA, transB, a, b, cm)
	return dt, m, n, k, c.Wrap(err)
}

// Apply checks y = f(x): a known f, and y with x's elements.
func (c *Checker[G]) Apply(f backend.Unary, x, y *tensor.Tensor) (tensor.DType, error) {
	const op = "Apply"
	if f > backend.LastUnary {
		return 0, c.Errf(op, "unknown function %d", f)
	}
	dt, err := c.Floats(op, "x y", x, y)
	if err != nil {
		return 0, err
	}
	return dt, c.Wrap(Numel(op, "y", y, x.Numel()))
}

// ApplyBackward checks dx = f'(x)·dy. Only the operands f needs are
// checked, and returned: x and/or y as the op table says (ir.OpSpec's
// NeedsX, NeedsY); the other comes back nil.
func (c *Checker[G]) ApplyBackward(f backend.Unary, x, y, dy, dx *tensor.Tensor) (dt tensor.DType, xo, yo *tensor.Tensor, err error) {
	const op = "ApplyBackward"
	if f > backend.LastUnary {
		return 0, nil, nil, c.Errf(op, "unknown function %d", f)
	}
	if dt, err = c.Floats(op, "dy dx", dy, dx); err != nil {
		return 0, nil, nil, err
	}
	n := dy.Numel()
	if err := Numel(op, "dx", dx, n); err != nil {
		return 0, nil, nil, c.Wrap(err)
	}
	spec := ir.UnarySpec(uint8(f))
	if spec.NeedsX {
		if err := c.like(op, "dy x", dy, x, n); err != nil {
			return 0, nil, nil, err
		}
		xo = x
	}
	if spec.NeedsY {
		if err := c.like(op, "dy y", dy, y, n); err != nil {
			return 0, nil, nil, err
		}
		yo = y
	}
	return dt, xo, yo, nil
}

// like checks that t (the second of names) is live, of ref's dtype and
// holds n elements.
func (c *Checker[G]) like(op, names string, ref, t *tensor.Tensor, n int) error {
	if _, err := c.Floats(op, names, ref, t); err != nil {
		return err
	}
	return c.Wrap(Numel(op, field(names, 1), t, n))
}

// Elementwise checks y = a op b and returns the period of b (see
// Broadcast).
func (c *Checker[G]) Elementwise(o backend.Binary, a, b, y *tensor.Tensor) (dt tensor.DType, cols int, err error) {
	const op = "Elementwise"
	if o > backend.LastBinary {
		return 0, 0, c.Errf(op, "unknown operator %d", o)
	}
	if dt, err = c.Floats(op, "a b y", a, b, y); err != nil {
		return 0, 0, err
	}
	if err := Dims(op, "y", y, a.Rows(), a.Cols()); err != nil {
		return 0, 0, c.Wrap(err)
	}
	cols, err = Broadcast(op, a, b)
	return dt, cols, c.Wrap(err)
}

// Axpby checks y = alpha·x + beta·y.
func (c *Checker[G]) Axpby(x, y *tensor.Tensor) (tensor.DType, error) {
	const op = "Axpby"
	dt, err := c.Floats(op, "x y", x, y)
	if err != nil {
		return 0, err
	}
	return dt, c.Wrap(Numel(op, "y", y, x.Numel()))
}

// Fill checks that t is live (any dtype).
func (c *Checker[G]) Fill(t *tensor.Tensor) error { return c.Live("Fill", "t", t) }

// SumRows checks y [x.Cols()].
func (c *Checker[G]) SumRows(x, y *tensor.Tensor) (tensor.DType, error) {
	const op = "SumRows"
	dt, err := c.Floats(op, "x y", x, y)
	if err != nil {
		return 0, err
	}
	return dt, c.Wrap(Numel(op, "y", y, x.Cols()))
}

// CopyCols checks a copy of n columns between live tensors of one dtype.
func (c *Checker[G]) CopyCols(dst *tensor.Tensor, dstOff int, src *tensor.Tensor, srcOff, n int) error {
	if err := c.Lives("CopyCols", "dst src", dst, src); err != nil {
		return err
	}
	return c.Wrap(CopyCols(dst, dstOff, src, srcOff, n))
}

// Copy checks live dst and src of one dtype and element count.
func (c *Checker[G]) Copy(dst, src *tensor.Tensor) error {
	const op = "Copy"
	if err := c.Lives(op, "dst src", dst, src); err != nil {
		return err
	}
	if dst.DType() != src.DType() || dst.Numel() != src.Numel() {
		return c.Errf(op, "dst %v and src %v differ in dtype or size", dst, src)
	}
	return nil
}

// HeadDot checks x [N,H·C], a [H,C] and y [N,H]; it returns H and C.
func (c *Checker[G]) HeadDot(x, a, y *tensor.Tensor) (dt tensor.DType, h, hc int, err error) {
	const op = "HeadDot"
	if dt, err = c.Floats(op, "x a y", x, a, y); err != nil {
		return 0, 0, 0, err
	}
	if h, hc, err = Heads(op, x, a); err != nil {
		return 0, 0, 0, c.Wrap(err)
	}
	return dt, h, hc, c.Wrap(Dims(op, "y", y, x.Rows(), h))
}

// HeadDotBackward checks dy [N,H] and, when set, dx [N,H·C] and da [H,C];
// it returns H and C.
func (c *Checker[G]) HeadDotBackward(x, a, dy, dx, da *tensor.Tensor) (dt tensor.DType, h, hc int, err error) {
	const op = "HeadDotBackward"
	if dt, err = c.Floats(op, "x a dy", x, a, dy); err != nil {
		return 0, 0, 0, err
	}
	if h, hc, err = Heads(op, x, a); err != nil {
		return 0, 0, 0, c.Wrap(err)
	}
	n := x.Rows()
	if err := Dims(op, "dy", dy, n, h); err != nil {
		return 0, 0, 0, c.Wrap(err)
	}
	if dx != nil {
		if err := c.shaped(op, "x dx", x, dx, n, h*hc); err != nil {
			return 0, 0, 0, err
		}
	}
	if da != nil {
		if err := c.shaped(op, "x da", x, da, h, hc); err != nil {
			return 0, 0, 0, err
		}
	}
	return dt, h, hc, nil
}

// shaped checks that t (the second of names) is live, of ref's dtype and
// rows×cols.
func (c *Checker[G]) shaped(op, names string, ref, t *tensor.Tensor, rows, cols int) error {
	if _, err := c.Floats(op, names, ref, t); err != nil {
		return err
	}
	return c.Wrap(Dims(op, field(names, 1), t, rows, cols))
}

// ---- nn ----

// probability checks a dropout probability.
func (c *Checker[G]) probability(op string, p float64) error {
	if !(p >= 0 && p <= 1) {
		return c.Errf(op, "probability %v outside [0,1]", p)
	}
	return nil
}

// DropoutMask checks a float mask, its row keys (DropoutRows) and p in
// [0,1].
func (c *Checker[G]) DropoutMask(rows *tensor.Tensor, p float64, mask *tensor.Tensor) (tensor.DType, error) {
	const op = "DropoutMask"
	dt, err := c.Floats(op, "mask", mask)
	if err != nil {
		return 0, err
	}
	if err := c.DropoutRows(op, rows, mask); err != nil {
		return 0, err
	}
	return dt, c.probability(op, p)
}

// DropoutRows checks the row keys of a dropout over x: nil, or a live
// Int64 tensor with one key per row of x.
func (c *Checker[G]) DropoutRows(op string, rows, x *tensor.Tensor) error {
	if rows == nil {
		return nil
	}
	if err := c.Live(op, "rows", rows); err != nil {
		return err
	}
	if rows.DType() != tensor.Int64 {
		return c.Errf(op, "rows is %v, want int64 row keys", rows.DType())
	}
	return c.Wrap(Numel(op, "rows", rows, x.Rows()))
}

// DropoutApply checks y and mask (when set) like x, x's row keys
// (DropoutRows) and p in [0,1].
func (c *Checker[G]) DropoutApply(rows *tensor.Tensor, p float64, x, mask, y *tensor.Tensor) (dt tensor.DType, err error) {
	const op = "DropoutApply"
	if mask == nil {
		dt, err = c.Floats(op, "x y", x, y)
	} else {
		dt, err = c.Floats(op, "x y mask", x, y, mask)
	}
	if err != nil {
		return 0, err
	}
	if err := Numel(op, "y", y, x.Numel()); err != nil {
		return 0, c.Wrap(err)
	}
	if mask != nil {
		if err := Numel(op, "mask", mask, x.Numel()); err != nil {
			return 0, c.Wrap(err)
		}
	}
	if err := c.DropoutRows(op, rows, x); err != nil {
		return 0, err
	}
	return dt, c.probability(op, p)
}

// BatchNorm checks x [N,C] with N > 0, y like x and the vectors [C].
func (c *Checker[G]) BatchNorm(x, gamma, beta, y, mean, invStd *tensor.Tensor) (tensor.DType, error) {
	const op = "BatchNorm"
	dt, err := c.Floats(op, "x gamma beta mean invStd y", x, gamma, beta, mean, invStd, y)
	if err != nil {
		return 0, err
	}
	if err := ColumnVectors(op, "gamma beta mean invStd", x, y, gamma, beta, mean, invStd); err != nil {
		return 0, c.Wrap(err)
	}
	return dt, c.rows(op, x)
}

// rows checks that x has rows (batch statistics need one).
func (c *Checker[G]) rows(op string, x *tensor.Tensor) error {
	if x.Rows() == 0 {
		return c.Errf(op, "x has no rows")
	}
	return nil
}

// BatchNormBackward checks x [N,C] with N > 0, dy and dx like x and the
// vectors [C].
func (c *Checker[G]) BatchNormBackward(x, gamma, dy, mean, invStd, dx, dgamma, dbeta *tensor.Tensor) (tensor.DType, error) {
	const op = "BatchNormBackward"
	dt, err := c.Floats(op, "x gamma mean invStd dgamma dbeta", x, gamma, mean, invStd, dgamma, dbeta)
	if err != nil {
		return 0, err
	}
	if err := ColumnVectors(op, "gamma mean invStd dgamma dbeta", x, nil, gamma, mean, invStd, dgamma, dbeta); err != nil {
		return 0, c.Wrap(err)
	}
	if err := c.shaped(op, "x dy", x, dy, x.Rows(), x.Cols()); err != nil {
		return 0, err
	}
	if err := c.shaped(op, "x dx", x, dx, x.Rows(), x.Cols()); err != nil {
		return 0, err
	}
	return dt, c.rows(op, x)
}

// BatchNormInfer checks x [N,C], y like x and the vectors [C].
func (c *Checker[G]) BatchNormInfer(x, gamma, beta, mean, variance, y *tensor.Tensor) (tensor.DType, error) {
	const op = "BatchNormInfer"
	dt, err := c.Floats(op, "x gamma beta mean variance y", x, gamma, beta, mean, variance, y)
	if err != nil {
		return 0, err
	}
	return dt, c.Wrap(ColumnVectors(op, "gamma beta mean variance", x, y, gamma, beta, mean, variance))
}

// SoftmaxCrossEntropy checks logits [N,K], dlogits like it (when set),
// labels [N] (Int32) and idx (an index tensor). The values of idx and
// labels are the kernel's to check.
func (c *Checker[G]) SoftmaxCrossEntropy(logits, labels, idx, dlogits *tensor.Tensor) (tensor.DType, error) {
	const op = "SoftmaxCrossEntropy"
	dt, err := c.Floats(op, "logits", logits)
	if err != nil {
		return 0, err
	}
	if dlogits != nil {
		if _, err := c.Floats(op, "logits dlogits", logits, dlogits); err != nil {
			return 0, err
		}
	}
	if err := c.Lives(op, "labels idx", labels, idx); err != nil {
		return 0, err
	}
	return dt, c.Wrap(SoftmaxCrossEntropy(logits, labels, idx, dlogits))
}

// TargetLoss checks out [N,T], targets and dout (when set) like it and
// idx (an index tensor). The values of idx are the kernel's to check.
func (c *Checker[G]) TargetLoss(f backend.Loss, out, targets, idx, dout *tensor.Tensor) (tensor.DType, error) {
	const op = "TargetLoss"
	dt, err := c.Floats(op, "out targets", out, targets)
	if err != nil {
		return 0, err
	}
	if dout != nil {
		if _, err := c.Floats(op, "out dout", out, dout); err != nil {
			return 0, err
		}
	}
	if err := c.Live(op, "idx", idx); err != nil {
		return 0, err
	}
	return dt, c.Wrap(TargetLoss(f, out, targets, idx, dout))
}

// ArgmaxRows checks out [N] (Int32) against x [N,K].
func (c *Checker[G]) ArgmaxRows(x, out *tensor.Tensor) (tensor.DType, error) {
	const op = "ArgmaxRows"
	dt, err := c.Floats(op, "x", x)
	if err != nil {
		return 0, err
	}
	if err := c.Live(op, "out", out); err != nil {
		return 0, err
	}
	if out.DType() != tensor.Int32 {
		return 0, c.Errf(op, "out is %v, want int32", out.DType())
	}
	return dt, c.Wrap(Numel(op, "out", out, x.Rows()))
}

// AdamStep checks g, m and v like p and the step t ≥ 1.
func (c *Checker[G]) AdamStep(p, g, m, v *tensor.Tensor, t int) (tensor.DType, error) {
	const op = "AdamStep"
	dt, err := c.Floats(op, "p g m v", p, g, m, v)
	if err != nil {
		return 0, err
	}
	for i, x := range [...]*tensor.Tensor{g, m, v} {
		if err := Numel(op, field("g m v", i), x, p.Numel()); err != nil {
			return 0, c.Wrap(err)
		}
	}
	if t < 1 {
		return 0, c.Errf(op, "step %d, want t ≥ 1", t)
	}
	return dt, nil
}

// ---- index ----

// Gather checks y [len(idx), x.Cols()] of x's dtype (any) and an index
// idx. The values of idx are the kernel's to check.
func (c *Checker[G]) Gather(x, idx, y *tensor.Tensor) error {
	if err := c.Lives("Gather", "x idx y", x, idx, y); err != nil {
		return err
	}
	return c.Wrap(Gather(x, idx, y))
}

// ScatterAdd checks x [len(idx), y.Cols()] of y's float dtype and an
// index idx.
func (c *Checker[G]) ScatterAdd(x, idx, y *tensor.Tensor) (tensor.DType, error) {
	const op = "ScatterAdd"
	dt, err := c.Floats(op, "x y", x, y)
	if err != nil {
		return 0, err
	}
	if err := c.Live(op, "idx", idx); err != nil {
		return 0, err
	}
	return dt, c.Wrap(ScatterAdd(x, idx, y))
}

// ScatterArgmax checks argmax (an index tensor shaped like dy) and dx of
// dy's float dtype and columns.
func (c *Checker[G]) ScatterArgmax(argmax, dy, dx *tensor.Tensor) (tensor.DType, error) {
	const op = "ScatterArgmax"
	dt, err := c.Floats(op, "dy dx", dy, dx)
	if err != nil {
		return 0, err
	}
	if err := c.Live(op, "argmax", argmax); err != nil {
		return 0, err
	}
	return dt, c.Wrap(ScatterArgmax(argmax, dy, dx))
}

// ---- graph ----

// SpMM checks y = A·x (Aᵀ·x when trans) with edge weights w (nil, [E] or
// [E,H]) and returns the adjacency, the dtype and the number of heads.
func (c *Checker[G]) SpMM(a backend.Adj, trans bool, w, x, y *tensor.Tensor) (g G, dt tensor.DType, heads int, err error) {
	const op = "SpMM"
	if g, err = c.Graph(op, a); err != nil {
		return g, 0, 0, err
	}
	if w != nil {
		dt, err = c.Floats(op, "x y w", x, y, w)
	} else {
		dt, err = c.Floats(op, "x y", x, y)
	}
	if err != nil {
		return g, 0, 0, err
	}
	heads, err = SpMM(g, trans, w, x, y)
	return g, dt, heads, c.Wrap(err)
}

// SpMMMax checks y and argmax (an index tensor) [rows, F] against x
// [cols, F].
func (c *Checker[G]) SpMMMax(a backend.Adj, x, y, argmax *tensor.Tensor) (g G, dt tensor.DType, err error) {
	const op = "SpMMMax"
	if g, err = c.Graph(op, a); err != nil {
		return g, 0, err
	}
	if dt, err = c.Floats(op, "x y", x, y); err != nil {
		return g, 0, err
	}
	if err := c.Live(op, "argmax", argmax); err != nil {
		return g, 0, err
	}
	if err := Int(op, "argmax", argmax); err != nil {
		return g, 0, c.Wrap(err)
	}
	return g, dt, c.Wrap(SpMMMax(g, x, y, argmax))
}

// SDDMM checks x [rows, H·C], y [cols, H·C] and out [E,H]; it returns H.
func (c *Checker[G]) SDDMM(a backend.Adj, x, y, out *tensor.Tensor) (g G, dt tensor.DType, heads int, err error) {
	const op = "SDDMM"
	if g, err = c.Graph(op, a); err != nil {
		return g, 0, 0, err
	}
	if dt, err = c.Floats(op, "x y out", x, y, out); err != nil {
		return g, 0, 0, err
	}
	heads, err = SDDMM(g, x, y, out)
	return g, dt, heads, c.Wrap(err)
}

// UAddV checks u [cols,H], v [rows,H] and out [E,H]; it returns H.
func (c *Checker[G]) UAddV(a backend.Adj, u, v, out *tensor.Tensor) (g G, dt tensor.DType, heads int, err error) {
	const op = "UAddV"
	if g, err = c.Graph(op, a); err != nil {
		return g, 0, 0, err
	}
	if dt, err = c.Floats(op, "u v out", u, v, out); err != nil {
		return g, 0, 0, err
	}
	return g, dt, u.Cols(), c.Wrap(UAddV(g, u, v, out))
}

// EdgeReduce checks e [E,H] and out [rows,H] ([cols,H] when toSrc); it
// returns H.
func (c *Checker[G]) EdgeReduce(a backend.Adj, toSrc bool, e, out *tensor.Tensor) (g G, dt tensor.DType, heads int, err error) {
	const op = "EdgeReduce"
	if g, err = c.Graph(op, a); err != nil {
		return g, 0, 0, err
	}
	if dt, err = c.Floats(op, "e out", e, out); err != nil {
		return g, 0, 0, err
	}
	return g, dt, e.Cols(), c.Wrap(EdgeReduce(g, toSrc, e, out))
}

// edges checks edge tensors of one float dtype with shape [E,H].
func (c *Checker[G]) edges(op, names string, a backend.Adj, ts ...*tensor.Tensor) (g G, dt tensor.DType, heads int, err error) {
	if g, err = c.Graph(op, a); err != nil {
		return g, 0, 0, err
	}
	if dt, err = c.Floats(op, names, ts...); err != nil {
		return g, 0, 0, err
	}
	heads, err = Edges(op, names, g, ts...)
	return g, dt, heads, c.Wrap(err)
}

// EdgeSoftmax checks scores and out [E,H]; it returns H.
func (c *Checker[G]) EdgeSoftmax(a backend.Adj, scores, out *tensor.Tensor) (G, tensor.DType, int, error) {
	return c.edges("EdgeSoftmax", "scores out", a, scores, out)
}

// EdgeSoftmaxBackward checks out, dout and dscores [E,H]; it returns H.
func (c *Checker[G]) EdgeSoftmaxBackward(a backend.Adj, out, dout, dscores *tensor.Tensor) (G, tensor.DType, int, error) {
	return c.edges("EdgeSoftmaxBackward", "out dout dscores", a, out, dout, dscores)
}

// LSTMAggregate checks xw [cols,4H], whh [H,4H], bias [4H], out [rows,H]
// and the saved state (gates [E,4H], cells and hprev [E,H]: all set, or
// all nil for inference); out must not alias the others. It returns H
// and whether the state is saved.
func (c *Checker[G]) LSTMAggregate(a backend.Adj, xw, whh, bias, out, gates, cells, hprev *tensor.Tensor) (g G, dt tensor.DType, h int, save bool, err error) {
	const op = "LSTMAggregate"
	if g, err = c.Graph(op, a); err != nil {
		return g, 0, 0, false, err
	}
	if dt, err = c.Floats(op, "xw whh bias out", xw, whh, bias, out); err != nil {
		return g, 0, 0, false, err
	}
	if h, err = LSTM(op, g, xw, whh, bias); err != nil {
		return g, 0, 0, false, c.Wrap(err)
	}
	if err := Dims(op, "out", out, g.Rows(), h); err != nil {
		return g, 0, 0, false, c.Wrap(err)
	}
	save = gates != nil || cells != nil || hprev != nil
	if save {
		if err := c.saved(op, g, h, xw, gates, cells, hprev); err != nil {
			return g, 0, 0, false, err
		}
	}
	for _, t := range [...]*tensor.Tensor{xw, whh, bias, gates, cells, hprev} {
		if aliases(t, out) {
			return g, 0, 0, false, c.Errf(op, "out must not alias an input or the saved state")
		}
	}
	return g, dt, h, save, nil
}

// saved checks the saved state of a training LSTM: all three set, of
// ref's float dtype (ref is xw, or dxw, named xw in errors), [E,4H],
// [E,H] and [E,H].
func (c *Checker[G]) saved(op string, a backend.Adj, h int, ref, gates, cells, hprev *tensor.Tensor) error {
	if gates == nil || cells == nil || hprev == nil {
		return c.Errf(op, "gates, cells and hprev must be all set (training) or all nil (inference)")
	}
	if _, err := c.Floats(op, "xw gates cells hprev", ref, gates, cells, hprev); err != nil {
		return err
	}
	return c.Wrap(LSTMSaved(op, a, h, gates, cells, hprev))
}

// LSTMAggregateBackward checks whh and dwhh [H,4H], dxw [cols,4H], dout
// [rows,H] and the saved state; dxw and dwhh must not alias the others.
// It returns H.
func (c *Checker[G]) LSTMAggregateBackward(a backend.Adj, whh, gates, cells, hprev, dout, dxw, dwhh *tensor.Tensor) (g G, dt tensor.DType, h int, err error) {
	const op = "LSTMAggregateBackward"
	if g, err = c.Graph(op, a); err != nil {
		return g, 0, 0, err
	}
	if dt, err = c.Floats(op, "dxw whh dout dwhh", dxw, whh, dout, dwhh); err != nil {
		return g, 0, 0, err
	}
	if h, err = LSTMBackward(op, g, whh, dout, dxw, dwhh); err != nil {
		return g, 0, 0, c.Wrap(err)
	}
	if err := c.saved(op, g, h, dxw, gates, cells, hprev); err != nil {
		return g, 0, 0, err
	}
	for _, t := range [...]*tensor.Tensor{whh, gates, cells, hprev, dout} {
		if aliases(t, dxw) || aliases(t, dwhh) {
			return g, 0, 0, c.Errf(op, "dxw and dwhh must not alias an input or the saved state")
		}
	}
	return g, dt, h, nil
}

// SegmentSelect checks e [E,C], out [rows,C] and idx [rows,C] (Int32 or
// Int64); it returns C.
func (c *Checker[G]) SegmentSelect(a backend.Adj, e, out, idx *tensor.Tensor) (g G, dt tensor.DType, cols int, err error) {
	const op = "SegmentSelect"
	if g, err = c.Graph(op, a); err != nil {
		return g, 0, 0, err
	}
	if dt, err = c.Floats(op, "e out", e, out); err != nil {
		return g, 0, 0, err
	}
	if err := c.Lives(op, "idx", idx); err != nil {
		return g, 0, 0, err
	}
	if idx.DType() != tensor.Int32 && idx.DType() != tensor.Int64 {
		return g, 0, 0, c.Errf(op, "idx must be Int32 or Int64, got %v", idx.DType())
	}
	cols = e.Cols()
	if err := Dims(op, "e", e, int(g.NNZ()), cols); err != nil {
		return g, 0, 0, c.Wrap(err)
	}
	if err := Dims(op, "out", out, g.Rows(), cols); err != nil {
		return g, 0, 0, c.Wrap(err)
	}
	return g, dt, cols, c.Wrap(Dims(op, "idx", idx, g.Rows(), cols))
}

// SegmentProd checks e [E,C] and out [rows,C].
func (c *Checker[G]) SegmentProd(a backend.Adj, e, out *tensor.Tensor) (g G, dt tensor.DType, cols int, err error) {
	const op = "SegmentProd"
	if g, err = c.Graph(op, a); err != nil {
		return g, 0, 0, err
	}
	if dt, err = c.Floats(op, "e out", e, out); err != nil {
		return g, 0, 0, err
	}
	cols = e.Cols()
	if err := Dims(op, "e", e, int(g.NNZ()), cols); err != nil {
		return g, 0, 0, c.Wrap(err)
	}
	return g, dt, cols, c.Wrap(Dims(op, "out", out, g.Rows(), cols))
}

// SegmentProdBackward checks e [E,C], dout [rows,C] and de [E,C] (de must
// not alias e or dout).
func (c *Checker[G]) SegmentProdBackward(a backend.Adj, e, dout, de *tensor.Tensor) (g G, dt tensor.DType, cols int, err error) {
	const op = "SegmentProdBackward"
	if g, err = c.Graph(op, a); err != nil {
		return g, 0, 0, err
	}
	if dt, err = c.Floats(op, "e dout de", e, dout, de); err != nil {
		return g, 0, 0, err
	}
	cols = e.Cols()
	if err := Dims(op, "e", e, int(g.NNZ()), cols); err != nil {
		return g, 0, 0, c.Wrap(err)
	}
	if err := Dims(op, "dout", dout, g.Rows(), cols); err != nil {
		return g, 0, 0, c.Wrap(err)
	}
	if err := Dims(op, "de", de, int(g.NNZ()), cols); err != nil {
		return g, 0, 0, c.Wrap(err)
	}
	if de.Buffer() == e.Buffer() || de.Buffer() == dout.Buffer() {
		return g, 0, 0, c.Errf(op, "de must not alias e or dout")
	}
	return g, dt, cols, nil
}
