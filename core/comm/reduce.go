package comm

import (
	"context"
	"fmt"
	"unsafe"
)

// Float is the element type of an all-reduce.
type Float interface{ float32 | float64 }

// AllReduce sums buf over the ranks in place: afterwards every rank holds
// the same sum. The order of the additions is fixed (rank 0's value, plus
// rank 1's, plus rank 2's, ...), never the order in which messages arrive,
// so the result is the same on every run and on every rank.
//
// It is a reduce-scatter followed by an all-gather over AllToAllV: rank r
// sums the r-th of Size() slices of buf, then every rank collects every
// summed slice, so each rank sends about 2·len(buf) elements whatever the
// number of ranks.
func AllReduce[T Float](ctx context.Context, c Comm, purpose string, buf []T) error {
	n, size := len(buf), c.Size()
	if size == 1 {
		return nil
	}
	lo := func(r int) int { return r * n / size }
	send := make([][]byte, size)
	for j := range send {
		send[j] = Bytes(buf[lo(j):lo(j+1)])
	}
	recv, err := c.AllToAllV(ctx, purpose, send)
	if err != nil {
		return err
	}
	me := c.Rank()
	part := make([]T, lo(me+1)-lo(me))
	for j, b := range recv {
		v, err := Decode[T](b)
		if err != nil {
			return err
		}
		if len(v) != len(part) {
			return fmt.Errorf("comm: all-reduce: rank %d sent %d values for slice %d, want %d (the ranks' buffers differ in length)", j, len(v), me, len(part))
		}
		for i, x := range v {
			if j == 0 {
				part[i] = x
			} else {
				part[i] += x
			}
		}
	}
	mine := Bytes(part)
	for j := range send {
		send[j] = mine
	}
	if recv, err = c.AllToAllV(ctx, purpose, send); err != nil {
		return err
	}
	for j, b := range recv {
		v, err := Decode[T](b)
		if err != nil {
			return err
		}
		if len(v) != lo(j+1)-lo(j) {
			return fmt.Errorf("comm: all-reduce: rank %d returned %d summed values, want %d", j, len(v), lo(j+1)-lo(j))
		}
		copy(buf[lo(j):], v)
	}
	return nil
}

// AllGather returns every rank's data, in rank order.
func AllGather(ctx context.Context, c Comm, purpose string, data []byte) ([][]byte, error) {
	send := make([][]byte, c.Size())
	for j := range send {
		send[j] = data
	}
	return c.AllToAllV(ctx, purpose, send)
}

// Elem is a fixed-size element that travels as its bytes (ranks of a group
// share the byte order of one kind of machine).
type Elem interface {
	~int32 | ~int64 | ~uint64 | ~float32 | ~float64
}

// Bytes returns the bytes of v (a view, not a copy).
func Bytes[T Elem](v []T) []byte {
	if len(v) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(z)))
}

// View returns the elements b holds: b itself when it is aligned for T
// (the caller then must not change b while it uses the result), otherwise
// a copy; an error when its length is not a multiple of the element size.
func View[T Elem](b []byte) ([]T, error) {
	var z T
	sz := int(unsafe.Sizeof(z))
	if len(b)%sz != 0 {
		return nil, fmt.Errorf("comm: %d bytes are not a whole number of %d-byte values", len(b), sz)
	}
	if len(b) == 0 {
		return nil, nil
	}
	if uintptr(unsafe.Pointer(&b[0]))%unsafe.Alignof(z) != 0 {
		return Decode[T](b)
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(b)/sz), nil
}

// Decode returns the elements b holds (a copy, aligned), or an error when
// its length is not a multiple of the element size.
func Decode[T Elem](b []byte) ([]T, error) {
	var z T
	sz := int(unsafe.Sizeof(z))
	if len(b)%sz != 0 {
		return nil, fmt.Errorf("comm: %d bytes are not a whole number of %d-byte values", len(b), sz)
	}
	out := make([]T, len(b)/sz)
	copy(Bytes(out), b)
	return out, nil
}
