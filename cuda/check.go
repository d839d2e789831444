//go:build cuda

package cuda

import (
	"fmt"
	"strings"

	"strata/core/backend/argcheck"
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
	if err := liveAll(op, names, ts...); err != nil {
		return 0, err
	}
	dt, err := argcheck.Floats(op, names, ts...)
	return dt, wrap(err)
}

// liveAll checks that every tensor is a live cuda tensor.
func liveAll(op, names string, ts ...*tensor.Tensor) error {
	for i, n := range strings.Fields(names) {
		if _, err := live(op, n, ts[i]); err != nil {
			return err
		}
	}
	return nil
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
	return fmt.Errorf("cuda: %w", err)
}

// ptr returns a tensor's device-visible address (0 for nil).
func ptr(t *tensor.Tensor) uintptr {
	if t == nil {
		return 0
	}
	return t.Buffer().(*buffer).ptr
}
