// Package tensor defines backend-neutral tensor handles: a dtype, a shape and
// a buffer owned by a backend in a named memory tier. Engine code only ever
// holds these handles; the numbers live wherever the backend put them.
package tensor

import (
	"fmt"
	"strings"
)

// DType is the element type of a tensor.
type DType uint8

// Supported element types.
const (
	Float32 DType = iota + 1
	Float64
	Int32
	Int64
	// Float16 and BFloat16 are storage types: 16-bit floats that hold
	// feature rows in half the bytes (data.feature_dtype). No kernel
	// computes in them; readers widen them to float32 (see half.go).
	Float16
	BFloat16
)

// Size returns the element size in bytes.
func (d DType) Size() int {
	switch d {
	case Float32, Int32:
		return 4
	case Float64, Int64:
		return 8
	case Float16, BFloat16:
		return 2
	}
	return 0
}

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool { return d == Float32 || d == Float64 }

// IsHalf reports whether d is a 16-bit storage float (Float16, BFloat16).
func (d DType) IsHalf() bool { return d == Float16 || d == BFloat16 }

// Short returns the short name used in kernel and test names: f32, f64,
// i32 or i64.
func (d DType) Short() string {
	switch d {
	case Float32:
		return "f32"
	case Float64:
		return "f64"
	case Int32:
		return "i32"
	case Int64:
		return "i64"
	case Float16:
		return "f16"
	case BFloat16:
		return "bf16"
	}
	return d.String()
}

func (d DType) String() string {
	switch d {
	case Float32:
		return "float32"
	case Float64:
		return "float64"
	case Int32:
		return "int32"
	case Int64:
		return "int64"
	case Float16:
		return "float16"
	case BFloat16:
		return "bfloat16"
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// Tier names a memory tier: "host", "device0", "device1", ...
type Tier string

// Host is the tier of ordinary host memory.
const Host Tier = "host"

// Buffer is backend-owned storage. Backends type-assert their own buffers.
type Buffer interface {
	Tier() Tier
}

// Tensor is a dense row-major tensor of rank 1 or 2 held by a backend.
type Tensor struct {
	dtype DType
	shape []int
	buf   Buffer
}

// New wraps a backend buffer. Only backends call it.
func New(dt DType, shape []int, buf Buffer) *Tensor {
	return &Tensor{dtype: dt, shape: append([]int(nil), shape...), buf: buf}
}

// DType returns the element type.
func (t *Tensor) DType() DType { return t.dtype }

// Shape returns the dimensions; callers must not modify it.
func (t *Tensor) Shape() []int { return t.shape }

// Buffer returns the backend storage.
func (t *Tensor) Buffer() Buffer { return t.buf }

// Tier returns the memory tier holding the data.
func (t *Tensor) Tier() Tier { return t.buf.Tier() }

// Rows returns the first dimension (1 for a scalar).
func (t *Tensor) Rows() int {
	if len(t.shape) == 0 {
		return 1
	}
	return t.shape[0]
}

// Cols returns the product of all dimensions after the first, or 1 for rank 1.
func (t *Tensor) Cols() int {
	c := 1
	for _, d := range t.shape[min(1, len(t.shape)):] {
		c *= d
	}
	return c
}

// Numel returns the number of elements.
func (t *Tensor) Numel() int {
	n := 1
	for _, d := range t.shape {
		n *= d
	}
	return n
}

// Bytes returns the storage size in bytes.
func (t *Tensor) Bytes() int64 { return int64(t.Numel()) * int64(t.dtype.Size()) }

func (t *Tensor) String() string {
	parts := make([]string, len(t.shape))
	for i, d := range t.shape {
		parts[i] = fmt.Sprint(d)
	}
	return fmt.Sprintf("%s[%s]@%s", t.dtype, strings.Join(parts, ","), t.Tier())
}

// SameShape reports whether a and b have identical shapes.
func SameShape(a, b *Tensor) bool {
	if len(a.shape) != len(b.shape) {
		return false
	}
	for i := range a.shape {
		if a.shape[i] != b.shape[i] {
			return false
		}
	}
	return true
}
