package cache

import (
	"fmt"

	"strata/core/graph"
	"strata/core/registry"
)

// LRU evicts the least recently used row. It keeps an intrusive doubly
// linked list over node ids, so Access is O(1) per id.
type LRU struct {
	Capacity

	size int
	l    links
	q    queue // head is the most recent
	in   []bool
}

// StrataModule registers cache.lru.
func (*LRU) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{
		ID:  "cache.lru",
		New: func() registry.Module { return &LRU{Capacity: Capacity{Capacity: defaultCapacity}} },
		Doc: "dynamic LRU cache (for comparison)",
	}
}

// Init implements Dynamic.
func (c *LRU) Init(d *graph.Dataset) error {
	k, err := sizeDynamic("cache.lru", &c.Capacity, d)
	if err != nil {
		return err
	}
	c.size, c.l, c.q, c.in = k, newLinks(d.NumNodes), emptyQueue(), make([]bool, d.NumNodes)
	return nil
}

// Access implements Dynamic.
func (c *LRU) Access(ids []int32) (hits int) {
	for _, v := range ids {
		if c.in[v] {
			hits++
			if c.q.head != v {
				c.q.remove(&c.l, v)
				c.q.pushFront(&c.l, v)
			}
			continue
		}
		if c.size == 0 {
			continue
		}
		if old := c.q.pushBounded(&c.l, v, c.size); old >= 0 {
			c.in[old] = false
		}
		c.in[v] = true
	}
	return hits
}

// Clock is the CLOCK approximation of LRU: slots in a ring, one reference
// bit each; a hit sets the bit, a miss advances the hand, clearing set
// bits, to the first slot whose bit is clear and replaces it.
type Clock struct {
	Capacity

	slot []int32 // node -> slot, -1 when not cached
	node []int32 // slot -> node, -1 when empty
	ref  []bool
	hand int
}

// StrataModule registers cache.clock.
func (*Clock) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{
		ID:  "cache.clock",
		New: func() registry.Module { return &Clock{Capacity: Capacity{Capacity: defaultCapacity}} },
		Doc: "dynamic CLOCK (second-chance) cache (for comparison)",
	}
}

// Init implements Dynamic.
func (c *Clock) Init(d *graph.Dataset) error {
	k, err := sizeDynamic("cache.clock", &c.Capacity, d)
	if err != nil {
		return err
	}
	c.slot, c.node, c.ref, c.hand = make([]int32, d.NumNodes), make([]int32, k), make([]bool, k), 0
	for i := range c.slot {
		c.slot[i] = -1
	}
	for i := range c.node {
		c.node[i] = -1
	}
	return nil
}

// Access implements Dynamic.
func (c *Clock) Access(ids []int32) (hits int) {
	k := len(c.node)
	for _, v := range ids {
		if s := c.slot[v]; s >= 0 {
			hits++
			c.ref[s] = true
			continue
		}
		if k == 0 {
			continue
		}
		for c.node[c.hand] >= 0 && c.ref[c.hand] {
			c.ref[c.hand] = false
			c.hand = (c.hand + 1) % k
		}
		if old := c.node[c.hand]; old >= 0 {
			c.slot[old] = -1
		}
		c.node[c.hand], c.slot[v], c.ref[c.hand] = v, int32(c.hand), false
		c.hand = (c.hand + 1) % k
	}
	return hits
}

func sizeDynamic(id string, c *Capacity, d *graph.Dataset) (int, error) {
	if d == nil {
		return 0, fmt.Errorf("%s: no dataset", id)
	}
	k, err := c.Rows(d)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", id, err)
	}
	return k, nil
}

// links are the intrusive list links of the queues of one online cache,
// indexed by node id: prev points toward a queue's head (newer), next
// toward its tail (older), -1 ends. A node is in at most one queue at a
// time, so the queues of a cache share one links.
type links struct{ prev, next []int32 }

func newLinks(n int) links { return links{make([]int32, n), make([]int32, n)} }

// queue is a doubly linked FIFO over links: head is the newest entry,
// tail the oldest, n the length. Every operation is O(1).
type queue struct {
	head, tail int32
	n          int
}

func emptyQueue() queue { return queue{head: -1, tail: -1} }

// pushFront inserts v (in no queue) at the head.
func (q *queue) pushFront(l *links, v int32) {
	l.prev[v], l.next[v] = -1, q.head
	if q.head >= 0 {
		l.prev[q.head] = v
	} else {
		q.tail = v
	}
	q.head = v
	q.n++
}

// remove unlinks v, which is in q.
func (q *queue) remove(l *links, v int32) {
	p, nx := l.prev[v], l.next[v]
	if p >= 0 {
		l.next[p] = nx
	} else {
		q.head = nx
	}
	if nx >= 0 {
		l.prev[nx] = p
	} else {
		q.tail = p
	}
	q.n--
}

// popTail removes and returns the oldest entry of the non-empty q.
func (q *queue) popTail(l *links) int32 {
	t := q.tail
	q.remove(l, t)
	return t
}

// pushBounded inserts v at the head of q, first dropping q's oldest entry
// when q holds capacity entries, and returns the dropped entry (-1 for
// none). With capacity 0 nothing is inserted and v itself is dropped.
func (q *queue) pushBounded(l *links, v int32, capacity int) int32 {
	if capacity == 0 {
		return v
	}
	old := int32(-1)
	if q.n >= capacity {
		old = q.popTail(l)
	}
	q.pushFront(l, v)
	return old
}

// Holds implements caching.Holder.
func (c *LRU) Holds(id int32) bool { return c.in[id] }

// Holds implements caching.Holder.
func (c *Clock) Holds(id int32) bool { return c.slot[id] >= 0 }
