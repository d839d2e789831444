package cuda

import (
	"errors"
	"fmt"
	"sync"
)

// pool is a caching allocator. Released blocks stay reserved, listed by
// size class, and are handed out again for a request of the same class, so
// a training step that allocates the same shapes every time reaches a
// steady state with no driver allocation. When the driver (or the limit)
// refuses a request, the pool frees every cached block and tries once more.
type pool struct {
	mu       sync.Mutex
	alloc    func(n int64) (uintptr, error)
	free     func(p uintptr) error
	limit    int64 // cap on reserved bytes; 0 = none
	cached   map[int64][]uintptr
	reserved int64 // bytes held from the driver: in use + cached
	cachedB  int64
	stats    PoolStats
}

// PoolStats counts a pool's traffic.
type PoolStats struct {
	Reserved     int64 // bytes held from the driver
	Cached       int64 // of which free, kept for reuse
	Hits         int64 // requests served from the cache
	DriverAllocs int64 // requests that reached the driver
	Trims        int64 // times the cache was emptied to satisfy a request
}

// errPoolLimit is wrapped when a request would exceed the pool's limit.
var errPoolLimit = errors.New("memory limit reached")

func newPool(limit int64, alloc func(int64) (uintptr, error), free func(uintptr) error) *pool {
	return &pool{alloc: alloc, free: free, limit: limit, cached: map[int64][]uintptr{}}
}

// The pool's size classes: requests below largeFrom round up to a
// multiple of smallClass, the others to a multiple of largeClass.
const (
	smallClass = 512
	largeFrom  = 1 << 20
	largeClass = 2 << 20
)

// sizeClass rounds a request up: to 512 B below 1 MiB, to 2 MiB above, so
// that blocks are reused across slightly different shapes.
func sizeClass(n int64) int64 {
	if n <= 0 {
		return 0
	}
	if n < largeFrom {
		return (n + smallClass - 1) / smallClass * smallClass
	}
	return (n + largeClass - 1) / largeClass * largeClass
}

// roundingSlack bounds what sizeClass adds to n requests of bytes in all.
// A request of r bytes gains less than smallClass below largeFrom, and
// less than largeClass from it, but then no more than r itself (largeFrom
// = largeClass/2, so a class is less than 2r): each gains at most
// min(largeClass-1, r+smallClass-1), and the n of them at most the
// smaller of n·(largeClass-1) and bytes + n·(smallClass-1).
func roundingSlack(bytes, n int64) int64 {
	if n <= 0 {
		return 0
	}
	return min(n*(largeClass-1), max(bytes, 0)+n*(smallClass-1))
}

// get returns a block of at least n bytes and its size class.
func (p *pool) get(n int64) (uintptr, int64, error) {
	c := sizeClass(n)
	p.mu.Lock()
	defer p.mu.Unlock()
	if l := p.cached[c]; len(l) > 0 {
		ptr := l[len(l)-1]
		p.cached[c] = l[:len(l)-1]
		p.cachedB -= c
		p.stats.Hits++
		return ptr, c, nil
	}
	ptr, err := p.fresh(c)
	if err != nil && p.cachedB > 0 {
		p.stats.Trims++
		if terr := p.trimLocked(); terr != nil {
			return 0, 0, terr
		}
		ptr, err = p.fresh(c)
	}
	if err != nil {
		return 0, 0, err
	}
	return ptr, c, nil
}

func (p *pool) fresh(c int64) (uintptr, error) {
	if p.limit > 0 && p.reserved+c > p.limit {
		return 0, fmt.Errorf("%d more bytes with %d reserved of %d: %w", c, p.reserved, p.limit, errPoolLimit)
	}
	ptr, err := p.alloc(c)
	if err != nil {
		return 0, err
	}
	p.reserved += c
	p.stats.DriverAllocs++
	return ptr, nil
}

// put returns a block of class c to the cache.
func (p *pool) put(ptr uintptr, c int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cached[c] = append(p.cached[c], ptr)
	p.cachedB += c
}

// trim frees every cached block.
func (p *pool) trim() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.trimLocked()
}

func (p *pool) trimLocked() error {
	var first error
	for c, l := range p.cached {
		for _, ptr := range l {
			if err := p.free(ptr); err != nil && first == nil {
				first = err
			}
			p.reserved -= c
		}
		delete(p.cached, c)
	}
	p.cachedB = 0
	return first
}

// Stats returns the pool's counters.
func (p *pool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Reserved, s.Cached = p.reserved, p.cachedB
	return s
}
