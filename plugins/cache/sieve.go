package cache

import (
	"strata/core/graph"
	"strata/core/registry"
)

// Sieve is SIEVE (Zhang et al., "SIEVE is Simpler than LRU", NSDI '24,
// Algorithm 1): one FIFO queue of the cached rows, new rows at its head,
// one visited bit per row and a hand. A hit only sets the row's bit (line
// 2; nothing moves). A miss on a full cache starts at the hand (the tail
// when the hand is NULL, lines 5-7) and moves it toward the head,
// clearing the set bits it passes and wrapping from the head to the tail
// (lines 8-12), to the first row whose bit is clear; that row is evicted
// and the hand left on its newer neighbour (lines 13-14). The new row goes
// to the head with its bit clear (lines 15-16).
//
// Memory is two int32 links and two flags per node; an access is O(1)
// amortised (every bit the hand clears was set by an earlier hit).
type Sieve struct {
	Capacity

	size        int
	l           links
	q           queue
	hand        int32 // -1 is the paper's NULL
	in, visited []bool
}

// StrataModule registers cache.sieve.
func (*Sieve) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{
		ID:  "cache.sieve",
		New: func() registry.Module { return &Sieve{Capacity: Capacity{Capacity: defaultCapacity}} },
		Doc: "dynamic SIEVE cache (Zhang et al., NSDI '24): FIFO order, a visited bit and a moving hand",
	}
}

// Init implements Dynamic.
func (c *Sieve) Init(d *graph.Dataset) error {
	k, err := sizeDynamic("cache.sieve", &c.Capacity, d)
	if err != nil {
		return err
	}
	n := d.NumNodes
	c.size, c.l, c.q, c.hand = k, newLinks(n), emptyQueue(), -1
	c.in, c.visited = make([]bool, n), make([]bool, n)
	return nil
}

// Access implements Dynamic.
func (c *Sieve) Access(ids []int32) (hits int) {
	for _, v := range ids {
		if c.in[v] {
			hits++
			c.visited[v] = true
			continue
		}
		if c.size == 0 {
			continue
		}
		if c.q.n == c.size {
			c.evict()
		}
		c.q.pushFront(&c.l, v)
		c.in[v], c.visited[v] = true, false
	}
	return hits
}

// evict runs lines 5-14 of Algorithm 1 on a full (non-empty) queue.
func (c *Sieve) evict() {
	o := c.hand
	if o < 0 {
		o = c.q.tail
	}
	for c.visited[o] {
		c.visited[o] = false
		if o = c.l.prev[o]; o < 0 {
			o = c.q.tail
		}
	}
	c.hand = c.l.prev[o]
	c.q.remove(&c.l, o)
	c.in[o] = false
}

// Holds implements caching.Holder.
func (c *Sieve) Holds(id int32) bool { return c.in[id] }
