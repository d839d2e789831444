package cpu

import (
	"fmt"
	"sync"
	"unsafe"

	"strata/core/backend"
	"strata/core/tensor"
)

// maxElems bounds one allocation (2^40 elements) so absurd shapes are errors.
const maxElems = 1 << 40

// buffer is host storage; exactly one of the slices is set.
type buffer struct {
	f32      []float32
	f64      []float64
	i32      []int32
	i64      []int64
	u16      []uint16 // Float16 or BFloat16 bits (feature storage)
	owner    *Backend
	bytes    int64
	released bool

	// wrapped marks WrapHost's buffers, which nothing writes; nz is then
	// the index of their non-zero elements (sparserows.go), built once
	// under nzOnce (nil when too dense).
	wrapped bool
	nzOnce  sync.Once
	nz      *sparseRows

	// region is the pooled storage behind the slice (AllocRecycled),
	// returned to the pool by Release; nil for Go slices.
	region []byte
}

// Tier returns tensor.Host.
func (bf *buffer) Tier() tensor.Tier { return tensor.Host }

// ptr returns the address of the first element, or nil when empty.
func (bf *buffer) ptr() unsafe.Pointer {
	switch {
	case len(bf.f32) > 0:
		return unsafe.Pointer(&bf.f32[0])
	case len(bf.f64) > 0:
		return unsafe.Pointer(&bf.f64[0])
	case len(bf.i32) > 0:
		return unsafe.Pointer(&bf.i32[0])
	case len(bf.i64) > 0:
		return unsafe.Pointer(&bf.i64[0])
	case len(bf.u16) > 0:
		return unsafe.Pointer(&bf.u16[0])
	}
	return nil
}

func hostBuf(t *tensor.Tensor) *buffer {
	if t == nil {
		return nil
	}
	bf, _ := t.Buffer().(*buffer)
	if bf == nil || bf.released {
		return nil
	}
	return bf
}

// elems is the part of a buffer's storage that is t's elements: all of it,
// or its first elements for a view of the leading rows (tensor.Prefix).
func elems[T any](s []T, t *tensor.Tensor) []T {
	return s[:min(len(s), t.Numel())]
}

// F32 returns the storage of a live cpu Float32 tensor, or nil. It is for
// other backends and tests; engine code never touches raw slices.
func F32(t *tensor.Tensor) []float32 {
	if bf := hostBuf(t); bf != nil {
		return elems(bf.f32, t)
	}
	return nil
}

// F64 returns the storage of a live cpu Float64 tensor, or nil.
func F64(t *tensor.Tensor) []float64 {
	if bf := hostBuf(t); bf != nil {
		return elems(bf.f64, t)
	}
	return nil
}

// I32 returns the storage of a live cpu Int32 tensor, or nil.
func I32(t *tensor.Tensor) []int32 {
	if bf := hostBuf(t); bf != nil {
		return elems(bf.i32, t)
	}
	return nil
}

// I64 returns the storage of a live cpu Int64 tensor, or nil.
func I64(t *tensor.Tensor) []int64 {
	if bf := hostBuf(t); bf != nil {
		return elems(bf.i64, t)
	}
	return nil
}

// U16 returns the bits of a live cpu Float16 or BFloat16 tensor, or nil.
func U16(t *tensor.Tensor) []uint16 {
	if bf := hostBuf(t); bf != nil {
		return elems(bf.u16, t)
	}
	return nil
}

// allocCheck checks an allocation's tier and shape and returns its
// element count.
func allocCheck(dt tensor.DType, shape []int, tier tensor.Tier) (int64, error) {
	if err := tierErr("Alloc", tier); err != nil {
		return 0, err
	}
	if len(shape) < 1 || len(shape) > 2 {
		return 0, errf("Alloc", "rank %d shape %v, want rank 1 or 2", len(shape), shape)
	}
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, errf("Alloc", "negative dimension in shape %v", shape)
		}
		if d > 0 && n > maxElems/int64(d) { // checked before multiplying: no overflow
			return 0, errf("Alloc", "shape %v has more than 2^40 elements", shape)
		}
		n *= int64(d)
	}
	switch dt {
	case tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Float16, tensor.BFloat16:
		return n, nil
	}
	return 0, errf("Alloc", "unknown dtype %v", dt)
}

