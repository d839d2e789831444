package sim

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"strata/core/backend"
	"strata/core/ir"
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
// times without a kernel cost model). Reading them is a barrier: the
// transfers issued so far are complete (see timeline), and later ones
// start after them.
func (b *Backend) Predicted() backend.Predicted {
	t := b.traffic
	t.mu.Lock()
	defer t.mu.Unlock()
	p := backend.Predicted{TransferS: make(map[string]float64, len(t.lines)), KernelS: make(map[tensor.Tier]map[string]float64, len(t.kernelS))}
	for purpose, tl := range t.lines {
		p.TransferS[purpose] = tl.barrier()
	}
	for tier, m := range t.kernelS {
		p.KernelS[tier] = maps.Clone(m)
	}
	return p
}

// DeviceBusy implements backend.BusyCounter: per device, its kernel
// seconds and the seconds of the transfers into it (host→device and
// peer→device, the receiver's copy) and from it to the host, since the
// last ResetTraffic (a link behind a PCIe switch at the slower of the
// two; the devices' shares of the uplink are not contended here).
func (b *Backend) DeviceBusy() []float64 {
	t := b.traffic
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]float64, len(b.tiers)-1)
	for i := range out {
		m := t.kernelS[DeviceTier(i)]
		for _, k := range slices.Sorted(maps.Keys(m)) { // a fixed order: the same sum every run
			out[i] += m[k]
		}
	}
	for _, l := range slices.SortedFunc(maps.Keys(t.bytes), func(x, y Link) int { return strings.Compare(x.String(), y.String()) }) {
		d := b.device(l.To)
		if d < 0 {
			d = b.device(l.From)
		}
		if d >= 0 {
			out[d] += b.linkSeconds(l, t.bytes[l])
		}
	}
	return out
}

// kernel is what a call costs: the cost model's op code and sizes of a
// kernel that writes out. A kernel whose out is nil or not on a device is
// not timed.
type kernel struct {
	out   *tensor.Tensor
	op    int32
	n     int        // sizes used
	sizes [4]float64 // an array: pricing a call allocates nothing
	// hostBytes are the bytes a host CPU moves for the call when it runs
	// on the host: priced at the topology's HostGatherGBps (a CPU
	// gather), 0 for kernels the host does not price.
	hostBytes float64
}

// k is a kernel of at most 4 sizes.
func k(out *tensor.Tensor, op int32, sizes ...float64) kernel {
	c := kernel{out: out, op: op}
	c.n = copy(c.sizes[:], sizes)
	return c
}

// price predicts one kernel on its out's tier; host kernels are not timed.
func (b *Backend) price(c kernel) error {
	out, op, sizes := c.out, c.op, c.sizes[:c.n]
	if out == nil || out.Buffer() == nil {
		return nil
	}
	if b.device(out.Tier()) < 0 {
		return b.priceHost(c)
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
		return fmt.Errorf("sim: predicting kernel time (op %d, sizes %v): %w", op, in[4:], err)
	}
	m := t.kernelS[out.Tier()]
	if m == nil {
		m = map[string]float64{}
		t.kernelS[out.Tier()] = m
	}
	m[b.Purpose()] += res[0]
	return nil
}

