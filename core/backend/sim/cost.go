package sim

import (
	"context"
	"fmt"
	"maps"

	"strata/core/backend"
	"strata/core/tensor"
)

// KernelCost prices a kernel (see backend.KernelCost).
type KernelCost = backend.KernelCost

// Roofline op codes (see the roofline module's documentation).
const (
	costGeneric = iota
	costGEMM
	costSpMM
	costEdge
	costElementwise
	costEdgeSoftmax
)

// SetKernelCost makes the backend predict the time of every kernel that
// runs on a device, with the topology's DeviceSpec. Set it before the
// backend is used. Calls to c are serialised.
func (b *Backend) SetKernelCost(c backend.KernelCost) {
	b.traffic.mu.Lock()
	b.traffic.cost = c
	b.traffic.mu.Unlock()
}

// Predicted returns the predictions since the last ResetTraffic (no kernel
// times without a kernel cost model).
func (b *Backend) Predicted() backend.Predicted {
	t := b.traffic
	t.mu.Lock()
	defer t.mu.Unlock()
	p := backend.Predicted{TransferS: maps.Clone(t.linkS), KernelS: make(map[tensor.Tier]map[string]float64, len(t.kernelS))}
	for tier, m := range t.kernelS {
		p.KernelS[tier] = maps.Clone(m)
	}
	return p
}

// kernel predicts one kernel on out's tier; host kernels are not timed.
func (b *Backend) kernel(out *tensor.Tensor, op int32, sizes ...float64) error {
	if out == nil || b.device(out.Tier()) < 0 {
		return nil
	}
	t := b.traffic
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cost == nil {
		return nil
	}
	spec := b.topo.Compute
	in := append([]float64{spec.PeakGFLOPS, spec.MemGBps, spec.LaunchUS, float64(out.DType().Size())}, sizes...)
	res, err := t.cost.Predict(op, in)
	if err != nil {
		return fmt.Errorf("sim: predicting kernel time (op %d, sizes %v): %w", op, sizes, err)
	}
	m := t.kernelS[out.Tier()]
	if m == nil {
		m = map[string]float64{}
		t.kernelS[out.Tier()] = m
	}
	m[b.Purpose()] += res[0]
	return nil
}

// Sizes of a kernel's operands for the cost model (0 for a nil operand).
func elems(t *tensor.Tensor) float64 {
	if t == nil {
		return 0
	}
	return float64(t.Numel())
}

func bytesOf(t *tensor.Tensor) float64 {
	if t == nil {
		return 0
	}
	return float64(t.Bytes())
}

func rows(t *tensor.Tensor) float64 {
	if t == nil {
		return 0
	}
	return float64(t.Rows())
}

func cols(t *tensor.Tensor) float64 {
	if t == nil {
		return 0
	}
	return float64(t.Cols())
}

// The kernels below run on the CPU backend and are timed by the cost model.

// GEMM implements backend.Backend.
func (b *Backend) GEMM(transA, transB bool, alpha float64, a, x *tensor.Tensor, beta float64, c *tensor.Tensor) error {
	k := cols(a)
	if transA {
		k = rows(a)
	}
	if err := b.kernel(c, costGEMM, rows(c), k, cols(c)); err != nil {
		return err
	}
	return b.Backend.GEMM(transA, transB, alpha, a, x, beta, c)
}

// SpMM implements backend.Backend.
func (b *Backend) SpMM(ctx context.Context, a backend.Adj, trans bool, w, x *tensor.Tensor, beta float64, y *tensor.Tensor) error {
	weighted := 0.0
	if w != nil {
		weighted = 1
	}
	if err := b.kernel(y, costSpMM, rows(y), float64(a.NNZ()), cols(x), weighted); err != nil {
		return err
	}
	return b.Backend.SpMM(ctx, a, trans, w, x, beta, y)
}

// SpMMMax implements backend.Backend.
func (b *Backend) SpMMMax(ctx context.Context, a backend.Adj, x, y, argmax *tensor.Tensor) error {
	if err := b.kernel(y, costSpMM, rows(y), float64(a.NNZ()), cols(x), 0); err != nil {
		return err
	}
	return b.Backend.SpMMMax(ctx, a, x, y, argmax)
}

// ScatterArgmax implements backend.Backend.
func (b *Backend) ScatterArgmax(argmax, dy, dx *tensor.Tensor) error {
	if err := b.kernel(dx, costElementwise, elems(dy), 2, 1); err != nil {
		return err
	}
	return b.Backend.ScatterArgmax(argmax, dy, dx)
}

// SDDMM implements backend.Backend.
func (b *Backend) SDDMM(ctx context.Context, a backend.Adj, x, y, out *tensor.Tensor) error {
	if err := b.kernel(out, costEdge, float64(a.NNZ()), cols(x), cols(out)); err != nil {
		return err
	}
	return b.Backend.SDDMM(ctx, a, x, y, out)
}

// UAddV implements backend.Backend.
func (b *Backend) UAddV(ctx context.Context, a backend.Adj, u, v, out *tensor.Tensor) error {
	if err := b.kernel(out, costEdge, float64(a.NNZ()), cols(u), cols(out)); err != nil {
		return err
	}
	return b.Backend.UAddV(ctx, a, u, v, out)
}

