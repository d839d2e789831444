package cache

import (
	"fmt"
	"math"

	"strata/core/graph"
	"strata/core/registry"
)

// S3FIFO is S3-FIFO (Yang et al., "FIFO queues are all you need for cache
// eviction", SOSP '23, Algorithm 1): a small FIFO S, a main FIFO M and a
// ghost FIFO G of ids recently evicted from S, with a 2-bit access count
// per cached row. The line numbers below are Algorithm 1's.
//
//   - A hit (a row in S or M) increments its count, saturating at 3 (line 3).
//   - A miss first evicts while S and M hold the capacity (lines 8-9), then
//     inserts the row at the head of M if its id is in G, else at the head
//     of S (lines 10-13), with count 0 (line 6). G is consulted after
//     the evictions, as written (libCacheSim's S3FIFOv0 looks before,
//     which differs only when those evictions push the id out of G). An id
//     admitted from G leaves G (as in S3FIFOv0; a row is never both cached
//     and a ghost).
//   - An eviction takes from S when S holds at least small_ratio of the
//     capacity, else from M (line 15).
//   - From S (lines 20-30): the tail moves to the head of M when its count
//     is > 1 (line 23: "if t.freq > 1", so a row needs two hits in S),
//     with its count cleared (the paper's text: "its access bits are
//     cleared during the move"; the pseudocode does not say), and M is
//     evicted from when M is full (lines 25-26); otherwise the tail's id
//     goes to G and the eviction is done (lines 28-29).
//   - From M (lines 32-40): the tail with count > 0 is reinserted at the
//     head with its count decremented (lazy promotion); the first tail with
//     count 0 is evicted.
//
// Sizes in rows, for a cache of C rows: S's share is small_ratio × C
// rounded up (line 15's "S.size ≥ 0.1 · cache size" on a whole number of
// rows), M's share (when "M is full") is the rest, and G holds as many ids
// as M's share (the paper: G "stores the same number of ghost entries as
// M"), its oldest forgotten first.
//
// Memory is two int32 links and two bytes per node (the three queues share
// the links); an access is O(1) amortised: every reinsertion in M spends a
// count that a hit added, and a row moves from S to M once per insertion.
type S3FIFO struct {
	Capacity
	SmallRatio float64 `toml:"small_ratio" range:"(0,1)" doc:"share of the cache rows of the small FIFO S (the paper's 10%); M has the rest and G remembers as many ids as M holds"`

	size, small, main int // rows: the capacity, S's share, M's (and G's) share
	l                 links
	s, m, g           queue
	where             []uint8 // s3None, s3Small, s3Main or s3Ghost
	freq              []uint8
}

// Where a node is.
const (
	s3None uint8 = iota
	s3Small
	s3Main
	s3Ghost
)

// defaultSmallRatio is the paper's size of S: 10% of the cache.
const defaultSmallRatio = 0.1

// StrataModule registers cache.s3fifo.
func (*S3FIFO) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{
		ID: "cache.s3fifo",
		New: func() registry.Module {
			return &S3FIFO{Capacity: Capacity{Capacity: defaultCapacity}, SmallRatio: defaultSmallRatio}
		},
		Doc: "dynamic S3-FIFO cache (Yang et al., SOSP '23): small, main and ghost FIFO queues",
	}
}

// Validate checks the capacity and small_ratio.
func (c *S3FIFO) Validate() error {
	if err := c.Capacity.Validate(); err != nil {
		return err
	}
	if !(c.SmallRatio > 0 && c.SmallRatio < 1) { // also rejects NaN
		return fmt.Errorf("small_ratio = %v: must be in (0, 1); the paper's is 0.1", c.SmallRatio)
	}
	return nil
}

// smallRows returns S's share of a cache of size rows: ratio × size
// rounded up, a product within 1e-9 of a whole number counting as that
// number (0.1 × 30 is 3 rows, not 4 by rounding error).
func smallRows(ratio float64, size int) int {
	x := ratio * float64(size)
	if r := math.Round(x); math.Abs(x-r) <= 1e-9*math.Max(1, x) {
		return int(r)
	}
	return int(math.Ceil(x))
}

// Init implements Dynamic.
func (c *S3FIFO) Init(d *graph.Dataset) error {
	const id = "cache.s3fifo"
	k, err := sizeDynamic(id, &c.Capacity, d)
	if err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return fmt.Errorf("%s: %w", id, err)
	}
	n := d.NumNodes
	c.size, c.small = k, min(k, max(1, smallRows(c.SmallRatio, k))) // S is never empty when it is due
	c.main = k - c.small
	c.l, c.s, c.m, c.g = newLinks(n), emptyQueue(), emptyQueue(), emptyQueue()
	c.where, c.freq = make([]uint8, n), make([]uint8, n)
	return nil
}

// Access implements Dynamic (Algorithm 1's READ, lines 2-6).
func (c *S3FIFO) Access(ids []int32) (hits int) {
	for _, v := range ids {
		if w := c.where[v]; w == s3Small || w == s3Main {
			hits++
			c.freq[v] = min(c.freq[v]+1, 3)
			continue
		}
		if c.size == 0 {
			continue
		}
		c.insert(v)
		c.freq[v] = 0
	}
	return hits
}

// insert is INSERT (lines 8-13).
func (c *S3FIFO) insert(v int32) {
	for c.s.n+c.m.n >= c.size {
		if c.s.n >= c.small {
			c.evictS()
		} else {
			c.evictM()
		}
	}
	if c.where[v] == s3Ghost {
		c.g.remove(&c.l, v)
		c.m.pushFront(&c.l, v)
		c.where[v] = s3Main
		return
	}
	c.s.pushFront(&c.l, v)
	c.where[v] = s3Small
}

// evictS is EVICTS (lines 20-30).
func (c *S3FIFO) evictS() {
	for c.s.n > 0 {
		t := c.s.popTail(&c.l)
		if c.freq[t] <= 1 {
			c.toGhost(t)
			return
		}
		c.freq[t] = 0
		c.m.pushFront(&c.l, t)
		c.where[t] = s3Main
		if c.m.n >= c.main {
			c.evictM()
		}
	}
}

// evictM is EVICTM (lines 32-40).
func (c *S3FIFO) evictM() {
	for c.m.n > 0 {
		t := c.m.popTail(&c.l)
		if c.freq[t] == 0 {
			c.where[t] = s3None
			return
		}
		c.freq[t]--
		c.m.pushFront(&c.l, t)
	}
}

// toGhost records t, just evicted from S, at the head of G, forgetting
// G's oldest id when G holds its share.
func (c *S3FIFO) toGhost(t int32) {
	c.where[t] = s3Ghost
	if old := c.g.pushBounded(&c.l, t, c.main); old >= 0 {
		c.where[old] = s3None // forgotten (t itself when G has no room at all)
	}
}

// Holds implements caching.Holder.
func (c *S3FIFO) Holds(id int32) bool { w := c.where[id]; return w == s3Small || w == s3Main }
