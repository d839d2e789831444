package backend

import "strata/core/tensor"

// HalfStorage is implemented by backends that hold Float16 and BFloat16
// tensors, the 16-bit storage of feature rows (data.feature_dtype), and
// read them as float32 with float32 math:
//
//   - Upload and Download move their bits as []uint16;
//   - Widen writes x (Float16 or BFloat16) into y (Float32, as many
//     elements), exactly;
//   - DropoutGEMM (DropoutGEMMer) takes such an x with float32 b, c and
//     scratch, widening it a region at a time where it masks it, and with
//     p = 0 it is the product by x itself (no mask): a layer's first matmul
//     reads the 16-bit rows without a float32 copy of the input. The
//     result is that of Widen followed by DropoutGEMM, bit for bit.
//
// A backend without it cannot train on 16-bit features: train rejects the
// config naming data.feature_dtype.
type HalfStorage interface {
	DropoutGEMMer
	Widen(x, y *tensor.Tensor) error
}
