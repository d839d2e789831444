package hosttier

import (
	"fmt"
	"os"
	"slices"
	"unsafe"

	"strata/core/safefile"
)

// Row additions into the host file (the vertex gradients of a backward
// pass) hit rows all over the matrix: added in place, each one dirties a
// page that the kernel may have written back already, so the file is
// written many times over in a long pass. Instead an addition is
// deferred: its rows go to the bucket of their row range, a bucket's
// rows spill to an append-only log file in segments, and before the
// matrix is next read the additions are applied bucket by bucket: the
// range read once, every segment of the bucket added in the order the
// additions came (so each row sums in the same order as in RAM), the
// range written once. A pass then writes its additions once,
// sequentially, and the matrix once.
//
// Within a budget of memory (Arena.CacheBytes) a bucket is instead held
// in RAM: its range is read once (not at all while the matrix is
// cleared), every addition goes straight into it, in the order
// the additions come, and it is written once when the additions are
// applied. The sums are the same as through the log (the range read,
// then every addition in order); the log's bytes, written and read
// back, are saved. The cache holds one matrix's buckets at a time and
// lies outside the Go heap (anonymous mappings, kept when applied for
// the next pass's buckets, unmapped by Trim or Close).
//
// The log is bounded: when a matrix's spilled additions reach the size of
// the matrix itself, they are applied early (the same order per row, so
// the same sums) and their segments are freed. A pass over a graph whose
// neighbour rows repeat many times (R-MAT 2^24 in 256 chunks: 110 GB of
// additions in one backward layer) then needs at most the matrix again
// on disk, at the price of one more read and write of the matrix per
// matrix-size of additions.

// addLog is the append-only log of deferred additions, shared by the
// matrices of one host file (one matrix has pending additions at a time
// in chunked training; the log is emptied when none has).
type addLog struct {
	f       *os.File
	io      *IOCount // the byte counts (nil: uncounted)
	end     int64    // bytes appended
	pending int      // matrices with segments in the log
	// bucketBytes and segBytes size the buckets' row ranges and their
	// segments (0: hostBucketBytes, hostRunBytes); limitBytes bounds a
	// matrix's spilled additions (0: the matrix's size, at least
	// hostBucketBytes).
	bucketBytes, segBytes, limitBytes int64
	// cacheBytes bounds the buckets held in RAM (0: none); cached is
	// the bytes mapped for them now (in use or free), cachePeak the most
	// so far.
	cacheBytes, cached, cachePeak int64
	// free are the mapped ranges of applied buckets, kept for the next
	// pass's buckets: a fresh mapping costs a page fault a page on first
	// touch, several times a copy's time (0.5-1 GB/s on the VM of
	// docs/performance.md), where a kept one is cleared or read over at
	// memory speed. Trim unmaps them.
	free []anonRange
}

// anonRange is an anonymous mapping that holds a cached bucket.
type anonRange struct {
	mem   []byte
	unmap func()
}

// take returns a mapped range of n bytes for a bucket: a kept one of
// that size, else a new mapping when the budget has room for it (kept
// ranges of other sizes are unmapped to make room); ok false: none (the
// bucket is logged).
func (l *addLog) take(n int64) (r anonRange, ok bool) {
	for i, f := range l.free {
		if int64(len(f.mem)) == n {
			l.free = slices.Delete(l.free, i, i+1)
			return f, true
		}
	}
	for len(l.free) > 0 && l.cached+n > l.cacheBytes {
		l.unmapFree(len(l.free) - 1)
	}
	if n == 0 || l.cached+n > l.cacheBytes {
		return anonRange{}, false
	}
	mem, unmap, err := mapAnon(n)
	if err != nil {
		return anonRange{}, false
	}
	l.cached += n
	l.cachePeak = max(l.cachePeak, l.cached)
	return anonRange{mem, unmap}, true
}

