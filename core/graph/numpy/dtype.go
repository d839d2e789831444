package numpy

import (
	"math"
	"unsafe"

	"strata/core/graph"
)

// npyDtype is one numpy dtype the loaders read: its element size and how
// to allocate count elements (the typed slice and its bytes, which the
// file's little-endian data fills). npy.go, npz.go and the pickled arrays
// of npzpickle.go share this one table.
type npyDtype struct {
	size  int64
	alloc func(count int64) (any, []byte)
	// lone: also read from a lone .npy file (LoadNPYDir's arrays).
	lone bool
}

// asBytes returns the memory of s as bytes.
func asBytes[T any](s []T) []byte {
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(zero)))
}

// allocOf returns an npyDtype.alloc for element type T.
func allocOf[T any]() func(int64) (any, []byte) {
	return func(count int64) (any, []byte) {
		s := make([]T, count)
		return s, asBytes(s)
	}
}

// npyDtypes maps a .npy 'descr' to its dtype.
var npyDtypes = map[string]npyDtype{
	"<f4": {4, allocOf[float32](), true},
	"<f8": {8, allocOf[float64](), true},
	"<i4": {4, allocOf[int32](), true},
	"<i8": {8, allocOf[int64](), true},
	"|b1": {1, allocOf[bool](), true},
	"|u1": {1, allocOf[uint8](), false},
	"|i1": {1, allocOf[int8](), false},
}

// npyCount returns the element count of shape; a negative dimension or
// an overflowing count is an error naming file and, before the header
// field, what ("array \"x\": " or "").
func npyCount(file, what string, shape []int) (int64, error) {
	count := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, graph.FileErrorf(graph.ErrFormat, file, 0, 0, "%sheader field 'shape': negative dimension %d", what, d)
		}
		if d > 0 && count > (math.MaxInt64/8)/int64(d) {
			return 0, graph.FileErrorf(graph.ErrRange, file, 0, 0, "%sheader field 'shape': %v has too many elements", what, shape)
		}
		count *= int64(d)
	}
	return count, nil
}

// finishNPY checks bool bytes and swaps the little-endian file order to
// the host's. It returns the index of a bad bool element and its value,
// or -1.
func finishNPY(descr string, raw []byte, elem int64) (int, byte) {
	if descr == "|b1" {
		for i, b := range raw {
			if b > 1 {
				return i, b
			}
		}
	} else if elem > 1 && !graph.LittleEndianHost() {
		swapBytes(raw, int(elem))
	}
	return -1, 0
}
