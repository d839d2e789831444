package cpu

import (
	"strings"
	"testing"

	"strata/core/tensor"
)

// TestAllocOverflow checks that shapes whose element count overflows int64
// are errors, not a makeslice panic or a zero-element tensor.
func TestAllocOverflow(t *testing.T) {
	be := New(Options{Threads: 1})
	for _, shape := range [][]int{
		{3, 3074457345618258603},
		{1 << 32, 1 << 32},
		{1 << 62, 4},
		{1 << 41},
	} {
		_, err := be.Alloc(tensor.Float32, shape, tensor.Host)
		if err == nil || !strings.Contains(err.Error(), "more than 2^40 elements") {
			t.Errorf("Alloc(%v): err = %v, want a size error", shape, err)
		}
	}
}
