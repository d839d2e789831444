package strategy

import (
	"strata/core/backend"
	"strata/core/tensor"
	"strata/core/train"
)

// hostWrapper is a backend that can use host float32 memory in place
// (cpu.Backend.WrapHost).
type hostWrapper interface {
	WrapHost(v []float32, shape []int) (*tensor.Tensor, error)
}

// placeFeatures puts the feature matrix on the backend: in place when it
// stays in host memory as float32 and the backend can use host memory
// (the dataset's copy, often mapped from the dataset file, is then the
// only one), else as an uploaded copy.
func placeFeatures(be backend.Backend, v []float32, shape []int, dt tensor.DType, tier tensor.Tier) (*tensor.Tensor, error) {
	if w, ok := be.(hostWrapper); ok && dt == tensor.Float32 && tier == tensor.Host {
		return w.WrapHost(v, shape)
	}
	return train.UploadFloat32s(be, v, shape, dt, tier)
}