// unmapFree unmaps the kept range free[i].
func (l *addLog) unmapFree(i int) {
	f := l.free[i]
	f.unmap()
	l.cached -= int64(len(f.mem))
	l.free = slices.Delete(l.free, i, i+1)
}

// Trim unmaps the kept ranges (see addLog.free).
func (l *addLog) Trim() {
	for len(l.free) > 0 {
		l.unmapFree(len(l.free) - 1)
	}
}

// SetCache lets the log's matrices hold up to n bytes of row ranges in
// RAM (0: none).
func (l *addLog) SetCache(n int64) { l.cacheBytes = n }

// CacheBytes returns the most bytes of row ranges the log's matrices
// held in RAM at once (Arena.CacheBytes bounds it).
func (l *addLog) CacheBytes() int64 { return l.cachePeak }

// hostBucketBytes is the size of the row range one application holds in
// memory.
const hostBucketBytes = 256 << 20

// NewAddLog creates the log as an unlinked file in dir: nothing is left
// behind whatever happens; close frees it.
func NewAddLog(dir string, io *IOCount) (*addLog, error) {
	f, err := safefile.CreateUnlinked(dir, "strata-adds")
	if err != nil {
		return nil, err
	}
	return &addLog{f: f, io: io}, nil
}

// Close unmaps the kept ranges and closes the log.
func (l *addLog) Close() error {
	l.Trim()
	return l.f.Close()
}

// append writes the parts at the end of the log and returns where they
// start.
func (l *addLog) append(parts ...[]byte) (int64, error) {
	at := l.end
	for _, p := range parts {
		if err := l.io.writeAt(l.f, p, l.end); err != nil {
			return 0, fmt.Errorf("host file: log of additions: %w", err)
		}
		l.end += int64(len(p))
	}
	return at, nil
}

// done records that a matrix has no more segments in the log, and
// empties the log when no matrix has; otherwise it frees the matrix's
// segments segs (where the file system cannot, they stay until then).
func (l *addLog) done(segs []addSeg, cols, elemBytes int) error {
	l.pending--
	if l.pending > 0 {
		for _, sg := range segs {
			if punchHole(l.f, sg.at, int64(sg.n)*int64(4+cols*elemBytes)) != nil {
				break
			}
		}
		return nil
	}
	l.end = 0
	return l.f.Truncate(0)
}

// deferredAdds are a matrix's pending additions.
type deferredAdds[T float32 | float64] struct {
	log        *addLog
	cols       int
	bucketRows int
	buckets    []addBucket[T] // nil: none pending
	spilled    int64          // bytes of this matrix's segments in the log
	limit      int64          // spilled bytes that make add apply them early
}

// addBucket holds the pending additions of one row range: spilled
// segments, then the rows not yet spilled; or, cached, the range itself
// with every addition made.
type addBucket[T float32 | float64] struct {
	segs []addSeg
	ids  []int32
	vals []T
	rng  []T       // the cached range (nil: the additions are logged)
	mem  anonRange // holds rng
}

// addSeg is a spilled segment: n row ids (int32), then their n rows.
type addSeg struct {
	at int64
	n  int
}

// newDeferredAdds returns the deferred additions of an n × cols matrix
// over log (nil log: additions are applied at once).
func newDeferredAdds[T float32 | float64](log *addLog, n, cols int) *deferredAdds[T] {
	if log == nil {
		return nil
	}
	rowBytes := int64(cols) * int64(unsafe.Sizeof(T(0)))
	bucket := log.bucketBytes
	if bucket == 0 {
		bucket = hostBucketBytes
	}
	rows := max(1, int(bucket/max(1, rowBytes)))
	limit := log.limitBytes
	if limit == 0 {
		limit = max(int64(n)*rowBytes, hostBucketBytes)
	}
	return &deferredAdds[T]{log: log, cols: cols, bucketRows: min(rows, max(1, n)), limit: limit}
}

func (d *deferredAdds[T]) segRows() int {
	seg := d.log.segBytes
	if seg == 0 {
		seg = hostRunBytes
	}
	return max(1, int(seg/(int64(d.cols)*int64(unsafe.Sizeof(T(0)))+4)))
}

