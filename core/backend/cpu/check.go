package cpu

import (
	"fmt"
	"strings"

	"strata/core/backend/argcheck"
	"strata/core/tensor"
)

// live returns t's buffer when t is a live cpu tensor.
func live(op, name string, t *tensor.Tensor) (*buffer, error) {
	if t == nil {
		return nil, errf(op, "%s is nil", name)
	}
	if t.Buffer() == nil {
		return nil, errf(op, "%s has no storage", name)
	}
	bf, ok := t.Buffer().(*buffer)
	if !ok {
		return nil, errf(op, "%s is not a cpu tensor (it lives in tier %q)", name, t.Tier())
	}
	if bf.released {
		return nil, errf(op, "%s was released", name)
	}
	return bf, nil
}

// floatArgs checks that every tensor is live and that all share one float
// dtype, which it returns. names lists the tensors' names, space-separated.
func floatArgs(op, names string, ts ...*tensor.Tensor) (tensor.DType, error) {
	ns := strings.Fields(names)
	for i, t := range ts {
		if _, err := live(op, ns[i], t); err != nil {
			return 0, err
		}
	}
	dt, err := argcheck.Floats(op, names, ts...)
	return dt, wrap(err)
}

// intArg checks that t is a live Int32 or Int64 tensor.
func intArg(op, name string, t *tensor.Tensor) error {
	if _, err := live(op, name, t); err != nil {
		return err
	}
	return wrap(argcheck.Int(op, name, t))
}

// dims checks that t is rows×cols (a rank-1 tensor counts as n×1).
func dims(op, name string, t *tensor.Tensor, rows, cols int) error {
	return wrap(argcheck.Dims(op, name, t, rows, cols))
}

// numel checks that t holds n elements.
func numel(op, name string, t *tensor.Tensor, n int) error {
	return wrap(argcheck.Numel(op, name, t, n))
}

// wrap prefixes an argcheck error with the backend's name.
func wrap(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("cpu: %w", err)
}

// dtCode and itCode are the C kernels' type codes (see kernels.h).
func dtCode(dt tensor.DType) int {
	if dt == tensor.Float64 {
		return 1
	}
	return 0
}

func itCode(dt tensor.DType) int {
	if dt == tensor.Int64 {
		return 1
	}
	return 0
}

// checkRange reports the first index outside [lo, hi) in an Int32 or Int64 tensor.
func checkRange(op, name string, t *tensor.Tensor, lo, hi int64) error {
	bf := t.Buffer().(*buffer)
	bad := func(i int, v int64) error {
		return errf(op, "%s[%d] = %d is outside [%d,%d)", name, i, v, lo, hi)
	}
	for i, v := range bf.i32 {
		if int64(v) < lo || int64(v) >= hi {
			return bad(i, int64(v))
		}
	}
	for i, v := range bf.i64 {
		if v < lo || v >= hi {
			return bad(i, v)
		}
	}
	return nil
}

// splitName returns the i-th of the space-separated names.
func splitName(names string, i int) string { return strings.Fields(names)[i] }
