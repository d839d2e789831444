// Package backend defines the one interface through which the engine runs all
// tensor math and graph operations. A backend owns memory in named tiers and
// makes every transfer explicit, so a CPU, a simulated-device or a GPU backend
// can run the same plan. All 2-D tensors are row-major.
//
// Conventions shared by every method:
//   - Float ops accept Float32 or Float64; all float operands of one call share
//     the dtype. Index operands are Int32 or Int64.
//   - Outputs are overwritten unless a beta parameter says otherwise.
//   - Shape or dtype mismatches return an error; they never panic.
//   - Results are deterministic: the same inputs give bitwise the same
//     outputs regardless of thread count.
package backend

import (
	"context"
	"fmt"

	"strata/core/graph"
	"strata/core/tensor"
)

// Adj is an adjacency matrix resident on a backend. Row i lists the sources of
// destination i (edge e: src = col(e), dst = row(e)). The backend keeps
// whatever it needs to apply the transpose without atomics.
type Adj interface {
	Rows() int
	Cols() int
	NNZ() int64
	Tier() tensor.Tier
}

// Unary names an elementwise function; the codes (codes_gen.go) come
// from the op table, ir.Ops.
type Unary uint8

// Binary names an elementwise function of two operands. The second operand
// may broadcast: it is either the same shape as the first, a row vector [C]
// applied to every row, or a scalar [1].
type Binary uint8

// Loss names the element-wise loss of TargetLoss.
type Loss uint8

const (
	// LossBCE is the sigmoid binary cross-entropy of logits x against 0/1
	// targets y: max(x,0) - x·y + log(1+exp(-|x|)) (multi-label).
	LossBCE Loss = iota
	// LossMSE is the squared error (x-y)² (regression).
	LossMSE
)

// String names the loss as errors do.
func (f Loss) String() string {
	switch f {
	case LossBCE:
		return "bce"
	case LossMSE:
		return "mse"
	}
	return fmt.Sprintf("Loss(%d)", uint8(f))
}

