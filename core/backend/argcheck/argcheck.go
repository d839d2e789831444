// Package argcheck checks the operands of backend ops against the
// contracts of backend.Backend: dtypes, shapes, adjacency sizes and
// aliasing. It knows nothing of storage: a backend hands a Checker the
// test of whether a tensor or adjacency is its own and alive, and each
// of its ops makes one Checker call, which runs that test on every
// operand, then the op's contract, prefixes the errors with the backend's
// name ("cpu: SpMM: x has 10 rows, ...") and returns what the kernel
// needs. The functions below are the contracts alone, unprefixed.
package argcheck

import (
	"fmt"

	"strata/core/backend"
	"strata/core/graph"
	"strata/core/tensor"
)

func errf(op, format string, args ...any) error {
	return fmt.Errorf(op+": "+format, args...)
}

// Floats checks that every tensor has one float dtype, which it returns.
// names lists the tensors' names, space-separated.
func Floats(op, names string, ts ...*tensor.Tensor) (tensor.DType, error) {
	dt := ts[0].DType()
	for i, t := range ts {
		if !t.DType().IsFloat() {
			return 0, errf(op, "%s is %v, want float32 or float64", field(names, i), t.DType())
		}
		if t.DType() != dt {
			return 0, errf(op, "%s is %v but %s is %v", field(names, i), t.DType(), field(names, 0), dt)
		}
	}
	return dt, nil
}

// Int checks that t is an Int32 or Int64 tensor.
func Int(op, name string, t *tensor.Tensor) error {
	if dt := t.DType(); dt != tensor.Int32 && dt != tensor.Int64 {
		return errf(op, "%s is %v, want int32 or int64", name, dt)
	}
	return nil
}

// Dims checks that t is rows×cols (a rank-1 tensor counts as n×1).
func Dims(op, name string, t *tensor.Tensor, rows, cols int) error {
	if t.Rows() != rows || t.Cols() != cols {
		return errf(op, "%s has shape %v, want [%d,%d]", name, t.Shape(), rows, cols)
	}
	return nil
}

// Numel checks that t holds n elements.
func Numel(op, name string, t *tensor.Tensor, n int) error {
	if t.Numel() != n {
		return errf(op, "%s has shape %v (%d elements), want %d elements", name, t.Shape(), t.Numel(), n)
	}
	return nil
}

func aliases(t, u *tensor.Tensor) bool { return t != nil && u != nil && t.Buffer() == u.Buffer() }

// GEMM checks c = op(a)·op(b) and returns its m×n result and inner k.
func GEMM(transA, transB bool, a, b, c *tensor.Tensor) (m, n, k int, err error) {
	const op = "GEMM"
	m, k = a.Rows(), a.Cols()
	if transA {
		m, k = k, m
	}
	kb, n := b.Rows(), b.Cols()
	if transB {
		kb, n = n, kb
	}
	if k != kb {
		return 0, 0, 0, errf(op, "op(a) is %d×%d but op(b) is %d×%d", m, k, kb, n)
	}
	if c.Rows() != m || c.Cols() != n {
		return 0, 0, 0, errf(op, "c has shape %v, want [%d,%d]", c.Shape(), m, n)
	}
	if aliases(c, a) || aliases(c, b) {
		return 0, 0, 0, errf(op, "c must not alias a or b")
	}
	return m, n, k, nil
}

