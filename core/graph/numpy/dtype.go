package numpy

import (
	"io"
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
	"<f4": {4, allocOf[float32]()},
	"<f8": {8, allocOf[float64]()},
	"|i1": {1, allocOf[int8]()},
	"<i2": {2, allocOf[int16]()},
	"<i4": {4, allocOf[int32]()},
	"<i8": {8, allocOf[int64]()},
	"|u1": {1, allocOf[uint8]()},
	"<u2": {2, allocOf[uint16]()},
	"<u4": {4, allocOf[uint32]()},
	"<u8": {8, allocOf[uint64]()},
	"|b1": {1, allocOf[bool]()},
}

// npyDtypeNames lists the dtypes of npyDtypes for error messages.
const npyDtypeNames = "float32/64, int8/16/32/64, uint8/16/32/64 or bool (little-endian)"

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

// readData reads the data of an array of shape into raw (elem bytes an
// element) from r. A Fortran-order array (fortran_order: True, first index
// fastest) is transposed while it is read, piece by piece, into the
// row-major (C) order strata uses: no second copy of the array is made.
func readData(r io.Reader, raw []byte, shape []int, elem int64, fortran bool) error {
	if !fortran || len(shape) < 2 {
		_, err := io.ReadFull(r, raw)
		return err
	}
	k := len(shape)
	stride := make([]int64, k) // C-order stride of each dimension, in bytes
	stride[k-1] = elem
	for d := k - 2; d >= 0; d-- {
		stride[d] = stride[d+1] * int64(shape[d+1])
	}
	idx := make([]int, k)
	var off int64 // C-order byte offset of idx
	buf := make([]byte, min(int64(len(raw)), (64<<10)*elem))
	for done := int64(0); done < int64(len(raw)); {
		n, err := io.ReadFull(r, buf[:min(int64(len(buf)), int64(len(raw))-done)])
		if err != nil {
			return err
		}
		done += int64(n)
		for p := 0; p < n; p += int(elem) {
			copy(raw[off:off+elem], buf[p:p+int(elem)])
			for d := 0; d < k; d++ { // the next index, first one fastest
				idx[d]++
				off += stride[d]
				if idx[d] < shape[d] {
					break
				}
				off -= int64(idx[d]) * stride[d]
				idx[d] = 0
			}
		}
	}
	return nil
}

// npyInt64s returns integer array data (any integer dtype) as int64: the
// slice itself for int64, else a converted copy. ok is false for other
// data; bad is the index of a uint64 element above math.MaxInt64, or -1.
func npyInt64s(data any) (out []int64, bad int, ok bool) {
	switch v := data.(type) {
	case []int64:
		return v, -1, true
	case []int32:
		return convertInt(v), -1, true
	case []int16:
		return convertInt(v), -1, true
	case []int8:
		return convertInt(v), -1, true
	case []uint32:
		return convertInt(v), -1, true
	case []uint16:
		return convertInt(v), -1, true
	case []uint8:
		return convertInt(v), -1, true
	case []uint64:
		for i, x := range v {
			if x > math.MaxInt64 {
				return nil, i, true
			}
		}
		return convertInt(v), -1, true
	}
	return nil, -1, false
}

// convertInt converts every element of v to int64.
func convertInt[T int8 | int16 | int32 | uint8 | uint16 | uint32 | uint64](v []T) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}