// Alloc returns a zero-filled tensor of rank 1 or 2 in a tier.
func (b *Backend) Alloc(dt tensor.DType, shape []int, tier tensor.Tier) (*tensor.Tensor, error) {
	n, err := allocCheck(dt, shape, tier)
	if err != nil {
		return nil, err
	}
	bf := &buffer{owner: b, bytes: n * int64(dt.Size())}
	if err := b.reserve(bf.bytes, fmt.Sprintf("a %v tensor of shape %v", dt, shape)); err != nil {
		return nil, err
	}
	switch dt {
	case tensor.Float32:
		bf.f32 = make([]float32, n)
	case tensor.Float64:
		bf.f64 = make([]float64, n)
	case tensor.Int32:
		bf.i32 = make([]int32, n)
	case tensor.Int64:
		bf.i64 = make([]int64, n)
	case tensor.Float16, tensor.BFloat16:
		bf.u16 = make([]uint16, n)
	}
	return tensor.New(dt, shape, bf), nil
}

// WrapHost returns a host-tier Float32 tensor that uses v in place, without
// copying or counting it (the caller owns the memory: a slice, or features
// mapped from a file, which then stay in the page cache). Kernels may read
// it; nothing strata runs writes to a wrapped tensor (a fused
// dropout-matmul indexes its non-zero elements once: sparserows.go), and
// Release leaves v alone.
func (b *Backend) WrapHost(v []float32, shape []int) (*tensor.Tensor, error) {
	if !wrapFits(len(v), shape) {
		return nil, errf("WrapHost", "%d values for shape %v", len(v), shape)
	}
	return tensor.New(tensor.Float32, shape, &buffer{f32: v, owner: b, wrapped: true}), nil
}

// RowView returns rows [lo, hi) of a live rank-2 tensor t on t's
// storage (backend.RowViewer): writing the view writes t. It holds no
// memory of its own; Release leaves t alone.
func (b *Backend) RowView(t *tensor.Tensor, lo, hi int) (*tensor.Tensor, error) {
	bf := hostBuf(t)
	if bf == nil || len(t.Shape()) != 2 || lo < 0 || hi < lo || hi > t.Rows() {
		return nil, errf("RowView", "rows [%d, %d) of a tensor of shape %v", lo, hi, t.Shape())
	}
	c := t.Cols()
	v := &buffer{}
	switch {
	case bf.f32 != nil:
		v.f32 = bf.f32[lo*c : hi*c]
	case bf.f64 != nil:
		v.f64 = bf.f64[lo*c : hi*c]
	case bf.i32 != nil:
		v.i32 = bf.i32[lo*c : hi*c]
	case bf.i64 != nil:
		v.i64 = bf.i64[lo*c : hi*c]
	default:
		v.u16 = bf.u16[lo*c : hi*c]
	}
	return tensor.New(t.DType(), []int{hi - lo, c}, v), nil
}

// wrapFits reports whether n values fill a rank 1 or 2 shape.
func wrapFits(n int, shape []int) bool {
	m := 1
	for _, d := range shape {
		m *= d
	}
	return len(shape) >= 1 && len(shape) <= 2 && m == n
}

// WrapHostHalf is WrapHost for 16-bit feature rows (dt Float16 or
// BFloat16, v their bits).
func (b *Backend) WrapHostHalf(dt tensor.DType, v []uint16, shape []int) (*tensor.Tensor, error) {
	if !dt.IsHalf() || !wrapFits(len(v), shape) {
		return nil, errf("WrapHostHalf", "%d %v values for shape %v", len(v), dt, shape)
	}
	return tensor.New(dt, shape, &buffer{u16: v, owner: b}), nil
}

// reserve accounts bytes, failing with a *backend.OutOfMemoryError when
// they exceed the capacity.
func (b *Backend) reserve(bytes int64, what string) error {
	m := b.mem
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := b.overCapacityLocked(bytes, what); err != nil {
		return err
	}
	if c := b.capacity; c > 0 && m.inUse+m.pool.stats.Free+bytes > c {
		m.trimLocked() // live plus pooled bytes stay within the capacity
	}
	m.inUse += bytes
	m.peak = max(m.peak, m.inUse)
	return nil
}

// overCapacityLocked returns a *backend.OutOfMemoryError when bytes more
// would exceed the capacity. The caller holds b.mem.mu.
func (b *Backend) overCapacityLocked(bytes int64, what string) error {
	if c := b.capacity; c > 0 && b.mem.inUse+bytes > c {
		return &backend.OutOfMemoryError{Backend: "cpu", Tier: tensor.Host, What: what, Bytes: bytes, InUse: b.mem.inUse, Capacity: c}
	}
	return nil
}

// account adds delta bytes to the use and updates its peak.
func (b *Backend) account(delta int64) {
	m := b.mem
	m.mu.Lock()
	m.inUse += delta
	m.peak = max(m.peak, m.inUse)
	m.mu.Unlock()
}