// SpMM checks y = A·x (Aᵀ·x when trans) with edge weights w (nil, [E] or
// [E,H]) and returns the number of heads.
func SpMM(a backend.Adj, trans bool, w, x, y *tensor.Tensor) (heads int, err error) {
	const op = "SpMM"
	in, out, name := a.Cols(), a.Rows(), "adjacency"
	if trans {
		in, out, name = out, in, "transposed adjacency"
	}
	if x.Rows() != in {
		return 0, errf(op, "x has %d rows, %s has %d columns", x.Rows(), name, in)
	}
	f := x.Cols()
	if y.Rows() != out || y.Cols() != f {
		return 0, errf(op, "y has shape %v, want [%d,%d] (%s rows × x columns)", y.Shape(), out, f, name)
	}
	if aliases(y, x) || aliases(y, w) {
		return 0, errf(op, "y must not alias x or w")
	}
	if w == nil {
		return 1, nil
	}
	if int64(w.Rows()) != a.NNZ() {
		return 0, errf(op, "w has %d rows, adjacency has %d edges", w.Rows(), a.NNZ())
	}
	h := w.Cols()
	if h == 0 || f%h != 0 {
		return 0, errf(op, "x has %d columns, not a multiple of the %d heads of w", f, h)
	}
	return h, nil
}

// SpMMMax checks y and argmax [rows, F] against x [cols, F].
func SpMMMax(a backend.Adj, x, y, argmax *tensor.Tensor) error {
	const op = "SpMMMax"
	if x.Rows() != a.Cols() {
		return errf(op, "x has %d rows, adjacency has %d columns", x.Rows(), a.Cols())
	}
	if err := Dims(op, "y", y, a.Rows(), x.Cols()); err != nil {
		return err
	}
	if err := Dims(op, "argmax", argmax, a.Rows(), x.Cols()); err != nil {
		return err
	}
	if aliases(y, x) {
		return errf(op, "y must not alias x")
	}
	return nil
}

// SDDMM checks x [rows, H·C], y [cols, H·C] and out [E,H]; it returns H.
func SDDMM(a backend.Adj, x, y, out *tensor.Tensor) (heads int, err error) {
	const op = "SDDMM"
	if x.Rows() != a.Rows() {
		return 0, errf(op, "x has %d rows, adjacency has %d rows", x.Rows(), a.Rows())
	}
	if y.Rows() != a.Cols() {
		return 0, errf(op, "y has %d rows, adjacency has %d columns", y.Rows(), a.Cols())
	}
	f := x.Cols()
	if y.Cols() != f {
		return 0, errf(op, "x has %d columns but y has %d", f, y.Cols())
	}
	if int64(out.Rows()) != a.NNZ() {
		return 0, errf(op, "out has %d rows, adjacency has %d edges", out.Rows(), a.NNZ())
	}
	h := out.Cols()
	if h == 0 || f%h != 0 {
		return 0, errf(op, "x has %d columns, not a multiple of the %d heads of out", f, h)
	}
	return h, nil
}

// UAddV checks u [cols,H], v [rows,H] and out [E,H].
func UAddV(a backend.Adj, u, v, out *tensor.Tensor) error {
	const op = "UAddV"
	h := u.Cols()
	if err := Dims(op, "u", u, a.Cols(), h); err != nil {
		return err
	}
	if err := Dims(op, "v", v, a.Rows(), h); err != nil {
		return err
	}
	return Dims(op, "out", out, int(a.NNZ()), h)
}

// EdgeReduce checks e [E,H] and out [rows,H], or [cols,H] when toSrc.
func EdgeReduce(a backend.Adj, toSrc bool, e, out *tensor.Tensor) error {
	const op = "EdgeReduce"
	if int64(e.Rows()) != a.NNZ() {
		return errf(op, "e has %d rows, adjacency has %d edges", e.Rows(), a.NNZ())
	}
	n := a.Rows()
	if toSrc {
		n = a.Cols()
	}
	return Dims(op, "out", out, n, e.Cols())
}

// Edges checks that every tensor is [E,H] with the H of the first and
// returns H.
func Edges(op, names string, a backend.Adj, ts ...*tensor.Tensor) (heads int, err error) {
	h := ts[0].Cols()
	for i, t := range ts {
		if err := Dims(op, field(names, i), t, int(a.NNZ()), h); err != nil {
			return 0, err
		}
	}
	return h, nil
}