// priceHost predicts a host kernel that the topology prices: the bytes a
// CPU gather writes at HostGatherGBps, filed as the host tier's kernel
// time (other host kernels, and every one when HostGatherGBps is 0, are
// not timed).
func (b *Backend) priceHost(c kernel) error {
	if c.hostBytes <= 0 || b.topo.HostGatherGBps <= 0 {
		return nil
	}
	t := b.traffic
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.kernelS[tensor.Host]
	if m == nil {
		m = map[string]float64{}
		t.kernelS[tensor.Host] = m
	}
	m[b.Purpose()] += c.hostBytes / (b.topo.HostGatherGBps * 1e9)
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

// prices is the cost of every kernel: per method of backend.Backend (and
// of the inner backend's extensions) the cost model's op code, the tensor
// it writes (whose tier times it) and the sizes the model reads. The
// generated methods (wrap_gen.go) call it before running the kernel.
var prices = pricing{
	GEMM: func(transA, transB bool, alpha float64, a, x *tensor.Tensor, beta float64, c *tensor.Tensor) kernel {
		inner := cols(a)
		if transA {
			inner = rows(a)
		}
		return k(c, costGEMM, rows(c), inner, cols(c))
	},
	SpMM: func(ctx context.Context, a backend.Adj, trans bool, w, x *tensor.Tensor, beta float64, y *tensor.Tensor) kernel {
		weighted := 0.0
		if w != nil {
			weighted = 1
		}
		return k(y, costSpMM, rows(y), float64(a.NNZ()), cols(x), weighted)
	},
	SpMMMax: func(ctx context.Context, a backend.Adj, x, y, argmax *tensor.Tensor) kernel {
		return k(y, costSpMM, rows(y), float64(a.NNZ()), cols(x), 0)
	},
	ScatterArgmax: func(argmax, dy, dx *tensor.Tensor) kernel {
		return k(dx, costElementwise, elems(dy), 2, 1)
	},
	SDDMM: func(ctx context.Context, a backend.Adj, x, y, out *tensor.Tensor) kernel {
		return k(out, costEdge, float64(a.NNZ()), cols(x), cols(out))
	},
	UAddV: func(ctx context.Context, a backend.Adj, u, v, out *tensor.Tensor) kernel {
		return k(out, costEdge, float64(a.NNZ()), cols(u), cols(out))
	},
	EdgeReduce: func(ctx context.Context, a backend.Adj, toSrc bool, e, out *tensor.Tensor) kernel {
		return k(out, costSpMM, rows(out), float64(a.NNZ()), cols(e), 0)
	},
	EdgeSoftmax: func(ctx context.Context, a backend.Adj, scores, out *tensor.Tensor) kernel {
		return k(out, costEdgeSoftmax, float64(a.NNZ()), cols(out), float64(a.Rows()))
	},
	EdgeSoftmaxBackward: func(ctx context.Context, a backend.Adj, out, dout, dscores *tensor.Tensor) kernel {
		return k(dscores, costEdgeSoftmax, float64(a.NNZ()), cols(out), float64(a.Rows()))
	},
	// Per edge one step of the recurrence, h·W_hh (8H² flops) and the
	// cell's pointwise work.
	LSTMAggregate: func(ctx context.Context, a backend.Adj, xw, whh, bias, out, gates, cells, hprev *tensor.Tensor) kernel {
		e, h := float64(a.NNZ()), cols(out)
		elt := float64(out.DType().Size())
		flops := 8*e*h*h + 10*e*h
		moved := 4*e*h*elt + bytesOf(gates) + bytesOf(cells) + bytesOf(hprev) + bytesOf(whh) + bytesOf(out) + 4*e
		return k(out, costGeneric, flops, moved)
	},
	// Per edge the gates' gradients, dh·W_hhᵀ and hᵀ·dgates.
	LSTMAggregateBackward: func(ctx context.Context, a backend.Adj, whh, gates, cells, hprev, dout, dxw, dwhh *tensor.Tensor) kernel {
		e, h := float64(a.NNZ()), cols(dout)
		flops := 16*e*h*h + 15*e*h
		moved := 2*bytesOf(gates) + bytesOf(cells) + bytesOf(hprev) + bytesOf(dxw) + 2*bytesOf(dwhh) + bytesOf(dout) + 4*e
		return k(dxw, costGeneric, flops, moved)
	},
	// On the host, a CPU gather: the rows it writes (HostGatherGBps).
	Gather: func(x, idx, y *tensor.Tensor) kernel {
		c := k(y, costGeneric, 0, 2*bytesOf(y)+bytesOf(idx))
		c.hostBytes = bytesOf(y)
		return c
	},
	ScatterAdd: func(x, idx, y *tensor.Tensor) kernel {
		return k(y, costElementwise, elems(x), 2, 1)
	},
	CopyCols: func(dst *tensor.Tensor, dstOff int, src *tensor.Tensor, srcOff, n int) kernel {
		moved := rows(dst) * float64(n) * float64(dst.DType().Size())
		return k(dst, costGeneric, 0, 2*moved)
	},
	// A copy within one tier (across tiers it is a transfer, see Copy).
	Copy: func(dst, src *tensor.Tensor) kernel {
		return k(dst, costGeneric, 0, 2*bytesOf(dst))
	},
	// Flops per element from the op table.
	Apply: func(f backend.Unary, alpha float64, x, y *tensor.Tensor) kernel {
		return k(y, costElementwise, elems(y), 1, unaryFlops(f))
	},
	ApplyBackward: func(f backend.Unary, alpha float64, x, y, dy, dx *tensor.Tensor) kernel {
		return k(dx, costElementwise, elems(dx), 3, 2)
	},
	Elementwise: func(op backend.Binary, a, x, y *tensor.Tensor) kernel {
		return k(y, costElementwise, elems(y), 2, 1)
	},
	// One multiply per edge and column; the backward two passes over the
	// edges (zero count and product, then one division each).
	SegmentProd: func(ctx context.Context, a backend.Adj, e, out *tensor.Tensor) kernel {
		return k(out, costElementwise, elems(e), 1, 1)
	},
	SegmentProdBackward: func(ctx context.Context, a backend.Adj, e, dout, de *tensor.Tensor) kernel {
		return k(de, costElementwise, elems(e), 3, 3)
	},
	// A sort of each row's values per column: d·log2(d) comparisons per
	// edge and column at the mean degree d.
	SegmentSelect: func(ctx context.Context, a backend.Adj, q float64, nth int, e, out, idx *tensor.Tensor) kernel {
		ne, r := float64(a.NNZ()), max(rows(out), 1)
		fpe := 1.0
		if d := ne / r; nth < 0 && d > 2 {
			fpe = math.Log2(d)
		}
		return k(out, costElementwise, elems(e), 1, fpe)
	},
	Axpby: func(alpha float64, x *tensor.Tensor, beta float64, y *tensor.Tensor) kernel {
		return k(y, costElementwise, elems(y), 2, 3)
	},
	Fill: func(t *tensor.Tensor, v float64) kernel {
		return k(t, costGeneric, 0, bytesOf(t))
	},
	SumRows: func(x, y *tensor.Tensor) kernel {
		return k(y, costElementwise, elems(x), 1, 1)
	},
	HeadDot: func(x, a, y *tensor.Tensor) kernel {
		return k(y, costElementwise, elems(x), 2, 2)
	},
	HeadDotBackward: func(x, a, dy, dx, da *tensor.Tensor) kernel {
		return k(dx, costElementwise, elems(x), 3, 4)
	},
	DropoutMask: func(seed uint64, keys *tensor.Tensor, p float64, mask *tensor.Tensor) kernel {
		return k(mask, costElementwise, elems(mask), keyReads(keys, mask), 4)
	},
	BatchNorm: func(x, gamma, beta, y, mean, invStd *tensor.Tensor, eps float64) kernel {
		return k(y, costElementwise, elems(x), 3, 5)
	},
	BatchNormBackward: func(x, gamma, dy, mean, invStd, dx, dgamma, dbeta *tensor.Tensor) kernel {
		return k(dx, costElementwise, elems(x), 4, 8)
	},
	BatchNormInfer: func(x, gamma, beta, mean, variance, y *tensor.Tensor, eps float64) kernel {
		return k(y, costElementwise, elems(x), 3, 3)
	},
	SoftmaxCrossEntropy: func(logits, labels, idx, dlogits *tensor.Tensor) kernel {
		return k(logits, costElementwise, elems(logits), 2, 5)
	},
	TargetLoss: func(f backend.Loss, out, targets, idx, dout *tensor.Tensor) kernel {
		return k(out, costElementwise, elems(out), 3, 8)
	},
	ArgmaxRows: func(x, out *tensor.Tensor) kernel {
		return k(x, costElementwise, elems(x), 1, 1)
	},
	AdamStep: func(p, g, m, v *tensor.Tensor, lr, beta1, beta2, eps, wd float64, t int) kernel {
		return k(p, costElementwise, elems(p), 4, 12)
	},
	// The cpu backend's fused dropout: mask and apply in one pass.
	DropoutApply: func(seed uint64, keys *tensor.Tensor, p float64, x, mask, y *tensor.Tensor) kernel {
		operands := 1.0
		if mask != nil {
			operands = 2
		}
		return k(y, costElementwise, elems(y), operands+keyReads(keys, y), 5)
	},
	// The fused aggregation epilogue, priced as its SpMM: the bias and
	// activation touch rows the SpMM has just written.
	SpMMBiasAct: func(ctx context.Context, a backend.Adj, w, x, bias *tensor.Tensor, act backend.Unary, alpha float64, y *tensor.Tensor) kernel {
		weighted := 0.0
		if w != nil {
			weighted = 1
		}
		return k(y, costSpMM, rows(y), float64(a.NNZ()), cols(x), weighted)
	},
	// The fused input dropout and matmul, priced as its GEMM: the mask is
	// made in cache from the region the GEMM reads (the unfused sequence
	// adds a DropoutApply, priced above).
	DropoutGEMM: func(seed uint64, keys *tensor.Tensor, p float64, transX bool, x, b *tensor.Tensor, beta float64, c, scratch, keep *tensor.Tensor) kernel {
		inner := cols(x)
		if transX {
			inner = rows(x)
		}
		return k(c, costGEMM, rows(c), inner, cols(c))
	},
	// Widen: one operand read (2 bytes an element, priced as 4) per element written.
	Widen: func(x, y *tensor.Tensor) kernel {
		return k(y, costElementwise, elems(y), 1, 1)
	},
}

// keyReads is the operand reads per element of a dropout's row keys over
// x: one key (two elements' bytes) per row, none without keys.
func keyReads(keys, x *tensor.Tensor) float64 {
	if keys == nil || x.Numel() == 0 {
		return 0
	}
	return 2 * float64(keys.Numel()) / float64(x.Numel())
}

// unaryFlops is the op table's flop count of a unary function (at least 1).
func unaryFlops(f backend.Unary) float64 {
	if s := ir.UnarySpec(uint8(f)); s != nil && s.Flops > 0 {
		return s.Flops
	}
	return 1
}
