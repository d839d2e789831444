package cpu

import (
	"fmt"
	"math/bits"
	"slices"
	"unsafe"

	"strata/core/backend"
	"strata/core/tensor"
)

// The recycling pool. Mini-batch and hybrid training bind an engine
// program for every step (100-200 MB of buffers a step on
// coauthor-physics). Made with Go's make, each step's buffers cost from
// 0.01 to 1.8 s on the development VM, with the heap's state: zeroing of
// reused spans, page faults on pages the scavenger or the hypervisor's
// free-page reporting took back, GC assists. A pool of Go slices removed
// that but grew peak RSS by 16%, because pooled slices are live heap and
// raise the collector's goal (docs/decisions.md). This pool keeps its
// storage outside the Go heap instead: anonymous mappings (mapRegion),
// listed by size class, taken back and cleared by AllocRecycled on a
// Recycling view (HyScale's CPU trainers bind there; on every program
// the free regions cost mini-batch training 8-10% of peak RSS), returned
// by Release, and unmapped when the pool is full or trimmed, or to make
// room for a new mapping (so that a pool whose free regions no longer fit
// the steps' shapes does not grow beside them).
//
// Accounting: Stats' in-use and peak count live tensors by their exact
// size, with or without the pool; the free bytes the pool keeps are
// PoolStats().Free. They are bounded by Options.PoolBytes and, with a
// Capacity, live plus free bytes stay within it: a fresh mapping that
// would cross it empties the pool first.

// DefaultPoolBytes bounds the free bytes a backend's pool keeps when
// Options.PoolBytes is 0.
const DefaultPoolBytes = 1 << 30

// recycledMin is the smallest allocation AllocRecycled takes from the
// pool; smaller ones are Go slices (cheap, and a mapping costs a page and
// two system calls).
const recycledMin = 256 << 10

// PoolStats counts a backend's recycling pool traffic.
type PoolStats struct {
	Free   int64 // bytes of free regions kept for reuse
	Mapped int64 // bytes of regions mapped, free or in use
	Hits   int64 // allocations served from the pool
	Misses int64 // allocations that mapped a new region
	Drops  int64 // released regions unmapped because the pool was full
	// Evictions counts free regions unmapped to make room for a new
	// mapping (evict).
	Evictions int64
	Trims     int64 // times the pool was emptied (capacity, TrimPool)
}

// pool is the free regions by size class, each list in the order of
// release. It is guarded by memory.mu.
type pool struct {
	limit int64 // cap on free bytes; < 0 disables the pool
	free  map[int64][]freeRegion
	seq   int64 // releases so far
	stats PoolStats
}

// freeRegion is a released region and when it was released.
type freeRegion struct {
	r   []byte
	seq int64
}

// sizeClass rounds a byte count up to one of 8 classes per power of two
// (at most 12.5% over), page multiples from 64 KiB up, so that the
// slightly different shapes of successive mini-batches share classes.
func sizeClass(n int64) int64 {
	if n <= 64<<10 {
		return 64 << 10
	}
	step := int64(1) << (bits.Len64(uint64(n-1)) - 4) // a sixteenth of the power of two at or above n
	return (n + step - 1) / step * step
}

// take returns a free region of class c or of one of the two classes
// above it (a batch a little smaller than the last reuses its buffers),
// or with fit of the smallest class up to 2c. The caller holds m.mu.
func (m *memory) take(c int64, fit bool) ([]byte, bool) {
	upto := c + c/4
	if fit {
		upto = 2 * c
	}
	for class := c; class <= upto; class = sizeClass(class + 1) {
		l := m.pool.free[class]
		if len(l) == 0 {
			continue
		}
		r := l[len(l)-1].r // the last released: the likeliest in cache
		l[len(l)-1] = freeRegion{}
		m.pool.free[class] = l[:len(l)-1]
		m.pool.stats.Free -= class
		m.pool.stats.Hits++
		return r, true
	}
	return nil, false
}

// put keeps a released region, or unmaps it when the pool is full or
// disabled. The caller holds m.mu.
func (m *memory) put(r []byte) {
	class := int64(cap(r))
	if m.pool.limit < 0 || m.pool.stats.Free+class > m.pool.limit {
		m.pool.stats.Drops++
		m.unmap(r)
		return
	}
	if m.pool.free == nil {
		m.pool.free = map[int64][]freeRegion{}
	}
	m.pool.seq++
	m.pool.free[class] = append(m.pool.free[class], freeRegion{r[:cap(r)], m.pool.seq})
	m.pool.stats.Free += class
}

// unmap gives a region back. The caller holds m.mu.
func (m *memory) unmap(r []byte) {
	m.pool.stats.Mapped -= int64(cap(r))
	if err := unmapRegion(r[:cap(r)]); err != nil {
		panic(fmt.Sprintf("cpu: unmapping a pooled region: %v", err)) // only an invalid region fails: a bug here
	}
}

// evict unmaps free regions of at least n bytes together, or all of
// them, the longest free first, before a new mapping of n bytes: the
// regions of classes the steps no longer ask for do not stay mapped
// beside the new ones, so that the mapped bytes grow only with the live
// ones. The caller holds m.mu.
func (m *memory) evict(n int64) {
	for n > 0 && m.pool.stats.Free > 0 {
		oldest := int64(-1)
		for c, l := range m.pool.free {
			if len(l) > 0 && (oldest < 0 || l[0].seq < m.pool.free[oldest][0].seq) {
				oldest = c
			}
		}
		l := m.pool.free[oldest]
		m.unmap(l[0].r)
		m.pool.free[oldest] = slices.Delete(l, 0, 1)
		m.pool.stats.Free -= oldest
		m.pool.stats.Evictions++
		n -= oldest
	}
}

