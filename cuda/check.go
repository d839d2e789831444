//go:build cuda

package cuda

import (
	"fmt"

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
	if t.Buffer() == nil { // as the cpu backend says (Tier would panic)
		return nil, errf(op, "%s has no storage", name)
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

// liveErr checks that t is a live cuda tensor.
func liveErr(op, name string, t *tensor.Tensor) error {
	_, err := live(op, name, t)
	return err
}

// ptr returns a tensor's device-visible address (0 for nil).
func ptr(t *tensor.Tensor) uintptr {
	if t == nil {
		return 0
	}
	return t.Buffer().(*buffer).ptr
}