// EdgeReduce implements backend.Backend.
func (b *Backend) EdgeReduce(ctx context.Context, a backend.Adj, toSrc bool, e, out *tensor.Tensor) error {
	if err := b.kernel(out, costSpMM, rows(out), float64(a.NNZ()), cols(e), 0); err != nil {
		return err
	}
	return b.Backend.EdgeReduce(ctx, a, toSrc, e, out)
}

// EdgeSoftmax implements backend.Backend.
func (b *Backend) EdgeSoftmax(ctx context.Context, a backend.Adj, scores, out *tensor.Tensor) error {
	if err := b.kernel(out, costEdgeSoftmax, float64(a.NNZ()), cols(out), float64(a.Rows())); err != nil {
		return err
	}
	return b.Backend.EdgeSoftmax(ctx, a, scores, out)
}

// EdgeSoftmaxBackward implements backend.Backend.
func (b *Backend) EdgeSoftmaxBackward(ctx context.Context, a backend.Adj, out, dout, dscores *tensor.Tensor) error {
	if err := b.kernel(dscores, costEdgeSoftmax, float64(a.NNZ()), cols(out), float64(a.Rows())); err != nil {
		return err
	}
	return b.Backend.EdgeSoftmaxBackward(ctx, a, out, dout, dscores)
}

// Gather implements backend.Backend.
func (b *Backend) Gather(x, idx, y *tensor.Tensor) error {
	if err := b.kernel(y, costGeneric, 0, 2*bytesOf(y)+bytesOf(idx)); err != nil {
		return err
	}
	return b.Backend.Gather(x, idx, y)
}

// ScatterAdd implements backend.Backend.
func (b *Backend) ScatterAdd(x, idx, y *tensor.Tensor) error {
	if err := b.kernel(y, costElementwise, elems(x), 2, 1); err != nil {
		return err
	}
	return b.Backend.ScatterAdd(x, idx, y)
}

// CopyCols implements backend.Backend.
func (b *Backend) CopyCols(dst *tensor.Tensor, dstOff int, src *tensor.Tensor, srcOff, n int) error {
	moved := rows(dst) * float64(n) * float64(dst.DType().Size())
	if err := b.kernel(dst, costGeneric, 0, 2*moved); err != nil {
		return err
	}
	return b.Backend.CopyCols(dst, dstOff, src, srcOff, n)
}

// Copy implements backend.Backend: a copy within one device is a kernel;
// across tiers it is a transfer, counted on the links.
func (b *Backend) Copy(dst, src *tensor.Tensor) error {
	if dst != nil && src != nil && dst.Tier() == src.Tier() {
		if err := b.kernel(dst, costGeneric, 0, 2*bytesOf(dst)); err != nil {
			return err
		}
	}
	return b.Backend.Copy(dst, src)
}

// Apply implements backend.Backend.
func (b *Backend) Apply(f backend.Unary, alpha float64, x, y *tensor.Tensor) error {
	if err := b.kernel(y, costElementwise, elems(y), 1, 1); err != nil {
		return err
	}
	return b.Backend.Apply(f, alpha, x, y)
}

// ApplyBackward implements backend.Backend.
func (b *Backend) ApplyBackward(f backend.Unary, alpha float64, x, y, dy, dx *tensor.Tensor) error {
	if err := b.kernel(dx, costElementwise, elems(dx), 3, 2); err != nil {
		return err
	}
	return b.Backend.ApplyBackward(f, alpha, x, y, dy, dx)
}

// Elementwise implements backend.Backend.
func (b *Backend) Elementwise(op backend.Binary, x, y, out *tensor.Tensor) error {
	if err := b.kernel(out, costElementwise, elems(out), 2, 1); err != nil {
		return err
	}
	return b.Backend.Elementwise(op, x, y, out)
}

// Axpby implements backend.Backend.
func (b *Backend) Axpby(alpha float64, x *tensor.Tensor, beta float64, y *tensor.Tensor) error {
	if err := b.kernel(y, costElementwise, elems(y), 2, 3); err != nil {
		return err
	}
	return b.Backend.Axpby(alpha, x, beta, y)
}

// Fill implements backend.Backend.
func (b *Backend) Fill(t *tensor.Tensor, v float64) error {
	if err := b.kernel(t, costGeneric, 0, bytesOf(t)); err != nil {
		return err
	}
	return b.Backend.Fill(t, v)
}

// SumRows implements backend.Backend.
func (b *Backend) SumRows(x, y *tensor.Tensor) error {
	if err := b.kernel(y, costElementwise, elems(x), 1, 1); err != nil {
		return err
	}
	return b.Backend.SumRows(x, y)
}

// HeadDot implements backend.Backend.
func (b *Backend) HeadDot(x, a, y *tensor.Tensor) error {
	if err := b.kernel(y, costElementwise, elems(x), 2, 2); err != nil {
		return err
	}
	return b.Backend.HeadDot(x, a, y)
}