// Release frees t's storage. Releasing twice, nil or a foreign tensor is a no-op.
func (b *Backend) Release(t *tensor.Tensor) {
	bf := hostBuf(t)
	if bf == nil {
		return
	}
	bf.released = true
	bf.f32, bf.f64, bf.i32, bf.i64, bf.u16 = nil, nil, nil, nil, nil
	if bf.owner == nil {
		return
	}
	m := bf.owner.mem
	m.mu.Lock()
	m.inUse -= bf.bytes
	if bf.region != nil {
		m.put(bf.region)
		bf.region = nil
	}
	m.mu.Unlock()
}

// ResetPeak starts a new peak measurement: the peak becomes the current
// use. A caller measures one phase (a training step, an evaluation) by
// resetting before it and reading Stats after.
func (b *Backend) ResetPeak() {
	m := b.mem
	m.mu.Lock()
	defer m.mu.Unlock()
	m.peak = m.inUse
}

// Stats reports the memory in use and its peak, tensors, graphs and
// scratch together, under tensor.Host.
func (b *Backend) Stats() backend.Stats {
	m := b.mem
	m.mu.Lock()
	defer m.mu.Unlock()
	return backend.Stats{InUse: map[tensor.Tier]int64{tensor.Host: m.inUse}, Peak: map[tensor.Tier]int64{tensor.Host: m.peak}}
}

// Upload copies a host slice of matching type and length into t.
func (b *Backend) Upload(t *tensor.Tensor, src any) error {
	bf, err := live("Upload", "t", t)
	if err != nil {
		return err
	}
	switch s := src.(type) {
	case []float32:
		if t.DType() == tensor.Float32 && len(s) == len(bf.f32) {
			copy(bf.f32, s)
			return nil
		}
	case []float64:
		if t.DType() == tensor.Float64 && len(s) == len(bf.f64) {
			copy(bf.f64, s)
			return nil
		}
	case []int32:
		if t.DType() == tensor.Int32 && len(s) == len(bf.i32) {
			copy(bf.i32, s)
			return nil
		}
	case []int64:
		if t.DType() == tensor.Int64 && len(s) == len(bf.i64) {
			copy(bf.i64, s)
			return nil
		}
	case []uint16:
		if t.DType().IsHalf() && len(s) == len(bf.u16) {
			copy(bf.u16, s)
			return nil
		}
	}
	return errf("Upload", "source %s does not match %v", describe(src), t)
}

// Download copies t into a host slice of matching type and length.
func (b *Backend) Download(t *tensor.Tensor, dst any) error {
	bf, err := live("Download", "t", t)
	if err != nil {
		return err
	}
	switch d := dst.(type) {
	case []float32:
		if t.DType() == tensor.Float32 && len(d) == len(bf.f32) {
			copy(d, bf.f32)
			return nil
		}
	case []float64:
		if t.DType() == tensor.Float64 && len(d) == len(bf.f64) {
			copy(d, bf.f64)
			return nil
		}
	case []int32:
		if t.DType() == tensor.Int32 && len(d) == len(bf.i32) {
			copy(d, bf.i32)
			return nil
		}
	case []int64:
		if t.DType() == tensor.Int64 && len(d) == len(bf.i64) {
			copy(d, bf.i64)
			return nil
		}
	case []uint16:
		if t.DType().IsHalf() && len(d) == len(bf.u16) {
			copy(d, bf.u16)
			return nil
		}
	}
	return errf("Download", "destination %s does not match %v", describe(dst), t)
}

// Copy copies src into dst; both must have the same dtype and element count.
func (b *Backend) Copy(dst, src *tensor.Tensor) error {
	if err := chk.Copy(dst, src); err != nil {
		return err
	}
	db, sb := dst.Buffer().(*buffer), src.Buffer().(*buffer)
	copy(db.f32, sb.f32)
	copy(db.f64, sb.f64)
	copy(db.i32, sb.i32)
	copy(db.i64, sb.i64)
	copy(db.u16, sb.u16)
	return nil
}

func describe(v any) string {
	switch s := v.(type) {
	case []float32:
		return fmt.Sprintf("[]float32 of length %d", len(s))
	case []float64:
		return fmt.Sprintf("[]float64 of length %d", len(s))
	case []int32:
		return fmt.Sprintf("[]int32 of length %d", len(s))
	case []int64:
		return fmt.Sprintf("[]int64 of length %d", len(s))
	case []uint16:
		return fmt.Sprintf("[]uint16 of length %d", len(s))
	}
	return fmt.Sprintf("%T", v)
}
