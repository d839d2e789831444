package steprun

import (
	"strata/core/backend"
	"strata/core/graph"
	"strata/core/tensor"
	"strata/core/train"
)

// hostWrapper is a backend that can use host float32 memory in place
// (cpu.Backend.WrapHost).
type hostWrapper interface {
	WrapHost(v []float32, shape []int) (*tensor.Tensor, error)
}

// PlaceFeatures puts the feature matrix on the backend: in place when it
// stays in host memory as float32 and the backend can use host memory
// (the dataset's copy, often mapped from the dataset file, is then the
// only one), else as an uploaded copy.
func PlaceFeatures(be backend.Backend, v []float32, shape []int, dt tensor.DType, tier tensor.Tier) (*tensor.Tensor, error) {
	return PlaceRows(be, FeatRows{F32: v}, 0, shape, dt, tier)
}

// hostWrapperHalf is a backend that can use host 16-bit rows in place
// (cpu.Backend.WrapHostHalf).
type hostWrapperHalf interface {
	WrapHostHalf(dt tensor.DType, v []uint16, shape []int) (*tensor.Tensor, error)
}

// FeatRows are feature rows on the host: float32 (f32), or the bits of
// 16-bit rows (u16, data.feature_dtype), or their entries (rows of
// Env.Entries, entries.go).
type FeatRows struct {
	F32     []float32
	u16     []uint16
	entries *graph.CSR
}

func (h FeatRows) empty() bool { return h.F32 == nil && h.u16 == nil && h.entries == nil }

// RowSource serves feature rows from outside memory (the disk tier,
// core/diskrows): the float32 rows of ids, len(ids)×dim.
type RowSource interface {
	Gather(ids []int32) ([]float32, error)
}

// GatherInput copies the feature rows of ids on the host, in their
// storage (their entries when the run holds the features sparse,
// e.Entries), or reads them from e.Disk when the run has a disk tier.
func (e Env) GatherInput(ids []int32) (FeatRows, error) {
	if e.Entries != nil {
		return FeatRows{entries: GatherEntries(e.Entries, ids)}, nil
	}
	if e.Disk != nil {
		v, err := e.Disk.Gather(ids)
		return FeatRows{F32: v}, err
	}
	if e.Half != 0 {
		return FeatRows{u16: GatherRows(e.feats16, e.Dim, ids)}, nil
	}
	return FeatRows{F32: GatherRows(e.Feats, e.Dim, ids)}, nil
}

// RowRange returns the feature rows of the nodes [lo, hi) without a copy,
// false when the run reads its rows from disk.
func (e Env) RowRange(lo, hi int) (FeatRows, bool) {
	switch {
	case e.Disk != nil:
		return FeatRows{}, false
	case e.Half != 0:
		return FeatRows{u16: e.feats16[lo*e.Dim : hi*e.Dim]}, true
	}
	return FeatRows{F32: e.Feats[lo*e.Dim : hi*e.Dim]}, true
}

// AllRows is the whole feature matrix in its storage.
func (e Env) AllRows() FeatRows { return FeatRows{F32: e.Feats, u16: e.feats16} }

// PlaceRows puts feature rows on the backend: 16-bit rows (half, the
// storage of data.feature_dtype) as a tensor of that dtype, float32 rows as
// placeFeatures does; in place where the backend can use host memory.
func PlaceRows(be backend.Backend, v FeatRows, half tensor.DType, shape []int, dt tensor.DType, tier tensor.Tier) (*tensor.Tensor, error) {
	if half != 0 {
		if w, ok := be.(hostWrapperHalf); ok && tier == tensor.Host {
			return w.WrapHostHalf(half, v.u16, shape)
		}
		return uploadRows(be, v, half, shape, dt, tier)
	}
	v32 := v.F32
	if w, ok := be.(hostWrapper); ok && dt == tensor.Float32 && tier == tensor.Host {
		return w.WrapHost(v32, shape)
	}
	return train.UploadFloat32s(be, v32, shape, dt, tier)
}

// uploadRows copies host feature rows into a new tensor (16-bit rows as a
// tensor of their dtype, half; float32 rows in the run's dtype).
func uploadRows(be backend.Backend, v FeatRows, half tensor.DType, shape []int, dt tensor.DType, tier tensor.Tier) (*tensor.Tensor, error) {
	if half == 0 {
		return train.UploadFloat32s(be, v.F32, shape, dt, tier)
	}
	t, err := be.Alloc(half, shape, tier)
	if err != nil {
		return nil, err
	}
	if err := be.Upload(t, v.u16); err != nil {
		be.Release(t)
		return nil, err
	}
	return t, nil
}
