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

	size, used int
	prev, next []int32 // list links; -1 ends; head is most recent
	in         []bool
	head, tail int32
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
	n := d.NumNodes
	c.size, c.used, c.head, c.tail = k, 0, -1, -1
	c.prev, c.next, c.in = make([]int32, n), make([]int32, n), make([]bool, n)
	return nil
}

func (c *LRU) unlink(v int32) {
	p, nx := c.prev[v], c.next[v]
	if p >= 0 {
		c.next[p] = nx
	} else {
		c.head = nx
	}
	if nx >= 0 {
		c.prev[nx] = p
	} else {
		c.tail = p
	}
}

func (c *LRU) pushFront(v int32) {
	c.prev[v], c.next[v] = -1, c.head
	if c.head >= 0 {
		c.prev[c.head] = v
	} else {
		c.tail = v
	}
	c.head = v
}

// Access implements Dynamic.
func (c *LRU) Access(ids []int32) (hits int) {
	for _, v := range ids {
		if c.in[v] {
			hits++
			if c.head != v {
				c.unlink(v)
				c.pushFront(v)
			}
			continue
		}
		if c.size == 0 {
			continue
		}
		if c.used == c.size {
			old := c.tail
			c.unlink(old)
			c.in[old] = false
			c.used--
		}
		c.pushFront(v)
		c.in[v] = true
		c.used++
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