// Backend runs tensor and graph operations. Implementations must be safe for
// use by one goroutine at a time; they may parallelise internally.
type Backend interface {
	// Name identifies the backend ("cpu", "sim", "cuda").
	Name() string
	// Tiers lists the memory tiers this backend can allocate in.
	Tiers() []tensor.Tier

	// Alloc returns a zero-filled tensor in the given tier.
	Alloc(dt tensor.DType, shape []int, tier tensor.Tier) (*tensor.Tensor, error)
	// Release returns the tensor's memory; the handle must not be used again.
	Release(t *tensor.Tensor)
	// Upload copies host data ([]float32, []float64, []int32 or []int64 of
	// matching length and dtype) into t.
	Upload(t *tensor.Tensor, src any) error
	// Download copies t into host memory dst (a slice of matching type and length).
	Download(t *tensor.Tensor, dst any) error
	// Copy copies src into dst, which may be in different tiers. Backends
	// that model links count the bytes here.
	Copy(dst, src *tensor.Tensor) error
	// UploadGraph places an adjacency in a tier. Its own edge values are the
	// CSR's Values, or ones when it has none.
	UploadGraph(g *graph.CSR, tier tensor.Tier) (Adj, error)
	// ReleaseGraph frees an adjacency from UploadGraph; it must not be used
	// again.
	ReleaseGraph(a Adj)
	// Stats reports memory in use and peak per tier.
	Stats() Stats

	// GEMM computes c = alpha·op(a)·op(b) + beta·c, op(x) = xᵀ when trans is set.
	GEMM(transA, transB bool, alpha float64, a, b *tensor.Tensor, beta float64, c *tensor.Tensor) error

	// SpMM computes y = A·x + beta·y, or Aᵀ·x when trans is set.
	// w holds edge weights: nil (the adjacency's own values), [E] (one weight
	// per edge) or [E,H] (one per edge and head; x and y then have H·C
	// columns and head h uses columns h·C .. h·C+C-1).
	SpMM(ctx context.Context, a Adj, trans bool, w, x *tensor.Tensor, beta float64, y *tensor.Tensor) error
	// SpMMMax computes y[i,f] = max over the sources j of row i of x[j,f]
	// (0 for an empty row) and records the winning source in argmax (Int32
	// or Int64, same shape as y, -1 for an empty row).
	SpMMMax(ctx context.Context, a Adj, x, y, argmax *tensor.Tensor) error
	// ScatterArgmax accumulates dx[argmax[i,f], f] += dy[i,f] (dx is not cleared).
	ScatterArgmax(argmax, dy, dx *tensor.Tensor) error
	// SDDMM computes out[e,h] = <x[dst(e)] head h, y[src(e)] head h> for every
	// edge; out is [E,H] and x, y have H·C columns.
	SDDMM(ctx context.Context, a Adj, x, y, out *tensor.Tensor) error
	// UAddV computes out[e,h] = u[src(e),h] + v[dst(e),h]; u, v are [N,H].
	UAddV(ctx context.Context, a Adj, u, v, out *tensor.Tensor) error
	// EdgeReduce sums edge values [E,H] into nodes [N,H]: into the destination
	// rows, or into the sources when toSrc is set.
	EdgeReduce(ctx context.Context, a Adj, toSrc bool, e, out *tensor.Tensor) error
	// EdgeSoftmax normalises scores [E,H] over the edges of each destination.
	EdgeSoftmax(ctx context.Context, a Adj, scores, out *tensor.Tensor) error
	// EdgeSoftmaxBackward computes dscores from the softmax output and its gradient.
	EdgeSoftmaxBackward(ctx context.Context, a Adj, out, dout, dscores *tensor.Tensor) error

	// LSTMAggregate runs an LSTM over the sources of each destination row
	// of a, in CSR order, from a zero state, and writes the last hidden
	// state to out [R,H] (zeros for a row without sources). xw [S,4H] is
	// x·W_ih over the S sources; whh is [H,4H] and bias [4H]; gate blocks
	// are i, f, g, o as in PyTorch. gates [E,4H], cells [E,H] and hprev
	// [E,H] receive, in the backend's layout, what LSTMAggregateBackward
	// needs; all three nil (inference) saves nothing.
	LSTMAggregate(ctx context.Context, a Adj, xw, whh, bias, out, gates, cells, hprev *tensor.Tensor) error
	// LSTMAggregateBackward computes dxw [S,4H] and dwhh [H,4H]
	// (overwritten) from dout [R,H] and the state a training LSTMAggregate
	// saved. It consumes gates, which then hold the gradients of the gate
	// pre-activations; the bias gradient is the column sum of dxw.
	LSTMAggregateBackward(ctx context.Context, a Adj, whh, gates, cells, hprev, dout, dxw, dwhh *tensor.Tensor) error

	// Gather copies rows: y[i,:] = x[idx[i],:].
	Gather(x, idx, y *tensor.Tensor) error
	// ScatterAdd accumulates rows: y[idx[i],:] += x[i,:] (y is not cleared).
	ScatterAdd(x, idx, y *tensor.Tensor) error
	// CopyCols copies n columns: dst[:, dstOff+j] = src[:, srcOff+j].
	CopyCols(dst *tensor.Tensor, dstOff int, src *tensor.Tensor, srcOff, n int) error

	// Apply computes y = f(x) elementwise; x and y may be the same tensor.
	Apply(f Unary, alpha float64, x, y *tensor.Tensor) error
	// ApplyBackward computes dx = f'(x)·dy, given x, y = f(x) and dy.
	ApplyBackward(f Unary, alpha float64, x, y, dy, dx *tensor.Tensor) error
	// Elementwise computes y = a op b with broadcasting of b (see Binary).
	Elementwise(op Binary, a, b, y *tensor.Tensor) error
	// Axpby computes y = alpha·x + beta·y.
	Axpby(alpha float64, x *tensor.Tensor, beta float64, y *tensor.Tensor) error
	// Fill sets every element to v.
	Fill(t *tensor.Tensor, v float64) error
	// SumRows reduces over rows: y[c] = Σ_i x[i,c].
	SumRows(x, y *tensor.Tensor) error
	// HeadDot computes y[n,h] = Σ_c x[n,h·C+c]·a[h,c]; x is [N,H·C], a is [H,C].
	HeadDot(x, a, y *tensor.Tensor) error
	// HeadDotBackward accumulates dx += dy ⊗ a per head and da += Σ_n dy·x.
	HeadDotBackward(x, a, dy, dx, da *tensor.Tensor) error

	// DropoutMask fills mask with 0 or 1/(1-p), keeping each element with
	// probability 1-p. The stream is a pure function of (seed, row key,
	// column) (dropout.go): rows, when not nil, is an Int64 tensor with one
	// key per row of mask (its first dimension), and nil keys row r by r.
	DropoutMask(seed uint64, rows *tensor.Tensor, p float64, mask *tensor.Tensor) error
	// BatchNorm normalises columns with batch statistics: y = (x-μ)/σ·γ + β.
	// It stores the column means and inverse std devs in mean and invStd.
	BatchNorm(x, gamma, beta, y, mean, invStd *tensor.Tensor, eps float64) error
	// BatchNormBackward computes dx, dgamma and dbeta (all overwritten).
	BatchNormBackward(x, gamma, dy, mean, invStd, dx, dgamma, dbeta *tensor.Tensor) error
	// BatchNormInfer normalises with given statistics (no batch statistics).
	BatchNormInfer(x, gamma, beta, mean, variance, y *tensor.Tensor, eps float64) error

	// SoftmaxCrossEntropy computes the mean cross-entropy of logits [N,K]
	// over the rows listed in idx against labels [N] (Int32), writes its
	// gradient with respect to the logits into dlogits (zero outside idx;
	// may be nil) and returns the loss.
	SoftmaxCrossEntropy(logits, labels, idx, dlogits *tensor.Tensor) (float64, error)
	// TargetLoss computes the mean of the element-wise loss f of out
	// [N,T] against targets [N,T] (out's dtype) over the rows listed in
	// idx and all T columns, writes its gradient with respect to out into
	// dout (zero outside idx; may be nil) and returns the loss. A row
	// repeated in idx counts once per occurrence; the per-element terms
	// are summed in float64.
	TargetLoss(f Loss, out, targets, idx, dout *tensor.Tensor) (float64, error)
	// ArgmaxRows writes the column of the largest value of each row (Int32).
	ArgmaxRows(x, out *tensor.Tensor) error

	// AdamStep updates p in place, with L2 weight decay folded into g: g' = g + wd·p; m = β1 m + (1-β1) g'; v = β2 v +
	// (1-β2) g'²; p -= lr·m̂/(√v̂+eps) with bias correction for step t ≥ 1.
	AdamStep(p, g, m, v *tensor.Tensor, lr, beta1, beta2, eps, wd float64, t int) error
}

// Synchronizer is implemented by backends that queue work asynchronously
// (a GPU stream): Synchronize returns once everything queued has run, so
// that a wall-clock time covers the work.
type Synchronizer interface {
	Synchronize() error
}

// Stats is a snapshot of memory use per tier.
type Stats struct {
	InUse map[tensor.Tier]int64
	Peak  map[tensor.Tier]int64
}
