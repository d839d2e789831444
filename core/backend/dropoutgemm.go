package backend

import "strata/core/tensor"

// DropoutGEMMer is implemented by backends that multiply by a dropout of
// x without forming it (the cpu backend; the simulator passes it through):
//
//	c = op(dropout(x, seed, rows, p))·b + beta·c,  op = transpose when transX
//
// with the mask DropoutMask makes for (seed, rows, p) on x's elements
// (rows: nil or x's row keys). The
// masked x is made again, a region at a time, into scratch (at least
// DropoutGEMMScratch elements), so a layer's input dropout needs no buffer
// of the input's size in the forward pass (transX false) nor in the weight
// gradient (transX true). keep, when not nil, is an Int32 tensor of
// DropoutKeepWords(x) words that holds the mask as one bit per element:
// a forward call (transX false) records it, a weight-gradient call reads
// it instead of drawing the mask again (a backend may ignore it and draw
// the mask both times). The result equals DropoutApply followed by GEMM
// bit for bit: every product runs the GEMM's own call with the same sizes.
type DropoutGEMMer interface {
	DropoutGEMM(seed uint64, rows *tensor.Tensor, p float64, transX bool, x, b *tensor.Tensor, beta float64, c, scratch, keep *tensor.Tensor) error
}

// DropoutProduct is one product of a DropoutGEMMs call:
// C = op(dropout(x))·B + Beta·C.
type DropoutProduct struct {
	B    *tensor.Tensor
	Beta float64
	C    *tensor.Tensor
}

// DropoutGEMMSharer is implemented by backends that run several products
// of the same dropout of x over one masking pass (the cpu backend): a
// layer whose input dropout two matmuls read (GraphSAGE's self and
// neighbour weights) masks each region of x once for both, in the forward
// pass and for the weight gradients. Each product is DropoutGEMM's with
// the same arguments bit for bit; scratch holds at least the largest
// DropoutGEMMScratch of the products, and keep is DropoutGEMM's (a forward
// call records it once). The products' C must not overlap one another or
// x. A backend without it runs DropoutGEMM once per product (the engine
// does), with the same results.
type DropoutGEMMSharer interface {
	DropoutGEMMs(seed uint64, rows *tensor.Tensor, p float64, transX bool, x *tensor.Tensor, prods []DropoutProduct, scratch, keep *tensor.Tensor) error
}

// DropoutKeepWords is the shape of the keep bits of a DropoutGEMM over
// an x of rows × cols: a row of 32-bit words per row of x, bit c % 32 of
// word c / 32 for column c.
func DropoutKeepWords(rows, cols int) []int {
	return []int{rows, (cols + 31) / 32}
}

// DropoutGEMMSlots is how many regions of the masked x a DropoutGEMM holds
// at once (and computes in parallel).
const DropoutGEMMSlots = 4

// GEMMTiles is the fixed tiling of c = op(a)·op(b), c m×n with inner size
// k, that the cpu backend's GEMM runs: tiles of mb×nb elements of c, each
// one single-threaded BLAS call over the whole of k, or, when the grid is
// too small to share out (fewer than 8 tiles) and k is large, kb-slices of
// k over the whole of c (kb < k), summed in slice order. The tiling depends
// only on the shape, so the result does not depend on the thread count.
func GEMMTiles(m, n, k int) (mb, nb, kb int) {
	mb, nb, kb = tileSize(m, 32), tileSize(n, 32), k
	if tiles := ceilDiv(m, mb) * ceilDiv(n, nb); tiles < 8 && k >= 8192 {
		kb = tileSize(k, 256)
	}
	return mb, nb, kb
}

// DropoutGEMMScratch is the scratch (elements) a DropoutGEMM of an m×n
// result with inner size k takes: DropoutGEMMSlots regions of op(x), each
// a row tile of op(x) over the whole of k, or (split k) all m rows over one
// k-slice; never more than x's m·k elements (when all regions fit at once).
func DropoutGEMMScratch(m, n, k int) int {
	mb, _, kb := GEMMTiles(m, n, k)
	region, count := mb*k, ceilDiv(m, mb)
	if kb < k {
		region, count = m*kb, ceilDiv(k, kb)
	}
	if count <= DropoutGEMMSlots {
		return m * k
	}
	return DropoutGEMMSlots * region
}

// tileSize returns the fixed tile edge along a dimension of size x: the
// whole of a small dimension, else about x/32 rounded up to whole blocks.
func tileSize(x, block int) int {
	if x <= 8*block {
		return max(x, 1)
	}
	t := (x + 31) / 32
	return max(8*block, (t+block-1)/block*block)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