// LSTM checks whh [H,4H], bias [4H] and xw [cols,4H] and returns H.
func LSTM(op string, a backend.Adj, xw, whh, bias *tensor.Tensor) (h int, err error) {
	h = whh.Rows()
	if err := Dims(op, "whh", whh, h, 4*h); err != nil {
		return 0, err
	}
	if err := Numel(op, "bias", bias, 4*h); err != nil {
		return 0, err
	}
	if xw.Rows() != a.Cols() || xw.Cols() != 4*h {
		return 0, errf(op, "xw has shape %v, want [%d,%d] (adjacency columns × 4H for H=%d from whh)", xw.Shape(), a.Cols(), 4*h, h)
	}
	return h, nil
}

// LSTMSaved checks the saved state: gates [E,4H], cells [E,H], hprev [E,H].
func LSTMSaved(op string, a backend.Adj, h int, gates, cells, hprev *tensor.Tensor) error {
	e := int(a.NNZ())
	if err := Dims(op, "gates", gates, e, 4*h); err != nil {
		return err
	}
	if err := Dims(op, "cells", cells, e, h); err != nil {
		return err
	}
	return Dims(op, "hprev", hprev, e, h)
}

// ColumnVectors checks that every vector holds x.Cols() elements and that
// y (when set) is shaped like x: the operands of batch norm.
func ColumnVectors(op, names string, x, y *tensor.Tensor, vecs ...*tensor.Tensor) error {
	for i, v := range vecs {
		if err := Numel(op, field(names, i), v, x.Cols()); err != nil {
			return err
		}
	}
	if y != nil {
		return Dims(op, "y", y, x.Rows(), x.Cols())
	}
	return nil
}

// SoftmaxCrossEntropy checks labels [N] (Int32), idx (an index tensor)
// and dlogits (like logits, when set).
func SoftmaxCrossEntropy(logits, labels, idx, dlogits *tensor.Tensor) error {
	const op = "SoftmaxCrossEntropy"
	if dlogits != nil {
		if err := Dims(op, "dlogits", dlogits, logits.Rows(), logits.Cols()); err != nil {
			return err
		}
	}
	if labels.DType() != tensor.Int32 {
		return errf(op, "labels is %v, want int32", labels.DType())
	}
	if err := Numel(op, "labels", labels, logits.Rows()); err != nil {
		return err
	}
	return Int(op, "idx", idx)
}

// TargetLoss checks the loss f, targets and dout (when set) shaped like
// out, and idx (an index tensor).
func TargetLoss(f backend.Loss, out, targets, idx, dout *tensor.Tensor) error {
	const op = "TargetLoss"
	if f != backend.LossBCE && f != backend.LossMSE {
		return errf(op, "unknown loss %v, want bce or mse", f)
	}
	for i, t := range []*tensor.Tensor{targets, dout} {
		if t != nil {
			if err := Dims(op, field("targets dout", i), t, out.Rows(), out.Cols()); err != nil {
				return err
			}
		}
	}
	return Int(op, "idx", idx)
}

// Broadcast checks b against a for Elementwise and returns the period of
// b: a.Numel() (same shape), a.Cols() (a row) or 0 (a scalar).
func Broadcast(op string, a, b *tensor.Tensor) (cols int, err error) {
	n := a.Numel()
	switch b.Numel() {
	case n:
		return n, nil
	case 1:
		return 0, nil
	case a.Cols():
		return a.Cols(), nil
	}
	return 0, errf(op, "b has shape %v, want %v, [%d] or [1]", b.Shape(), a.Shape(), a.Cols())
}

// CopyCols checks a copy of n columns between tensors of one dtype.
func CopyCols(dst *tensor.Tensor, dstOff int, src *tensor.Tensor, srcOff, n int) error {
	const op = "CopyCols"
	if dst.DType() != src.DType() {
		return errf(op, "dst is %v but src is %v", dst.DType(), src.DType())
	}
	if dst.Rows() != src.Rows() {
		return errf(op, "dst has %d rows, src has %d", dst.Rows(), src.Rows())
	}
	if n < 0 || dstOff < 0 || srcOff < 0 || dstOff+n > dst.Cols() || srcOff+n > src.Cols() {
		return errf(op, "%d columns from offset %d of %d into offset %d of %d are out of range",
			n, srcOff, src.Cols(), dstOff, dst.Cols())
	}
	return nil
}