// trimLocked unmaps every free region. The caller holds m.mu.
func (m *memory) trimLocked() {
	if len(m.pool.free) == 0 {
		return
	}
	for _, l := range m.pool.free {
		for _, f := range l {
			m.unmap(f.r)
		}
	}
	clear(m.pool.free)
	m.pool.stats.Free = 0
	m.pool.stats.Trims++
}

var (
	_ backend.Recycler         = (*Backend)(nil)
	_ backend.PoolTrimmer      = (*Backend)(nil)
	_ backend.ScratchAllocator = (*Backend)(nil)
	_ backend.FitRecycler      = (*Backend)(nil)
)

// TrimPool implements backend.PoolTrimmer: it unmaps the free regions.
func (b *Backend) TrimPool() {
	m := b.mem
	m.mu.Lock()
	m.trimLocked()
	m.mu.Unlock()
}

// PoolStats returns the pool's counters.
func (b *Backend) PoolStats() PoolStats {
	m := b.mem
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pool.stats
}

// Recycling implements backend.Recycler: a view of b, sharing its
// threads, accounting and pool, whose AllocRecycled recycles.
func (b *Backend) Recycling() backend.Backend {
	v := *b
	v.recycle = true
	return &v
}

// RecyclingFit implements backend.FitRecycler: a recycling view whose
// allocations also take free regions up to twice their size class.
func (b *Backend) RecyclingFit() backend.Backend {
	v := *b
	v.recycle, v.fit = true, true
	return &v
}

// AllocRecycled implements backend.Recycler: on a Recycling view, Alloc
// with storage from the pool when it is at least recycledMin bytes (the
// tensor must then be Released: its storage is not on the Go heap);
// elsewhere Alloc.
func (b *Backend) AllocRecycled(dt tensor.DType, shape []int, tier tensor.Tier) (*tensor.Tensor, error) {
	return b.allocPooled(dt, shape, tier, true)
}

// AllocScratch implements backend.ScratchAllocator: on a Recycling view,
// AllocRecycled without clearing a region taken from the pool (a new
// mapping is zero pages); elsewhere Alloc.
func (b *Backend) AllocScratch(dt tensor.DType, shape []int, tier tensor.Tier) (*tensor.Tensor, error) {
	return b.allocPooled(dt, shape, tier, false)
}

// allocPooled is AllocRecycled, clearing a pooled region with zero.
func (b *Backend) allocPooled(dt tensor.DType, shape []int, tier tensor.Tier, zero bool) (*tensor.Tensor, error) {
	n, err := allocCheck(dt, shape, tier)
	if err != nil {
		return nil, err
	}
	bytes := n * int64(dt.Size())
	if !b.recycle || bytes < recycledMin || b.mem.pool.limit < 0 {
		return b.Alloc(dt, shape, tier)
	}
	bf := &buffer{owner: b, bytes: bytes}
	r, err := b.takeRegion(bytes, fmt.Sprintf("a %v tensor of shape %v", dt, shape), zero)
	if err != nil {
		return nil, err
	}
	bf.region = r
	p := unsafe.Pointer(unsafe.SliceData(r))
	switch dt {
	case tensor.Float32:
		bf.f32 = unsafe.Slice((*float32)(p), n)
	case tensor.Float64:
		bf.f64 = unsafe.Slice((*float64)(p), n)
	case tensor.Int32:
		bf.i32 = unsafe.Slice((*int32)(p), n)
	case tensor.Int64:
		bf.i64 = unsafe.Slice((*int64)(p), n)
	case tensor.Float16, tensor.BFloat16:
		bf.u16 = unsafe.Slice((*uint16)(p), n)
	}
	return tensor.New(dt, shape, bf), nil
}

// takeRegion reserves bytes against the capacity and returns a region of
// at least that many bytes, resliced to them: a free one (cleared with
// zero), or a new mapping (zero pages from the kernel).
func (b *Backend) takeRegion(bytes int64, what string, zero bool) ([]byte, error) {
	class := sizeClass(bytes)
	m := b.mem
	m.mu.Lock()
	if err := b.overCapacityLocked(bytes, what); err != nil {
		m.mu.Unlock()
		return nil, err
	}
	r, hit := m.take(class, b.fit)
	if !hit {
		m.pool.stats.Misses++
		if c := b.capacity; c > 0 && m.inUse+m.pool.stats.Free+class > c {
			m.trimLocked() // live plus free bytes stay within the capacity
		}
		if !b.fit {
			m.evict(class)
		}
	}
	m.inUse += bytes
	m.peak = max(m.peak, m.inUse)
	if !hit {
		m.pool.stats.Mapped += class // counted now, taken back below if the mapping fails
	}
	m.mu.Unlock()
	if hit {
		if zero {
			clear(r[:bytes]) // the Alloc contract: zero-filled
		}
		return r[:bytes], nil
	}
	r, err := mapRegion(class)
	if err != nil {
		b.mem.mu.Lock()
		b.mem.inUse -= bytes
		b.mem.pool.stats.Mapped -= class
		b.mem.mu.Unlock()
		return nil, errf("AllocRecycled", "mapping %d bytes for %s: %v", class, what, err)
	}
	return r[:bytes], nil
}
