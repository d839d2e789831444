package sampler

import (
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"strata/core/graph"
)

// This file holds the machinery shared by the random samplers' per-layer
// draws: per-row RNG streams, the parallel row loop, recycled scratch and
// the position picking. The layer loop, the seed checks and the
// relabelling to local ids are the sampler base's (sampling.SampleLayers).
//
// Determinism: every random decision about destination row v in layer l
// comes from the stream newRNG(rng, l, v), so the blocks depend only on
// (graph, seeds, rng, config), never on GOMAXPROCS or on how rows are
// split among goroutines. The base assigns local ids by one ordered pass
// over the edges, in row order, for every sampler.

// rngStream is a SplitMix64 generator: every (seed, layer, node) triple
// gets an independent sequence.
type rngStream struct{ s uint64 }

func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// newRNG returns the stream of destination node v in layer l (layer
// indices count blocks, blocks[0] first) for the call's rng.
func newRNG(rng uint64, layer int, v int32) rngStream {
	s := mix64(rng + 0x9e3779b97f4a7c15)
	s = mix64(s ^ (uint64(layer) + 0x632be59bd9b4e019))
	return rngStream{s: mix64(s ^ (uint64(uint32(v)) + 0x85ebca6b))}
}

func (r *rngStream) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	return mix64(r.s)
}

// below returns an integer in [0, n) by Lemire's multiply-shift (the
// bias, below n/2^64, is immaterial for degrees).
func (r *rngStream) below(n int64) int64 {
	hi, _ := bits.Mul64(r.next(), uint64(n))
	return int64(hi)
}

// workers returns how many goroutines to use for n units of work.
func workers(n, grain int) int {
	return max(1, min(runtime.GOMAXPROCS(0), (n+grain-1)/grain))
}

// parallel calls fn on contiguous chunks [lo,hi) of [0,n) from up to
// GOMAXPROCS goroutines (at most one per worker scratch of s). cost, when
// non-nil, is a prefix sum of per-row work (len n+1) used to balance the
// chunks. fn gets the id of its worker (0..w-1) for per-worker scratch.
// The split does not affect the result: callers derive all randomness
// from the row.
func (s *scratch) parallel(n int, cost []int64, fn func(w, lo, hi int)) {
	const grain = 256
	w := max(1, min(workers(n, grain), len(s.wk)))
	if w == 1 {
		fn(0, 0, n)
		return
	}
	// More chunks than workers for load balance; chunks are handed out in
	// order from a shared counter.
	chunks := min(w*4, (n+grain-1)/grain)
	bounds := make([]int, chunks+1)
	for c := 1; c < chunks; c++ {
		if cost != nil {
			target := cost[0] + (cost[n]-cost[0])*int64(c)/int64(chunks)
			b, _ := slices.BinarySearch(cost[:n+1], target)
			bounds[c] = max(bounds[c-1], min(b, n))
		} else {
			bounds[c] = n * c / chunks
		}
	}
	bounds[chunks] = n
	var next atomic.Int64
	var wg sync.WaitGroup
	for id := 0; id < w; id++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c := int(next.Add(1) - 1)
				if c >= chunks {
					return
				}
				if bounds[c] < bounds[c+1] {
					fn(id, bounds[c], bounds[c+1])
				}
			}
		}()
	}
	wg.Wait()
}

// scratch is the state of one layer's draw, recycled through a small free
// list (getScratch, putScratch).
type scratch struct {
	pos []int64   // khop: sampled edge positions of a layer
	deg []int64   // the degrees of a layer's destinations
	row []int32   // randomwalk: fixed-stride row slots
	val []float32 // randomwalk: fixed-stride weights
	cnt []int64   // per-row counts
	wk  []*workerScratch
}

// workerScratch is the per-goroutine state of one layer's draw.
type workerScratch struct {
	sel     []int64  // picked positions of one row
	bits    []uint64 // bitmap over a row's positions; all zero between rows
	set     posSet
	walk    []int32 // randomwalk: current node of each walk
	walkDeg []int64 // randomwalk: the degrees of the live walks' nodes
	visits  []int32
	pairs   []visitCount
}

var freeScratch struct {
	sync.Mutex
	list []*scratch
}

// getScratch returns a scratch with one worker scratch per GOMAXPROCS.
func getScratch() *scratch {
	freeScratch.Lock()
	s := &scratch{}
	if n := len(freeScratch.list); n > 0 {
		s = freeScratch.list[n-1]
		freeScratch.list = freeScratch.list[:n-1]
	}
	freeScratch.Unlock()
	s.ensureWorkers()
	return s
}

func putScratch(s *scratch) {
	freeScratch.Lock()
	defer freeScratch.Unlock()
	if len(freeScratch.list) < 4 {
		freeScratch.list = append(freeScratch.list, s)
	}
}

// worker returns the scratch of worker w (see ensureWorkers).
func (s *scratch) worker(w int) *workerScratch {
	return s.wk[w]
}

// ensureWorkers makes one worker scratch per GOMAXPROCS.
func (s *scratch) ensureWorkers() {
	for len(s.wk) < runtime.GOMAXPROCS(0) {
		s.wk = append(s.wk, &workerScratch{})
	}
}

