// Package hosttier is the host tier of out-of-core training: vertex data
// as host matrices in RAM or in a scratch file read and written by row
// runs, with deferred additions (internal kit of plugins/strategy).
package hosttier

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"strata/core/tensor"
	"strata/plugins/strategy/internal/steprun"
)

// Rows is a matrix in the host tier of chunked training: features,
// a layer's activations or their gradients, one row per node. Rows move
// to and from the devices through buffers of the run's dtype
// ([]float32 or []float64). The ids of one call are distinct (a chunk's
// rows are).
type Rows interface {
	// Buf returns a buffer for n rows: reuse (a buffer of this matrix's
	// dtype from an earlier call) resliced when it is large enough, its
	// contents stale, else a new zeroed one.
	Buf(n int, reuse any) any
	// Gather copies the rows ids into Buf(len(ids), into).
	Gather(ids []int32, into any) (any, error)
	// GatherTo copies row ids[i] into row to[i] of dst, a []float32 or
	// []float64 of the matrix's dtype (nil to: row i), without a buffer
	// between: a chunk's rows read straight into its device buffer on a
	// host backend (backend.RowCopier's HostData).
	GatherTo(ids []int32, dst any, to []int32) error
	// Put writes buffer row i into row ids[i].
	Put(ids []int32, v any) error
	// Add adds buffer row i into row ids[i].
	Add(ids []int32, v any) error
	// Zero clears every row.
	Zero() error
	Width() int
}

type hostMat[T float32 | float64] struct {
	cols int
	v    []T
}

var (
	_ Rows = (*hostMat[float32])(nil)
	_ Rows = (*hostMat[float64])(nil)
	_ Rows = (*hostFileMat[float32])(nil)
	_ Rows = (*hostFileMat[float64])(nil)
)

