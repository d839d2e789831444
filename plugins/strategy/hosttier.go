package strategy

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"strata/core/tensor"
)

// hostRows is a matrix in the host tier of chunked training: features,
// a layer's activations or their gradients, one row per node. Rows move
// to and from the devices through buffers of the run's dtype
// ([]float32 or []float64).
type hostRows interface {
	// buf returns a zeroed buffer for n rows.
	buf(n int) any
	// gather copies the rows ids into a new buffer.
	gather(ids []int32) any
	// put writes buffer row i into row ids[i].
	put(ids []int32, v any)
	// add adds buffer row i into row ids[i].
	add(ids []int32, v any)
	// zero clears every row.
	zero()
	width() int
}

type hostMat[T float32 | float64] struct {
	cols int
	v    []T
}

var (
	_ hostRows = (*hostMat[float32])(nil)
	_ hostRows = (*hostMat[float64])(nil)
)

// newHostRows returns an n × cols host matrix of dtype dt over v (nil:
// freshly allocated; otherwise v must hold n·cols elements of dt).
func newHostRows(dt tensor.DType, n, cols int, v any) (hostRows, error) {
	switch dt {
	case tensor.Float32:
		s, _ := v.([]float32)
		if s == nil {
			s = make([]float32, n*cols)
		}
		if len(s) != n*cols {
			return nil, fmt.Errorf("host tier: %d values for %d x %d", len(s), n, cols)
		}
		return &hostMat[float32]{cols: cols, v: s}, nil
	case tensor.Float64:
		s, _ := v.([]float64)
		if s == nil {
			s = make([]float64, n*cols)
		}
		if len(s) != n*cols {
			return nil, fmt.Errorf("host tier: %d values for %d x %d", len(s), n, cols)
		}
		return &hostMat[float64]{cols: cols, v: s}, nil
	}
	return nil, fmt.Errorf("host tier: dtype %s", dt)
}

func (h *hostMat[T]) width() int { return h.cols }

func (h *hostMat[T]) buf(n int) any { return make([]T, n*h.cols) }

func (h *hostMat[T]) gather(ids []int32) any {
	out := make([]T, len(ids)*h.cols)
	rowsParallel(len(ids), func(lo, hi int) {
		for i, r := range ids[lo:hi] {
			copy(out[(lo+i)*h.cols:(lo+i+1)*h.cols], h.v[int(r)*h.cols:(int(r)+1)*h.cols])
		}
	})
	return out
}

func (h *hostMat[T]) put(ids []int32, v any) {
	s := v.([]T)
	rowsParallel(len(ids), func(lo, hi int) {
		for i, r := range ids[lo:hi] {
			copy(h.v[int(r)*h.cols:(int(r)+1)*h.cols], s[(lo+i)*h.cols:(lo+i+1)*h.cols])
		}
	})
}

// add needs distinct ids (a chunk's rows are): rows are split among
// goroutines, so each is written by one.
func (h *hostMat[T]) add(ids []int32, v any) {
	s := v.([]T)
	rowsParallel(len(ids), func(lo, hi int) {
		for i, r := range ids[lo:hi] {
			row := h.v[int(r)*h.cols : (int(r)+1)*h.cols]
			for j, x := range s[(lo+i)*h.cols : (lo+i+1)*h.cols] {
				row[j] += x
			}
		}
	})
}

// rowsParallel runs fn over [0, n) in contiguous ranges on up to
// GOMAXPROCS goroutines (one range when n is small).
func rowsParallel(n int, fn func(lo, hi int)) {
	parts := min(runtime.GOMAXPROCS(0), max(1, n/4096))
	if parts <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	for p := range parts {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			fn(lo, hi)
		}(p*n/parts, (p+1)*n/parts)
	}
	wg.Wait()
}

func (h *hostMat[T]) zero() { clear(h.v) }

// featureRows returns the features as a host matrix of dtype dt: the
// prepared float32 rows themselves, or a float64 copy.
func featureRows(dt tensor.DType, feats []float32, n, dim int) (hostRows, error) {
	if dt == tensor.Float32 {
		return newHostRows(dt, n, dim, feats)
	}
	v := make([]float64, len(feats))
	for i, x := range feats {
		v[i] = float64(x)
	}
	return newHostRows(dt, n, dim, v)
}

// hostArena hands out the host tier's matrices: from the Go heap, or
// carved from one memory-mapped file (chunked.host_file).
type hostArena struct {
	dt   tensor.DType
	file []byte // the mapping, or nil
	used int64
}

// matrix returns an n × cols matrix of the arena's dtype.
func (a *hostArena) matrix(n, cols int) (hostRows, error) {
	if a.file == nil {
		return newHostRows(a.dt, n, cols, nil)
	}
	elems := int64(n) * int64(cols)
	size := elems * int64(a.dt.Size())
	if a.used+size > int64(len(a.file)) {
		return nil, fmt.Errorf("host file: %d bytes used of %d, %d more wanted", a.used, len(a.file), size)
	}
	p := unsafe.Pointer(&a.file[a.used])
	a.used += size
	if elems == 0 {
		return newHostRows(a.dt, n, cols, nil)
	}
	switch a.dt {
	case tensor.Float32:
		return newHostRows(a.dt, n, cols, unsafe.Slice((*float32)(p), elems))
	case tensor.Float64:
		return newHostRows(a.dt, n, cols, unsafe.Slice((*float64)(p), elems))
	}
	return nil, fmt.Errorf("host tier: dtype %s", a.dt)
}
