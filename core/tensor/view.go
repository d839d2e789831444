package tensor

import "fmt"

// View returns a tensor of the given shape on t's storage, which must hold
// exactly as many elements: two views of one buffer are one tensor to the
// backend (writing one writes the other). The engine's buffer plan uses it
// to give values whose lifetimes do not overlap one buffer.
func View(t *Tensor, shape []int) (*Tensor, error) {
	v := &Tensor{dtype: t.dtype, shape: append([]int(nil), shape...), buf: t.buf}
	if v.Numel() != t.Numel() {
		return nil, fmt.Errorf("tensor: a view of shape %v (%d elements) on %d elements", shape, v.Numel(), t.Numel())
	}
	return v, nil
}

// Prefix returns the first rows rows of t on t's storage: the leading
// rows of a row-major tensor are a prefix of its elements. Writing the
// prefix writes t. The engine uses it for ops that read only the
// destination rows of a block's source-row value (a root term x_v·W).
func Prefix(t *Tensor, rows int) (*Tensor, error) {
	if t == nil {
		return nil, nil
	}
	if len(t.shape) == 0 || rows < 0 || rows > t.shape[0] {
		return nil, fmt.Errorf("tensor: a prefix of %d rows of a tensor of shape %v", rows, t.shape)
	}
	shape := append([]int{rows}, t.shape[1:]...)
	return &Tensor{dtype: t.dtype, shape: shape, buf: t.buf}, nil
}
