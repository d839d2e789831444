//go:build cuda

package cuda

import (
	"fmt"
	"strings"

	"strata/core/tensor"
)

// errf formats an op's error: "cuda: SpMM: ...".
func errf(op, format string, args ...any) error {
	return fmt.Errorf("cuda: %s: %s", op, fmt.Sprintf(format, args...))
}

// live returns t's buffer when t is a live cuda tensor.
func live(op, name string, t *tensor.Tensor) (*buffer, error) {
	if t == nil {
		return nil, errf(op, "%s is nil", name)
	}
	bf, ok := t.Buffer().(*buffer)
	if !ok || bf == nil {
		return nil, errf(op, "%s is not a cuda tensor (it lives in tier %q of another backend)", name, t.Tier())
	}
	if bf.released {
		return nil, errf(op, "%s was released", name)
	}
	return bf, nil
}

// floatArgs checks that every tensor is live and that all share one float
// dtype, which it returns. Tiers may differ: kernels read pinned host
// memory in place.
func floatArgs(op, names string, ts ...*tensor.Tensor) (tensor.DType, error) {
	ns := strings.Fields(names)
	var dt tensor.DType
	for i, t := range ts {
		if _, err := live(op, ns[i], t); err != nil {
			return 0, err
		}
		if !t.DType().IsFloat() {
			return 0, errf(op, "%s is %v, want float32 or float64", ns[i], t.DType())
		}
		if i == 0 {
			dt = t.DType()
		} else if t.DType() != dt {
			return 0, errf(op, "%s is %v but %s is %v", ns[i], t.DType(), ns[0], dt)
		}
	}
	return dt, nil
}

// sameArgs checks that every tensor is live and that all share one dtype
// (float or index), which it returns.
func sameArgs(op, names string, ts ...*tensor.Tensor) (tensor.DType, error) {
	ns := strings.Fields(names)
	for i, t := range ts {
		if _, err := live(op, ns[i], t); err != nil {
			return 0, err
		}
		if t.DType() != ts[0].DType() {
			return 0, errf(op, "%s is %v but %s is %v", ns[i], t.DType(), ns[0], ts[0].DType())
		}
	}
	return ts[0].DType(), nil
}

// intArg checks that t is a live Int32 or Int64 tensor.
func intArg(op, name string, t *tensor.Tensor) error {
	if _, err := live(op, name, t); err != nil {
		return err
	}
	if dt := t.DType(); dt != tensor.Int32 && dt != tensor.Int64 {
		return errf(op, "%s is %v, want int32 or int64", name, dt)
	}
	return nil
}

// dims checks that t is rows×cols (a rank-1 tensor counts as n×1).
func dims(op, name string, t *tensor.Tensor, rows, cols int) error {
	if t.Rows() != rows || t.Cols() != cols {
		return errf(op, "%s has shape %v, want [%d,%d]", name, t.Shape(), rows, cols)
	}
	return nil
}

// numel checks that t holds n elements.
func numel(op, name string, t *tensor.Tensor, n int) error {
	if t.Numel() != n {
		return errf(op, "%s has shape %v (%d elements), want %d elements", name, t.Shape(), t.Numel(), n)
	}
	return nil
}

// sfx is a kernel name suffix: f32, f64, i32 or i64.
func sfx(dt tensor.DType) string {
	switch dt {
	case tensor.Float32:
		return "f32"
	case tensor.Float64:
		return "f64"
	case tensor.Int32:
		return "i32"
	}
	return "i64"
}

// ptr returns a tensor's device-visible address (0 for nil).
func ptr(t *tensor.Tensor) uintptr {
	if t == nil {
		return 0
	}
	return t.Buffer().(*buffer).ptr
}
