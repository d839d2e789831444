package graph

import "unsafe"

// LittleEndianHost reports whether the machine stores integers little-endian.
func LittleEndianHost() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}

// ByteView returns the bytes of a slice of fixed-size numbers.
func ByteView[T int32 | int64 | float32](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(s[0])))
}