// Add defers the addition of buffer row i into row ids[i]: into its
// bucket's range where the bucket is held in RAM (rows in parallel: the
// ids are distinct, so each row takes its one addition of the call),
// else into the bucket's pending rows, spilled to the log a segment at a
// time.
func (h *hostFileMat[T]) Add(ids []int32, v any) error {
	d := h.adds
	if d == nil {
		return h.addNow(ids, v)
	}
	s := v.([]T)
	var inRAM []bool // per bucket: held in RAM, this call's rows added there
	for _, u := range ids {
		if u < 0 || int(u) >= h.n {
			return fmt.Errorf("host file: row %d of %d", u, h.n)
		}
		h.ensureBuckets()
		bi := int(u) / d.bucketRows
		if b := &d.buckets[bi]; b.rng == nil && len(b.segs) == 0 && len(b.ids) == 0 {
			if err := h.cacheBucket(bi); err != nil {
				return err
			}
		}
		if d.buckets[bi].rng != nil && inRAM == nil {
			inRAM = make([]bool, len(d.buckets))
		}
		if inRAM != nil {
			inRAM[bi] = d.buckets[bi].rng != nil
		}
	}
	if inRAM != nil {
		rowsParallel(len(ids), func(lo, hi int) {
			for i, u := range ids[lo:hi] {
				bi := int(u) / d.bucketRows
				if rng := d.buckets[bi].rng; rng != nil {
					row := rng[(int(u)-bi*d.bucketRows)*h.cols:][:h.cols]
					for j, x := range s[(lo+i)*h.cols : (lo+i+1)*h.cols] {
						row[j] += x
					}
				}
			}
		})
	}
	return h.logAdds(ids, s, inRAM)
}

