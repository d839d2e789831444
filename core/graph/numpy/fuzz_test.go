package numpy

import (
	"bytes"
	"testing"
)

// FuzzNPY feeds arbitrary bytes to the .npy reader: it may not panic, hang
// or allocate beyond what the input can justify; errors are expected.
func FuzzNPY(f *testing.F) {
	f.Add(npyOf([]float32{1, 2, 3, 4}, 2, 2))
	f.Add(npyOf([]int64{0, 1, 1, 2}, 2, 2))
	f.Add(npyFile(1, "<f8", false, []int{1 << 40}, nil))
	f.Add(npyRaw(2, "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", leBytes([]int32{1, 2, 3})))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _, _ = readNPY(bytes.NewReader(data), int64(len(data)), "fuzz.npy", 64<<20)
	})
}
