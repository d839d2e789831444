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