// posSet is an open-addressing set of int64 positions cleared in O(1) by
// bumping a generation stamp.
type posSet struct {
	keys  []int64
	stamp []uint32
	gen   uint32
	mask  int64
}

// reset empties the set and makes room for n insertions at load <= 1/2.
func (p *posSet) reset(n int) {
	size := 16
	for size < 2*n {
		size <<= 1
	}
	if len(p.keys) < size {
		p.keys = make([]int64, size)
		p.stamp = make([]uint32, size)
		p.gen = 0
	}
	p.mask = int64(len(p.keys) - 1)
	p.gen++
	if p.gen == 0 { // wrapped: clear the stamps
		clear(p.stamp)
		p.gen = 1
	}
}

// insert adds x and reports whether it was absent.
func (p *posSet) insert(x int64) bool {
	h := int64(mix64(uint64(x)) & uint64(p.mask))
	for {
		if p.stamp[h] != p.gen {
			p.stamp[h] = p.gen
			p.keys[h] = x
			return true
		}
		if p.keys[h] == x {
			return false
		}
		h = (h + 1) & p.mask
	}
}

// prefixCounts returns the row pointers (len(degs)+1) of per-row counts.
func prefixCounts(degs []int64, count func(deg int64) int64) []int64 {
	indptr := make([]int64, len(degs)+1)
	var t int64
	for i, d := range degs {
		t += count(d)
		indptr[i+1] = t
	}
	return indptr
}

// degrees reads the degrees of dst with one batched read, into scratch.
func (s *scratch) degrees(g Graph, dst []int32) []int64 {
	if cap(s.deg) < len(dst) {
		s.deg = make([]int64, len(dst))
	}
	d := s.deg[:len(dst)]
	g.NumNeighbors(dst, d)
	return d
}

// insertionSort sorts a short slice of positions.
func insertionSort(a []int64) {
	for i := 1; i < len(a); i++ {
		x := a[i]
		j := i - 1
		for j >= 0 && a[j] > x {
			a[j+1] = a[j]
			j--
		}
		a[j+1] = x
	}
}

// sortPositions sorts picked positions so that a row is read in address
// order.
func sortPositions(a []int64) {
	if len(a) <= 32 {
		insertionSort(a)
		return
	}
	slices.Sort(a)
}

// col reads column e of g (either width).
func col(g *graph.CSR, e int64) int32 {
	if g.Idx32 != nil {
		return g.Idx32[e]
	}
	return int32(g.Idx64[e])
}

// bitmapMax is the largest degree whose picked positions are deduplicated
// in a bitmap (64 words at most) rather than a hash set; the bitmap also
// yields the picks in ascending order without sorting.
const bitmapMax = 4096

// pickSorted returns k distinct positions of [0, deg) (k < deg), chosen
// uniformly, in ascending order, in ws.sel. With rejection = false it runs
// Floyd's algorithm (exactly k draws: for j = deg-k .. deg-1 draw t in
// [0, j], take t unless already taken, then take j); with rejection = true
// it draws t in [0, deg) until k distinct positions are held (XGNN's
// KHop). Both choose a uniformly random k-subset.
func pickSorted(r *rngStream, deg, k int64, rejection bool, ws *workerScratch) []int64 {
	sel := ws.sel[:0]
	switch {
	case deg <= 64:
		var m uint64
		if rejection {
			for n := int64(0); n < k; {
				t := uint64(1) << r.below(deg)
				if m&t == 0 {
					m |= t
					n++
				}
			}
		} else {
			for j := deg - k; j < deg; j++ {
				t := uint64(1) << r.below(j+1)
				if m&t != 0 {
					t = uint64(1) << j
				}
				m |= t
			}
		}
		for m != 0 {
			sel = append(sel, int64(bits.TrailingZeros64(m)))
			m &= m - 1
		}
	case deg <= bitmapMax:
		nw := int((deg + 63) >> 6)
		if len(ws.bits) < nw {
			ws.bits = make([]uint64, bitmapMax/64)
		}
		words := ws.bits[:nw]
		set := func(t int64) bool {
			w, b := t>>6, uint64(1)<<(t&63)
			if words[w]&b != 0 {
				return false
			}
			words[w] |= b
			return true
		}
		if rejection {
			for n := int64(0); n < k; {
				if set(r.below(deg)) {
					n++
				}
			}
		} else {
			for j := deg - k; j < deg; j++ {
				if !set(r.below(j + 1)) {
					set(j)
				}
			}
		}
		for wi, w := range words {
			for w != 0 {
				sel = append(sel, int64(wi)<<6+int64(bits.TrailingZeros64(w)))
				w &= w - 1
			}
			words[wi] = 0
		}
	default:
		if rejection {
			ws.set.reset(int(k))
			for int64(len(sel)) < k {
				if t := r.below(deg); ws.set.insert(t) {
					sel = append(sel, t)
				}
			}
		} else {
			sel = floyd(r, deg, k, sel, &ws.set)
		}
		sortPositions(sel)
	}
	ws.sel = sel
	return sel
}
