package hybrid

import "sync"

// stagingKeep is how many free staging buffers a pool keeps unless told
// (stagingPool.keep): one batch's part for one trainer.
const stagingKeep = 1

// stagingPool recycles the feature loader's staging buffers between
// steps. A fresh buffer of a wide input is expensive before the gather
// writes a byte: the allocator zeroes it or the kernel faults its pages
// in (on coauthor-physics ~1 GB per step); a recycled one is written once,
// by the gather. Buffers are handed back when their batch is released, so
// a buffer is never reused while a trainer's input tensor wraps it.
type stagingPool struct {
	mu   sync.Mutex
	free [][]float32
	// keep is how many free buffers it keeps (0: stagingKeep): as many as
	// are in flight at once, a part per trainer of every batch between
	// the loader and the end of training (three with two-stage
	// prefetch: loading, bound, training; one without).
	keep int
}

// get returns a buffer of n elements (its contents are stale: the loader
// overwrites every element) and whether it had to be allocated. A new
// buffer has an eighth of headroom, so that the next steps' slightly
// larger inputs fit it. A nil pool allocates every buffer.
func (p *stagingPool) get(n int) ([]float32, bool) {
	if p == nil {
		return make([]float32, n), true
	}
	p.mu.Lock()
	best := -1
	for i, b := range p.free {
		if cap(b) >= n && (best < 0 || cap(b) < cap(p.free[best])) {
			best = i
		}
	}
	if best >= 0 {
		b := p.free[best]
		p.free[best] = p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
		p.mu.Unlock()
		return b[:n], false
	}
	p.mu.Unlock()
	return make([]float32, n, n+n/8), true
}

// put hands a buffer back; beyond keep free buffers the smallest is
// dropped (or b, if it is the smallest).
func (p *stagingPool) put(b []float32) {
	if p == nil || cap(b) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	keep := p.keep
	if keep == 0 {
		keep = stagingKeep
	}
	if len(p.free) < keep {
		p.free = append(p.free, b[:0])
		return
	}
	small := 0
	for i, f := range p.free {
		if cap(f) < cap(p.free[small]) {
			small = i
		}
	}
	if cap(b) > cap(p.free[small]) {
		p.free[small] = b[:0]
	}
}

// drop frees every kept buffer (before evaluation, whose buffers are
// larger than training's, and at the end).
func (p *stagingPool) drop() {
	p.mu.Lock()
	p.free = nil
	p.mu.Unlock()
}