// logAdds appends the additions of rows ids (values s) whose buckets
// were not held in RAM (inRAM, per bucket; nil: none was) to their
// buckets, spilling full segments to the log and applying every
// addition early when the log reaches its bound.
func (h *hostFileMat[T]) logAdds(ids []int32, s []T, inRAM []bool) error {
	d := h.adds
	seg := d.segRows()
	for i, u := range ids {
		bi := int(u) / d.bucketRows
		if inRAM != nil && inRAM[bi] {
			continue // added in RAM
		}
		h.ensureBuckets() // applied early: a new set of buckets
		b := &d.buckets[bi]
		b.ids = append(b.ids, u)
		b.vals = append(b.vals, s[i*h.cols:(i+1)*h.cols]...)
		if len(b.ids) >= seg {
			at, err := d.log.append(asBytes(b.ids), asBytes(b.vals))
			if err != nil {
				return err
			}
			b.segs = append(b.segs, addSeg{at, len(b.ids)})
			d.spilled += int64(len(b.ids)) * (4 + int64(h.cols)*int64(unsafe.Sizeof(T(0))))
			b.ids, b.vals = b.ids[:0], b.vals[:0]
			if d.spilled >= d.limit {
				if err := h.applyAdds(); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// ensureBuckets starts a set of buckets when the matrix has none (none
// yet, or its additions were applied): the log then has one more matrix
// with pending additions.
func (h *hostFileMat[T]) ensureBuckets() {
	if d := h.adds; d.buckets == nil {
		d.buckets = make([]addBucket[T], (h.n+d.bucketRows-1)/d.bucketRows)
		d.log.pending++
	}
}

// bucketRange returns bucket bi's rows [lo, hi) and its byte offset.
func (h *hostFileMat[T]) bucketRange(bi int) (lo, hi int, at int64) {
	lo, hi = bi*h.adds.bucketRows, min(h.n, (bi+1)*h.adds.bucketRows)
	return lo, hi, h.off + int64(lo)*h.rowBytes()
}

// cacheBucket holds bucket bi in RAM when the log's budget has room for
// it: its range read from the file (nothing to read while the matrix is
// cleared).
func (h *hostFileMat[T]) cacheBucket(bi int) error {
	d, l := h.adds, h.adds.log
	lo, hi, at := h.bucketRange(bi)
	mem, ok := l.take(int64(hi-lo) * h.rowBytes())
	if !ok {
		return nil // logged instead
	}
	rng := unsafe.Slice((*T)(unsafe.Pointer(&mem.mem[0])), (hi-lo)*h.cols)
	if h.zero {
		clear(rng) // a kept range holds an earlier pass's rows
	} else if err := h.io.readAt(h.f, mem.mem, at); err != nil {
		l.free = append(l.free, mem)
		return fmt.Errorf("host file: read rows %d-%d: %w", lo, hi-1, err)
	}
	b := &d.buckets[bi]
	b.rng, b.mem = rng, mem
	return nil
}

// applyAdds applies the pending additions, bucket by bucket.
func (h *hostFileMat[T]) applyAdds() error {
	d := h.adds
	if d == nil || d.buckets == nil {
		return nil
	}
	var rng, vals []T
	var ids []int32
	apply := func(lo int, ids []int32, vals []T) {
		for i, u := range ids {
			row := rng[(int(u)-lo)*h.cols : (int(u)-lo+1)*h.cols]
			for j, x := range vals[i*h.cols : (i+1)*h.cols] {
				row[j] += x
			}
		}
	}
	for bi := range d.buckets {
		b := &d.buckets[bi]
		lo, hi, at := h.bucketRange(bi)
		if b.rng != nil {
			if err := h.io.writeAt(h.f, asBytes(b.rng), at); err != nil {
				return fmt.Errorf("host file: write rows %d-%d: %w", lo, hi-1, err)
			}
			continue
		}
		if len(b.segs) == 0 && len(b.ids) == 0 {
			if h.zero { // no additions: the range stays zero
				if err := h.clearRange(lo, hi); err != nil {
					return err
				}
			}
			continue
		}
		rng = grow(rng, (hi-lo)*h.cols)
		if h.zero {
			clear(rng) // the matrix is cleared: nothing to read
		} else if err := h.io.readAt(h.f, asBytes(rng), at); err != nil {
			return fmt.Errorf("host file: read rows %d-%d: %w", lo, hi-1, err)
		}
		for _, sg := range b.segs {
			ids, vals = grow(ids, sg.n), grow(vals, sg.n*h.cols)
			if err := d.log.io.readAt(d.log.f, asBytes(ids), sg.at); err != nil {
				return fmt.Errorf("host file: log of additions: %w", err)
			}
			if err := d.log.io.readAt(d.log.f, asBytes(vals), sg.at+4*int64(sg.n)); err != nil {
				return fmt.Errorf("host file: log of additions: %w", err)
			}
			apply(lo, ids, vals)
		}
		apply(lo, b.ids, b.vals)
		if err := h.io.writeAt(h.f, asBytes(rng), at); err != nil {
			return fmt.Errorf("host file: write rows %d-%d: %w", lo, hi-1, err)
		}
	}
	h.zero = false
	return d.forget()
}

// forget drops the pending additions and frees their segments and
// cached ranges.
func (d *deferredAdds[T]) forget() error {
	var segs []addSeg
	for _, b := range d.buckets {
		segs = append(segs, b.segs...)
		if b.rng != nil {
			d.log.free = append(d.log.free, b.mem) // kept for the next pass
		}
	}
	d.buckets, d.spilled = nil, 0
	return d.log.done(segs, d.cols, int(unsafe.Sizeof(T(0))))
}

// dropAdds forgets the pending additions (the matrix is being cleared).
func (h *hostFileMat[T]) dropAdds() error {
	if d := h.adds; d != nil && d.buckets != nil {
		return d.forget()
	}
	return nil
}

// grow returns s resliced to n elements, reallocated if it is shorter.
func grow[E any](s []E, n int) []E {
	if cap(s) < n {
		return make([]E, n)
	}
	return s[:n]
}
