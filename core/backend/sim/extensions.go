package sim

import "strata/core/tensor"

// extensions are the optional kernels of the inner backend that the
// engine finds by type assertion; the generated wrapper offers and prices
// them too (wrap_gen.go).
type extensions interface {
	// DropoutApply builds the dropout mask and applies it in one pass
	// (see cpu.Backend.DropoutApply).
	DropoutApply(seed uint64, p float64, x, mask, y *tensor.Tensor) error
}
