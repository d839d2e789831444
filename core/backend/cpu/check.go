package cpu

import (
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

// chk checks the operands of every op (see argcheck.Checker).
var chk = argcheck.Checker[*Graph]{Name: "cpu", Live: liveErr, Graph: graphArg}

// liveErr checks that t is a live cpu tensor.
func liveErr(op, name string, t *tensor.Tensor) error {
	_, err := live(op, name, t)
	return err
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
	if err := int32sIn(op, name, bf.i32, lo, hi); err != nil {
		return err
	}
	for i, v := range bf.i64 {
		if v < lo || v >= hi {
			return bad(i, v)
		}
	}
	return nil
}

// int32sIn checks that every index of idx lies in [lo, hi).
func int32sIn(op, name string, idx []int32, lo, hi int64) error {
	for i, v := range idx {
		if int64(v) < lo || int64(v) >= hi {
			return errf(op, "%s[%d] = %d is outside [%d,%d)", name, i, v, lo, hi)
		}
	}
	return nil
}