// HeadDotBackward implements backend.Backend.
func (b *Backend) HeadDotBackward(x, a, dy, dx, da *tensor.Tensor) error {
	if err := b.kernel(dx, costElementwise, elems(x), 3, 4); err != nil {
		return err
	}
	return b.Backend.HeadDotBackward(x, a, dy, dx, da)
}

// DropoutMask implements backend.Backend.
func (b *Backend) DropoutMask(seed uint64, p float64, mask *tensor.Tensor) error {
	if err := b.kernel(mask, costElementwise, elems(mask), 0, 4); err != nil {
		return err
	}
	return b.Backend.DropoutMask(seed, p, mask)
}

// BatchNorm implements backend.Backend.
func (b *Backend) BatchNorm(x, gamma, beta, y, mean, invStd *tensor.Tensor, eps float64) error {
	if err := b.kernel(y, costElementwise, elems(x), 3, 5); err != nil {
		return err
	}
	return b.Backend.BatchNorm(x, gamma, beta, y, mean, invStd, eps)
}

// BatchNormBackward implements backend.Backend.
func (b *Backend) BatchNormBackward(x, gamma, dy, mean, invStd, dx, dgamma, dbeta *tensor.Tensor) error {
	if err := b.kernel(dx, costElementwise, elems(x), 4, 8); err != nil {
		return err
	}
	return b.Backend.BatchNormBackward(x, gamma, dy, mean, invStd, dx, dgamma, dbeta)
}

// BatchNormInfer implements backend.Backend.
func (b *Backend) BatchNormInfer(x, gamma, beta, mean, variance, y *tensor.Tensor, eps float64) error {
	if err := b.kernel(y, costElementwise, elems(x), 3, 3); err != nil {
		return err
	}
	return b.Backend.BatchNormInfer(x, gamma, beta, mean, variance, y, eps)
}

// SoftmaxCrossEntropy implements backend.Backend.
func (b *Backend) SoftmaxCrossEntropy(logits, labels, idx, dlogits *tensor.Tensor) (float64, error) {
	if err := b.kernel(logits, costElementwise, elems(logits), 2, 5); err != nil {
		return 0, err
	}
	return b.Backend.SoftmaxCrossEntropy(logits, labels, idx, dlogits)
}

// ArgmaxRows implements backend.Backend.
func (b *Backend) ArgmaxRows(x, out *tensor.Tensor) error {
	if err := b.kernel(x, costElementwise, elems(x), 1, 1); err != nil {
		return err
	}
	return b.Backend.ArgmaxRows(x, out)
}

// AdamStep implements backend.Backend.
func (b *Backend) AdamStep(p, g, m, v *tensor.Tensor, lr, beta1, beta2, eps, wd float64, t int) error {
	if err := b.kernel(p, costElementwise, elems(p), 4, 12); err != nil {
		return err
	}
	return b.Backend.AdamStep(p, g, m, v, lr, beta1, beta2, eps, wd, t)
}

// LSTMAggregate implements backend.Backend: per edge one step of the
// recurrence, h·W_hh (8H² flops) and the cell's pointwise work.
func (b *Backend) LSTMAggregate(ctx context.Context, a backend.Adj, xw, whh, bias, out, gates, cells, hprev *tensor.Tensor) error {
	e, h := float64(a.NNZ()), cols(out)
	elt := float64(out.DType().Size())
	flops := 8*e*h*h + 10*e*h
	moved := 4*e*h*elt + bytesOf(gates) + bytesOf(cells) + bytesOf(hprev) + bytesOf(whh) + bytesOf(out) + 4*e
	if err := b.kernel(out, costGeneric, flops, moved); err != nil {
		return err
	}
	return b.Backend.LSTMAggregate(ctx, a, xw, whh, bias, out, gates, cells, hprev)
}

// LSTMAggregateBackward implements backend.Backend: per edge the gates'
// gradients, dh·W_hhᵀ and hᵀ·dgates.
func (b *Backend) LSTMAggregateBackward(ctx context.Context, a backend.Adj, whh, gates, cells, hprev, dout, dxw, dwhh *tensor.Tensor) error {
	e, h := float64(a.NNZ()), cols(dout)
	flops := 16*e*h*h + 15*e*h
	moved := 2*bytesOf(gates) + bytesOf(cells) + bytesOf(hprev) + bytesOf(dxw) + 2*bytesOf(dwhh) + bytesOf(dout) + 4*e
	if err := b.kernel(dxw, costGeneric, flops, moved); err != nil {
		return err
	}
	return b.Backend.LSTMAggregateBackward(ctx, a, whh, gates, cells, hprev, dout, dxw, dwhh)
}

// DropoutApply prices the CPU backend's fused dropout (mask and apply in
// one pass), which the engine uses when a backend offers it.
func (b *Backend) DropoutApply(seed uint64, p float64, x, mask, y *tensor.Tensor) error {
	operands := 1.0
	if mask != nil {
		operands = 2
	}
	if err := b.kernel(y, costElementwise, elems(y), operands, 5); err != nil {
		return err
	}
	return b.Backend.DropoutApply(seed, p, x, mask, y)
}