// Heads checks x [N,H·C] against a [H,C] and returns H and C.
func Heads(op string, x, a *tensor.Tensor) (h, c int, err error) {
	h, c = a.Rows(), a.Cols()
	if x.Cols() != h*c {
		return 0, 0, errf(op, "x has %d columns, a is [%d,%d] (want H·C = %d)", x.Cols(), h, c, h*c)
	}
	return h, c, nil
}

// Gather checks y [len(idx), x.Cols()] of x's dtype and an index idx.
func Gather(x, idx, y *tensor.Tensor) error {
	const op = "Gather"
	if err := Int(op, "idx", idx); err != nil {
		return err
	}
	if x.DType() != y.DType() {
		return errf(op, "x is %v but y is %v", x.DType(), y.DType())
	}
	if err := Dims(op, "y", y, idx.Numel(), x.Cols()); err != nil {
		return err
	}
	if aliases(y, x) {
		return errf(op, "y must not alias x")
	}
	return nil
}

// ScatterAdd checks x [len(idx), y.Cols()] and an index idx.
func ScatterAdd(x, idx, y *tensor.Tensor) error {
	const op = "ScatterAdd"
	if err := Int(op, "idx", idx); err != nil {
		return err
	}
	f := x.Cols()
	if err := Dims(op, "x", x, idx.Numel(), f); err != nil {
		return err
	}
	if y.Cols() != f {
		return errf(op, "y has %d columns, x has %d", y.Cols(), f)
	}
	if aliases(y, x) {
		return errf(op, "y must not alias x")
	}
	return nil
}

// ScatterArgmax checks argmax (an index tensor shaped like dy) and dx with
// dy's columns.
func ScatterArgmax(argmax, dy, dx *tensor.Tensor) error {
	const op = "ScatterArgmax"
	if err := Int(op, "argmax", argmax); err != nil {
		return err
	}
	if err := Dims(op, "argmax", argmax, dy.Rows(), dy.Cols()); err != nil {
		return err
	}
	if dx.Cols() != dy.Cols() {
		return errf(op, "dx has %d columns, dy has %d", dx.Cols(), dy.Cols())
	}
	return nil
}

// CSR checks an adjacency before UploadGraph places it.
func CSR(g *graph.CSR) error {
	const op = "UploadGraph"
	if g == nil {
		return errf(op, "graph is nil")
	}
	if g.NumRows < 0 || g.NumCols < 0 || len(g.Indptr) != g.NumRows+1 {
		return errf(op, "%d×%d matrix with %d indptr entries", g.NumRows, g.NumCols, len(g.Indptr))
	}
	if g.Indptr[0] != 0 {
		return errf(op, "indptr starts at %d, want 0", g.Indptr[0])
	}
	if err := g.Validate(); err != nil {
		return errf(op, "%v", err)
	}
	return nil
}

// LSTMBackward checks whh and dwhh [H,4H], dxw [cols,4H] and dout
// [rows,H] and returns H.
func LSTMBackward(op string, a backend.Adj, whh, dout, dxw, dwhh *tensor.Tensor) (h int, err error) {
	h = whh.Rows()
	if err := Dims(op, "whh", whh, h, 4*h); err != nil {
		return 0, err
	}
	if err := Dims(op, "dwhh", dwhh, h, 4*h); err != nil {
		return 0, err
	}
	if dxw.Rows() != a.Cols() || dxw.Cols() != 4*h {
		return 0, errf(op, "dxw has shape %v, want [%d,%d] (adjacency columns × 4H for H=%d from whh)", dxw.Shape(), a.Cols(), 4*h, h)
	}
	return h, Dims(op, "dout", dout, a.Rows(), h)
}