// newHostRows returns an n × cols host matrix of dtype dt over v (nil:
// freshly allocated; otherwise v must hold n·cols elements of dt).
func newHostRows(dt tensor.DType, n, cols int, v any) (Rows, error) {
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

func (h *hostMat[T]) Width() int { return h.cols }

func (h *hostMat[T]) Buf(n int, reuse any) any { return reuseBuf[T](reuse, n*h.cols) }

// reuseBuf returns reuse (a []T or nil) resliced to n elements when its
// capacity suffices, else a new slice.
func reuseBuf[T float32 | float64](reuse any, n int) []T {
	if s, ok := reuse.([]T); ok && cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}

func (h *hostMat[T]) Gather(ids []int32, into any) (any, error) {
	out := reuseBuf[T](into, len(ids)*h.cols)
	return out, h.GatherTo(ids, out, nil)
}

func (h *hostMat[T]) GatherTo(ids []int32, dst any, to []int32) error {
	out, err := gatherDst[T](ids, dst, to, h.cols)
	if err != nil {
		return err
	}
	rowsParallel(len(ids), func(lo, hi int) {
		for i, r := range ids[lo:hi] {
			at := rowAt(to, lo+i)
			copy(out[at*h.cols:(at+1)*h.cols], h.v[int(r)*h.cols:(int(r)+1)*h.cols])
		}
	})
	return nil
}

// gatherDst returns dst as the []T of a GatherTo of the rows ids into
// rows to (nil: row i), after checking that it holds those rows.
func gatherDst[T float32 | float64](ids []int32, dst any, to []int32, cols int) ([]T, error) {
	out, ok := dst.([]T)
	if !ok {
		return nil, fmt.Errorf("host tier: gather into a %T, want a %T", dst, out)
	}
	rows := len(ids)
	if cols > 0 {
		rows = len(out) / cols
	}
	if to == nil {
		if len(ids) > rows {
			return nil, fmt.Errorf("host tier: gather of %d rows into %d", len(ids), rows)
		}
		return out, nil
	}
	if len(to) != len(ids) {
		return nil, fmt.Errorf("host tier: gather of %d rows to %d places", len(ids), len(to))
	}
	for _, r := range to {
		if r < 0 || int(r) >= rows {
			return nil, fmt.Errorf("host tier: gather to row %d of %d", r, rows)
		}
	}
	return out, nil
}

// rowAt is to[i], or i when to is nil.
func rowAt(to []int32, i int) int {
	if to == nil {
		return i
	}
	return int(to[i])
}

func (h *hostMat[T]) Put(ids []int32, v any) error {
	s := v.([]T)
	rowsParallel(len(ids), func(lo, hi int) {
		for i, r := range ids[lo:hi] {
			copy(h.v[int(r)*h.cols:(int(r)+1)*h.cols], s[(lo+i)*h.cols:(lo+i+1)*h.cols])
		}
	})
	return nil
}

// Add needs distinct ids (a chunk's rows are): rows are split among
// goroutines, so each is written by one.
func (h *hostMat[T]) Add(ids []int32, v any) error {
	s := v.([]T)
	rowsParallel(len(ids), func(lo, hi int) {
		for i, r := range ids[lo:hi] {
			row := h.v[int(r)*h.cols : (int(r)+1)*h.cols]
			for j, x := range s[(lo+i)*h.cols : (lo+i+1)*h.cols] {
				row[j] += x
			}
		}
	})
	return nil
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

func (h *hostMat[T]) Zero() error {
	clear(h.v)
	return nil
}

// FeatureRows returns the features as a host matrix of dtype dt: the
// prepared float32 rows themselves, or a float64 copy.
func FeatureRows(dt tensor.DType, feats []float32, n, dim int) (Rows, error) {
	if dt == tensor.Float32 {
		return newHostRows(dt, n, dim, feats)
	}
	v := make([]float64, len(feats))
	for i, x := range feats {
		v[i] = float64(x)
	}
	return newHostRows(dt, n, dim, v)
}

// CopyRows copies the n rows of src into dst, a block of rows at a time.
func CopyRows(dst, src Rows, n int) error {
	const block = 1 << 16
	for lo := 0; lo < n; lo += block {
		ids := steprun.Iota32From(lo, min(lo+block, n))
		v, err := src.Gather(ids, nil)
		if err == nil {
			err = dst.Put(ids, v)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Arena hands out the host tier's matrices: from the Go heap, or
// carved from one block of pinned memory (a device backend's
// backend.PinnedHost) or one scratch file (chunked.host_file), each
// matrix at a page-aligned offset.
type Arena struct {
	DT   tensor.DType
	Mem  []byte   // the pinned block, or nil
	File *os.File // the host file, or nil
	Log  *addLog  // the host file's log of deferred additions
	Size int64    // the block's or the file's size
	// IO counts the host file's and its log's reads and writes (nil:
	// uncounted).
	IO   *IOCount
	used int64
}

// IOCount counts the bytes a host file and its log of additions read and
// wrote, each pread and pwrite by its length.
type IOCount struct {
	read, written atomic.Int64
	reads, writes atomic.Int64 // the calls
}

// Bytes returns the bytes read and written so far (a nil count: none).
func (c *IOCount) Bytes() (read, written int64) {
	if c == nil {
		return 0, 0
	}
	return c.read.Load(), c.written.Load()
}

// Calls returns the read and write calls so far (a nil count: none).
func (c *IOCount) Calls() (reads, writes int64) {
	if c == nil {
		return 0, 0
	}
	return c.reads.Load(), c.writes.Load()
}

// readAt is f.ReadAt, counted.
func (c *IOCount) readAt(f *os.File, b []byte, off int64) error {
	n, err := f.ReadAt(b, off)
	if c != nil {
		c.read.Add(int64(n))
		c.reads.Add(1)
	}
	return err
}

// writeAt is f.WriteAt, counted.
func (c *IOCount) writeAt(f *os.File, b []byte, off int64) error {
	n, err := f.WriteAt(b, off)
	if c != nil {
		c.written.Add(int64(n))
		c.writes.Add(1)
	}
	return err
}

// hostPage aligns the matrices in the host file.
const hostPage = 4096

// Bytes is the size of a host file or pinned block holding
// matrices of n rows of the given widths, each page-aligned.
func Bytes(dt tensor.DType, n int, widths []int) int64 {
	var size int64
	for _, w := range widths {
		size += (int64(n)*int64(w)*int64(dt.Size()) + hostPage - 1) / hostPage * hostPage
	}
	return size
}

// Matrix returns an n × cols matrix of the arena's dtype.
func (a *Arena) Matrix(n, cols int) (Rows, error) {
	if a.File == nil && a.Mem == nil {
		return newHostRows(a.DT, n, cols, nil)
	}
	elems := int64(n) * int64(cols)
	size := (elems*int64(a.DT.Size()) + hostPage - 1) / hostPage * hostPage
	if a.used+size > a.Size {
		return nil, fmt.Errorf("host tier: %d bytes used of %d, %d more wanted", a.used, a.Size, size)
	}
	off := a.used
	a.used += size
	if a.Mem != nil {
		if elems == 0 {
			return newHostRows(a.DT, n, cols, nil)
		}
		p := unsafe.Pointer(&a.Mem[off])
		switch a.DT {
		case tensor.Float32:
			return newHostRows(a.DT, n, cols, unsafe.Slice((*float32)(p), elems))
		case tensor.Float64:
			return newHostRows(a.DT, n, cols, unsafe.Slice((*float64)(p), elems))
		}
		return nil, fmt.Errorf("host tier: dtype %s", a.DT)
	}
	switch a.DT {
	case tensor.Float32:
		return &hostFileMat[float32]{f: a.File, io: a.IO, off: off, n: n, cols: cols, adds: newDeferredAdds[float32](a.Log, n, cols)}, nil
	case tensor.Float64:
		return &hostFileMat[float64]{f: a.File, io: a.IO, off: off, n: n, cols: cols, adds: newDeferredAdds[float64](a.Log, n, cols)}, nil
	}
	return nil, fmt.Errorf("host tier: dtype %s", a.DT)
}

// RAMMatrix returns an n × cols matrix of the arena's dtype in the Go
// heap, whatever the arena's block: a matrix kept in RAM beside a host
// file.
func (a *Arena) RAMMatrix(n, cols int) (Rows, error) { return newHostRows(a.DT, n, cols, nil) }

// hostFileMat is an n × cols matrix at byte offset off of the host file,
// read and written with explicit positioned I/O (pread, pwrite) of row
// runs: a call sorts its rows and moves every run of nearby rows with
// one system call, through a buffer of at most hostRunBytes per
// goroutine. Nothing of the file is mapped, so the kernel writes back
// only what the calls wrote (docs/decisions.md, "HongTu's host file").
type hostFileMat[T float32 | float64] struct {
	f    *os.File
	io   *IOCount // the file's byte counts (nil: uncounted)
	off  int64
	n    int
	cols int
	adds *deferredAdds[T] // row additions not yet applied (nil: none; see add)
	// zero is set while every row is zero (cleared by Zero, nothing
	// written since): reads of it are served without reading the file,
	// whose rows may still be an earlier pass's. The first write clears
	// them (clearRange), each row once, where the write itself does not
	// cover them.
	zero bool
}

// hostRunBytes bounds one run's read (and a goroutine's buffer).
const hostRunBytes = 1 << 20

func (h *hostFileMat[T]) Width() int { return h.cols }

func (h *hostFileMat[T]) Buf(n int, reuse any) any { return reuseBuf[T](reuse, n*h.cols) }

func (h *hostFileMat[T]) rowBytes() int64 { return int64(h.cols) * int64(unsafe.Sizeof(T(0))) }

// asBytes views a buffer of T as bytes.
func asBytes[T float32 | float64 | int32](v []T) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(v[0])))
}

// sortedRows returns ids as (id << 32 | position) in ascending id order.
func sortedRows(ids []int32) []uint64 {
	s := make([]uint64, len(ids))
	for i, u := range ids {
		s[i] = uint64(uint32(u))<<32 | uint64(i)
	}
	if !slices.IsSorted(s) {
		slices.Sort(s)
	}
	return s
}

// runs calls fn, on up to GOMAXPROCS goroutines with a buffer each, for
// every run of the sorted rows: the rows [lo, hi) hold the entries rs,
// consecutive entries at most gap rows apart. With read, the buffer
// holds the file's rows [lo, hi) when fn is called.
func (h *hostFileMat[T]) runs(ids []int32, gap int32, read bool, fn func(buf []T, lo int32, rs []uint64) error) error {
	for _, u := range ids {
		if u < 0 || int(u) >= h.n {
			return fmt.Errorf("host file: row %d of %d", u, h.n)
		}
	}
	s := sortedRows(ids)
	maxRows := int32(max(1, hostRunBytes/h.rowBytes()))
	parts := min(runtime.GOMAXPROCS(0), max(1, len(s)/1024))
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for p := range parts {
		wg.Add(1)
		go func(p int, s []uint64) {
			defer wg.Done()
			var buf []T
			for len(s) > 0 {
				lo := int32(s[0] >> 32)
				end := 1
				for end < len(s) {
					u := int32(s[end] >> 32)
					if u-int32(s[end-1]>>32) > gap || u-lo >= maxRows {
						break
					}
					end++
				}
				hi := int32(s[end-1]>>32) + 1
				need := int(hi-lo) * h.cols
				if cap(buf) < need {
					buf = make([]T, need, max(need, int(maxRows)*h.cols))
				}
				buf = buf[:need]
				if read {
					if err := h.io.readAt(h.f, asBytes(buf), h.off+int64(lo)*h.rowBytes()); err != nil {
						errs[p] = fmt.Errorf("host file: read rows %d-%d: %w", lo, hi-1, err)
						return
					}
				}
				if err := fn(buf, lo, s[:end]); err != nil {
					errs[p] = err
					return
				}
				s = s[end:]
			}
		}(p, s[p*len(s)/parts:(p+1)*len(s)/parts])
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// hostGapBytes is the gap between two needed rows below which a read
// takes the rows between them too, in one call: below 1 KiB (one row of
// 128 float32 values), where another pread costs more than the bytes.
// At R-MAT 2^20 with 16 chunks (GCN 2×128) an epoch then reads 3.11 GB
// from the host file (1.85× the bound) in 3.5 CPU-s of pread, against
// 2.83 GB in 4.3 s reading exactly the rows and 5.30 GB in 2.5 s
// reading through gaps below a page (docs/hongtu.md).
const hostGapBytes = 1024

// gapRows is how far apart two rows may be to be read with one call:
// rows u < v are, when v - u <= gapRows (at least 1: adjacent rows always
// are), so the rows between them are fewer than hostGapBytes.
func (h *hostFileMat[T]) gapRows() int32 { return int32(max(1, hostGapBytes/h.rowBytes())) }

func (h *hostFileMat[T]) Gather(ids []int32, into any) (any, error) {
	out := reuseBuf[T](into, len(ids)*h.cols)
	return out, h.GatherTo(ids, out, nil)
}

func (h *hostFileMat[T]) GatherTo(ids []int32, dst any, to []int32) error {
	if err := h.applyAdds(); err != nil {
		return err
	}
	out, err := gatherDst[T](ids, dst, to, h.cols)
	if err != nil {
		return err
	}
	if h.zero {
		for i, u := range ids {
			if u < 0 || int(u) >= h.n {
				return fmt.Errorf("host file: row %d of %d", u, h.n)
			}
			at := rowAt(to, i)
			clear(out[at*h.cols : (at+1)*h.cols])
		}
		return nil
	}
	return h.runs(ids, h.gapRows(), false, func(buf []T, lo int32, rs []uint64) error {
		if at, ok := straight(rs, lo, func(i int) int { return rowAt(to, i) }); ok {
			// Consecutive rows to consecutive places (a chunk's
			// destinations): read straight into them.
			return h.readRows(out[at*h.cols:(at+len(rs))*h.cols], lo)
		}
		if err := h.readRows(buf, lo); err != nil {
			return err
		}
		for _, e := range rs {
			r, at := int(int32(e>>32)-lo), rowAt(to, int(uint32(e)))
			copy(out[at*h.cols:(at+1)*h.cols], buf[r*h.cols:(r+1)*h.cols])
		}
		return nil
	})
}

// straight reports whether the sorted run rs holds the rows lo, lo+1, …
// at the places place(position) = first, first+1, … (returning first):
// then the run moves between the file and those places with no buffer.
func straight(rs []uint64, lo int32, place func(i int) int) (first int, ok bool) {
	first = place(int(uint32(rs[0])))
	for k, e := range rs {
		if int32(e>>32) != lo+int32(k) || place(int(uint32(e))) != first+k {
			return 0, false
		}
	}
	return first, true
}

// readRows reads the file's rows lo, lo+1, … into buf (whole rows).
func (h *hostFileMat[T]) readRows(buf []T, lo int32) error {
	if err := h.io.readAt(h.f, asBytes(buf), h.off+int64(lo)*h.rowBytes()); err != nil {
		return fmt.Errorf("host file: read rows %d-%d: %w", lo, int(lo)+len(buf)/h.cols-1, err)
	}
	return nil
}

// writeRows writes buf (whole rows) to the file's rows lo, lo+1, ….
func (h *hostFileMat[T]) writeRows(buf []T, lo int32) error {
	if err := h.io.writeAt(h.f, asBytes(buf), h.off+int64(lo)*h.rowBytes()); err != nil {
		return fmt.Errorf("host file: write rows %d-%d: %w", lo, int(lo)+len(buf)/h.cols-1, err)
	}
	return nil
}

// writeRuns writes the rows of rs from buf (holding rows [lo, ...)),
// one call per run of consecutive rows: rows between them are not
// written.
func (h *hostFileMat[T]) writeRuns(buf []T, lo int32, rs []uint64) error {
	for len(rs) > 0 {
		end := 1
		for end < len(rs) && int32(rs[end]>>32) == int32(rs[end-1]>>32)+1 {
			end++
		}
		a, b := int32(rs[0]>>32)-lo, int32(rs[end-1]>>32)-lo+1
		if err := h.writeRows(buf[int(a)*h.cols:int(b)*h.cols], lo+a); err != nil {
			return err
		}
		rs = rs[end:]
	}
	return nil
}

func (h *hostFileMat[T]) Put(ids []int32, v any) error {
	if err := h.applyAdds(); err != nil {
		return err
	}
	s := v.([]T)
	if err := h.unzero(); err != nil {
		return err
	}
	return h.runs(ids, 1, false, func(buf []T, lo int32, rs []uint64) error { // adjacent rows: one write
		if i, ok := straight(rs, lo, func(i int) int { return i }); ok {
			// Consecutive buffer rows to consecutive rows (a chunk's
			// destinations): written straight from the buffer.
			return h.writeRows(s[i*h.cols:(i+len(rs))*h.cols], lo)
		}
		for _, e := range rs {
			r, i := int(int32(e>>32)-lo), int(uint32(e))
			copy(buf[r*h.cols:(r+1)*h.cols], s[i*h.cols:(i+1)*h.cols])
		}
		return h.writeRuns(buf, lo, rs)
	})
}

// addNow adds the rows at once: read, added, written back run by run.
func (h *hostFileMat[T]) addNow(ids []int32, v any) error {
	s := v.([]T)
	if err := h.unzero(); err != nil {
		return err
	}
	return h.runs(ids, h.gapRows(), true, func(buf []T, lo int32, rs []uint64) error {
		for _, e := range rs {
			r, i := int(int32(e>>32)-lo), int(uint32(e))
			row := buf[r*h.cols : (r+1)*h.cols]
			for j, x := range s[i*h.cols : (i+1)*h.cols] {
				row[j] += x
			}
		}
		return h.writeRuns(buf, lo, rs)
	})
}

// Zero clears the matrix: its rows read as zeros from now on, without
// touching the file. Its old rows are cleared by the first write
// (unzero, or applyAdds range by range), so that a matrix cleared every
// pass and written whole again (the vertex gradients) keeps its pages in
// the page cache: punching them out here made the next pass's writes
// allocate blocks and pages anew, and on a file system mounted with
// discard wait for the freed blocks (docs/performance.md).
func (h *hostFileMat[T]) Zero() error {
	if err := h.dropAdds(); err != nil {
		return err
	}
	h.zero = true
	return nil
}

// unzero makes the file's rows of a cleared matrix zero before a write
// of some of them.
func (h *hostFileMat[T]) unzero() error {
	if !h.zero {
		return nil
	}
	if err := h.clearRange(0, h.n); err != nil {
		return err
	}
	h.zero = false
	return nil
}

// clearRange zeroes the file's rows [lo, hi) without writing them
// (zeroRange: their blocks stay allocated, so the disk space reserved
// for the file stays its own), or by writing zeros where the file
// system cannot.
func (h *hostFileMat[T]) clearRange(lo, hi int) error {
	off, size := h.off+int64(lo)*h.rowBytes(), int64(hi-lo)*h.rowBytes()
	if size <= 0 || zeroRange(h.f, off, size) == nil {
		return nil
	}
	zeros := make([]byte, min(size, hostRunBytes))
	for at := int64(0); at < size; at += int64(len(zeros)) {
		n := min(int64(len(zeros)), size-at)
		if err := h.io.writeAt(h.f, zeros[:n], off+at); err != nil {
			return fmt.Errorf("host file: zero: %w", err)
		}
	}
	return nil
}
