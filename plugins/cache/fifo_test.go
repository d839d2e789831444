package cache

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/registry"
)

// This file checks cache.sieve and cache.s3fifo against slice-based
// simulations written straight from the papers' Algorithm 1 (line numbers
// in the comments), on random traces, and on traces worked by hand.

// refSieve is SIEVE (NSDI '24, Algorithm 1) on a slice: q[0] is the head
// (newest), q[len-1] the tail; hand is an index into q, -1 for NULL. An
// object's prev (toward the head) is the index below it.
type refSieve struct {
	k       int
	q       []int32
	visited []bool
	hand    int
}

func (r *refSieve) access(x int32) bool {
	if i := slices.Index(r.q, x); i >= 0 { // 1
		r.visited[i] = true // 2
		return true
	}
	if r.k == 0 {
		return false
	}
	if len(r.q) == r.k { // 4
		o := r.hand // 5
		if o < 0 {  // 6
			o = len(r.q) - 1 // 7
		}
		for r.visited[o] { // 8
			r.visited[o] = false // 9
			o--                  // 10
			if o < 0 {           // 11
				o = len(r.q) - 1 // 12
			}
		}
		r.hand = o - 1                                                                // 13; deleting index o leaves index o-1 where it is
		r.q, r.visited = slices.Delete(r.q, o, o+1), slices.Delete(r.visited, o, o+1) // 14
	}
	r.q, r.visited = slices.Insert(r.q, 0, x), slices.Insert(r.visited, 0, false) // 15, 16
	if r.hand >= 0 {
		r.hand++ // the insertion at the head shifts every index
	}
	return false
}

// sieveState returns c's queue (head first), the visited bits along it and
// the hand's index in it (-1 for NULL).
func sieveState(c *Sieve) (q []int32, visited []bool, hand int) {
	hand = -1
	for v := c.q.head; v >= 0; v = c.l.next[v] {
		if v == c.hand {
			hand = len(q)
		}
		q, visited = append(q, v), append(visited, c.visited[v])
	}
	return q, visited, hand
}

// refS3 is S3-FIFO (SOSP '23, Algorithm 1) on slices (index 0 the head),
// for a cache of size rows whose S takes p/q of them: line 15's test is
// |S|·q ≥ p·size, exactly; M is full at size - ceil(p·size/q) rows, and G
// holds that many ids.
type refS3 struct {
	size, p, q int
	S, M, G    []int32
	freq       map[int32]int
}

func newRefS3(size, p, q int) *refS3 { return &refS3{size: size, p: p, q: q, freq: map[int32]int{}} }

func (r *refS3) mainShare() int { return r.size - (r.p*r.size+r.q-1)/r.q }

func (r *refS3) read(x int32) bool {
	if slices.Contains(r.S, x) || slices.Contains(r.M, x) { // 2
		r.freq[x] = min(r.freq[x]+1, 3) // 3
		return true
	}
	if r.size == 0 {
		return false
	}
	r.insert(x)   // 5
	r.freq[x] = 0 // 6
	return false
}

func (r *refS3) insert(x int32) {
	for len(r.S)+len(r.M) == r.size { // 8
		r.evict() // 9
	}
	if i := slices.Index(r.G, x); i >= 0 { // 10
		r.G = slices.Delete(r.G, i, i+1) // admitted: no longer a ghost
		r.M = slices.Insert(r.M, 0, x)   // 11
	} else {
		r.S = slices.Insert(r.S, 0, x) // 13
	}
}

func (r *refS3) evict() {
	if len(r.S)*r.q >= r.p*r.size { // 15
		r.evictS() // 16
	} else {
		r.evictM() // 18
	}
}

func (r *refS3) evictS() {
	evicted := false               // 20
	for !evicted && len(r.S) > 0 { // 21
		t := r.S[len(r.S)-1] // 22
		if r.freq[t] > 1 {   // 23
			r.freq[t] = 0                  // cleared on the move (§4.2)
			r.M = slices.Insert(r.M, 0, t) // 24
			if len(r.M) >= r.mainShare() { // 25
				r.evictM() // 26
			}
		} else {
			r.G = slices.Insert(r.G, 0, t) // 28
			r.G = r.G[:min(len(r.G), r.mainShare())]
			evicted = true // 29
		}
		r.S = r.S[:len(r.S)-1] // 30
	}
}

func (r *refS3) evictM() {
	evicted := false               // 32
	for !evicted && len(r.M) > 0 { // 33
		t := r.M[len(r.M)-1] // 34
		if r.freq[t] > 0 {   // 35
			r.M = slices.Insert(r.M[:len(r.M)-1], 0, t) // 36
			r.freq[t]--                                 // 37
		} else {
			r.M = r.M[:len(r.M)-1] // 39
			evicted = true         // 40
		}
	}
}

// s3State is S, M and G (heads first) and the counts of the cached rows,
// of the implementation or the reference.
type s3State struct {
	S, M, G []int32
	freq    map[int32]int
}

func (s s3State) String() string {
	return fmt.Sprintf("S %v M %v G %v counts %v", s.S, s.M, s.G, s.freq)
}

func (s s3State) equal(o s3State) bool {
	if !slices.Equal(s.S, o.S) || !slices.Equal(s.M, o.M) || !slices.Equal(s.G, o.G) {
		return false
	}
	for _, v := range append(slices.Clone(s.S), s.M...) {
		if s.freq[v] != o.freq[v] {
			return false
		}
	}
	return true
}

func (r *refS3) state() s3State {
	return s3State{slices.Clone(r.S), slices.Clone(r.M), slices.Clone(r.G), r.freq}
}

func s3StateOf(c *S3FIFO) s3State {
	st := s3State{freq: map[int32]int{}}
	walk := func(q queue, want uint8) []int32 {
		var out []int32
		for v := q.head; v >= 0; v = c.l.next[v] {
			if c.where[v] != want {
				panic(fmt.Sprintf("node %d in queue %d marked %d", v, want, c.where[v]))
			}
			out = append(out, v)
			if want != s3Ghost {
				st.freq[v] = int(c.freq[v])
			}
		}
		return out
	}
	st.S, st.M, st.G = walk(c.s, s3Small), walk(c.m, s3Main), walk(c.g, s3Ghost)
	return st
}

// rowsDataset is a graph-less dataset of n nodes with 1-float features,
// so a byte budget of 4k is a cache of exactly k rows.
func rowsDataset(n int) *graph.Dataset { return &graph.Dataset{Name: "rows", NumNodes: n, FeatDim: 1} }

// fifoTraces returns named access traces over n nodes: Zipf-skewed,
// scans (sequential passes over a range) between skewed bursts, and
// uniform.
func fifoTraces(n int, seed uint64) map[string][]int32 {
	r := rand.New(rand.NewPCG(seed, 0xf1f0))
	z := rand.NewZipf(r, 1.1, 2, uint64(n-1))
	const length = 2500
	zipf := make([]int32, length)
	for i := range zipf {
		zipf[i] = int32(z.Uint64())
	}
	var scan []int32
	for len(scan) < length {
		for range 40 {
			scan = append(scan, int32(z.Uint64()))
		}
		lo := r.IntN(n)
		for v := lo; v < min(n, lo+n/2); v++ {
			scan = append(scan, int32(v))
		}
	}
	uniform := make([]int32, length)
	for i := range uniform {
		uniform[i] = int32(r.IntN(n))
	}
	return map[string][]int32{"zipf": zipf, "scan": scan, "uniform": uniform}
}

// fifoCapacities are the cache sizes of the reference checks on n nodes.
func fifoCapacities(n int) []int { return []int{0, 1, 2, 3, 7, n / 10, n / 2, n - 1, n} }

// TestSieveReference: cache.sieve hits as the reference on every access,
// with the same queue, visited bits and hand after each.
func TestSieveReference(t *testing.T) {
	const n = 60
	d := rowsDataset(n)
	for name, tr := range fifoTraces(n, 1) {
		for _, k := range fifoCapacities(n) {
			t.Run(fmt.Sprintf("%s/k=%d", name, k), func(t *testing.T) {
				c := &Sieve{}
				c.SetBytes(int64(4 * k))
				if err := c.Init(d); err != nil {
					t.Fatal(err)
				}
				ref := &refSieve{k: k, hand: -1}
				for i, v := range tr {
					got, want := c.Access([]int32{v}) == 1, ref.access(v)
					q, vis, hand := sieveState(c)
					if got != want || !slices.Equal(q, ref.q) || !slices.Equal(vis, ref.visited) || hand != ref.hand {
						t.Fatalf("access %d (node %d): hit %v, want %v\nqueue %v visited %v hand %d\nwant  %v visited %v hand %d",
							i, v, got, want, q, vis, hand, ref.q, ref.visited, ref.hand)
					}
				}
			})
		}
	}
}

// TestS3FIFOReference: cache.s3fifo hits as the reference on every
// access, with the same S, M, G and counts after each, for several sizes
// of S.
func TestS3FIFOReference(t *testing.T) {
	const n = 60
	d := rowsDataset(n)
	for name, tr := range fifoTraces(n, 2) {
		for _, ratio := range [][2]int{{1, 10}, {1, 4}, {3, 10}, {1, 2}} {
			for _, k := range fifoCapacities(n) {
				t.Run(fmt.Sprintf("%s/small=%d÷%d/k=%d", name, ratio[0], ratio[1], k), func(t *testing.T) {
					c := &S3FIFO{SmallRatio: float64(ratio[0]) / float64(ratio[1])}
					c.SetBytes(int64(4 * k))
					if err := c.Init(d); err != nil {
						t.Fatal(err)
					}
					ref := newRefS3(k, ratio[0], ratio[1])
					for i, v := range tr {
						got, want := c.Access([]int32{v}) == 1, ref.read(v)
						if st := s3StateOf(c); got != want || !st.equal(ref.state()) {
							t.Fatalf("access %d (node %d): hit %v, want %v\n got %v\nwant %v", i, v, got, want, st, ref.state())
						}
					}
				})
			}
		}
	}
}

// TestFIFOBatches: a trace presented in batches hits as many times as one
// access at a time.
func TestFIFOBatches(t *testing.T) {
	const n, k = 60, 12
	d := rowsDataset(n)
	tr := fifoTraces(n, 3)["scan"]
	for _, id := range []string{"cache.sieve", "cache.s3fifo"} {
		one, batched := mustDynamic(t, id, d, k), mustDynamic(t, id, d, k)
		var a, b int
		for _, v := range tr {
			a += one.Access([]int32{v})
		}
		for i := 0; i < len(tr); i += 37 {
			b += batched.Access(tr[i:min(len(tr), i+37)])
		}
		if a != b || a == 0 {
			t.Errorf("%s: %d hits one by one, %d in batches", id, a, b)
		}
	}
}

func mustDynamic(t testing.TB, id string, d *graph.Dataset, k int) Dynamic {
	t.Helper()
	c, err := registry.New[Dynamic](id)
	if err != nil {
		t.Fatal(err)
	}
	c.(interface{ SetBytes(int64) }).SetBytes(int64(4 * k))
	if err := c.Init(d); err != nil {
		t.Fatal(err)
	}
	return c
}

// hits returns which accesses of tr hit c, one at a time.
func hitPattern(c Dynamic, tr []int32) []int {
	var at []int
	for i, v := range tr {
		if c.Access([]int32{v}) == 1 {
			at = append(at, i)
		}
	}
	return at
}

// TestSieveWorked: traces worked by hand from Algorithm 1.
func TestSieveWorked(t *testing.T) {
	tests := []struct {
		name  string
		k     int
		trace []int32
		hits  []int   // the accesses that hit
		queue []int32 // head first, at the end
		hand  int32   // node under the hand at the end, -1 for NULL
	}{
		// 1 2 3 fill; 1 hits. 4: the hand starts at the tail (1), clears
		// it, evicts 2, stops on 3. 2 evicts 3, 5 evicts 4 (hand on 2).
		// 1 and 2 hit. 6: clears 2, evicts 5, the hand passes the head
		// (NULL). 7: from the tail, clears 1, evicts 2, hand on 6. 1 hits.
		// LRU hits 2 of these: the 1 at 3 and the 2 at 8.
		{"paper rules", 3, []int32{1, 2, 3, 1, 4, 2, 5, 1, 2, 6, 7, 1}, []int{3, 7, 8, 11}, []int32{7, 6, 1}, 6},
		// Both rows visited: the hand clears 1, then 2, wraps from the
		// head to the tail and evicts 1; next it evicts 2 from where it
		// stopped, and 3 hits.
		{"hand wraps", 2, []int32{1, 2, 1, 2, 3, 1, 3}, []int{2, 3, 6}, []int32{1, 3}, 3},
		// A hit does not move the row: 3 finds 1 still at the tail,
		// clears it and evicts 2, the head (the hand goes NULL); 4 evicts 1
		// from the tail and leaves the hand on 3, which 2 evicts.
		{"no promotion", 2, []int32{1, 2, 1, 3, 4, 2}, []int{2}, []int32{2, 4}, 4},
		{"one row", 1, []int32{1, 1, 2, 2, 1}, []int{1, 3}, []int32{1}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustDynamic(t, "cache.sieve", rowsDataset(10), tt.k).(*Sieve)
			at := hitPattern(c, tt.trace)
			q, _, _ := sieveState(c)
			if !slices.Equal(at, tt.hits) || !slices.Equal(q, tt.queue) || c.hand != tt.hand {
				t.Fatalf("hits at %v, queue %v, hand on %d; want %v, %v, %d", at, q, c.hand, tt.hits, tt.queue, tt.hand)
			}
			ref := &refSieve{k: tt.k, hand: -1}
			var refAt []int
			for i, v := range tt.trace {
				if ref.access(v) {
					refAt = append(refAt, i)
				}
			}
			if !slices.Equal(refAt, tt.hits) {
				t.Fatalf("the reference hits at %v, the hand-worked trace at %v", refAt, tt.hits)
			}
		})
	}
}

// TestS3FIFOWorked: a trace worked by hand from Algorithm 1, on 4 rows
// (S's share 1, M's 3, G 3 ids). a..e, x, y, z are nodes 0..7.
//
//	a b c d     fill S = [d c b a]
//	a a b       hits: a counts 2, b 1
//	e           evict S: a (count 2 > 1) moves to M (count 0), then b
//	            (1) goes to G; S = [e d c], M = [a], G = [b]
//	b           evict S: c to G; b is in G: M = [b a], G = [c]
//	a           hit (a counts 1)
//	c           evict S: d to G; c from G: M = [c b a], G = [d]
//	d           evict S: e to G; d from G: M = [d c b a], S empty, G = [e]
//	c c c c     hits; c's count saturates at 3
//	x           S is below its share: evict M: a (1) back to the head
//	            with 0, b (0) evicted; S = [x]
//	y           evict S: x to G; S = [y], G = [x e]
//	e           evict S: y to G; e from G: M = [e a d c], G = [y x]
//	z           evict M: c (3) back with 2, d (0) evicted; S = [z]
func TestS3FIFOWorked(t *testing.T) {
	const a, b, c, d, e, x, y, z = 0, 1, 2, 3, 4, 5, 6, 7
	tr := []int32{a, b, c, d, a, a, b, e, b, a, c, d, c, c, c, c, x, y, e, z}
	wantHits := []int{4, 5, 6, 9, 12, 13, 14, 15}
	want := s3State{S: []int32{z}, M: []int32{c, e, a}, G: []int32{y, x}, freq: map[int32]int{z: 0, c: 2, e: 0, a: 0}}
	cache := mustDynamic(t, "cache.s3fifo", rowsDataset(10), 4).(*S3FIFO)
	if at := hitPattern(cache, tr); !slices.Equal(at, wantHits) {
		t.Errorf("hits at %v, want %v", at, wantHits)
	}
	if st := s3StateOf(cache); !st.equal(want) {
		t.Errorf("end state\n got %v\nwant %v", st, want)
	}
	ref := newRefS3(4, 1, 10)
	for _, v := range tr {
		ref.read(v)
	}
	if !ref.state().equal(want) {
		t.Errorf("the reference ends in %v, the hand-worked trace in %v", ref.state(), want)
	}
}

// TestS3FIFOSizes: S's share rounds up, whole products exactly.
func TestS3FIFOSizes(t *testing.T) {
	for _, tc := range []struct {
		ratio       float64
		size, small int
	}{{0.1, 30, 3}, {0.1, 25, 3}, {0.1, 10, 1}, {0.1, 1, 1}, {0.1, 0, 0}, {0.3, 10, 3}, {0.7, 10, 7}, {0.5, 3, 2}, {1e-12, 5, 1}} {
		c := &S3FIFO{SmallRatio: tc.ratio}
		c.SetBytes(int64(4 * tc.size))
		if err := c.Init(rowsDataset(40)); err != nil {
			t.Fatal(err)
		}
		if c.small != tc.small || c.main != tc.size-tc.small {
			t.Errorf("ratio %v of %d rows: S %d, M %d; want %d, %d", tc.ratio, tc.size, c.small, c.main, tc.small, tc.size-tc.small)
		}
	}
}

// TestS3FIFOOptions: small_ratio outside (0, 1) is refused, naming it.
func TestS3FIFOOptions(t *testing.T) {
	for _, r := range []float64{0, 1, -0.5, 2} {
		c := &S3FIFO{Capacity: Capacity{Capacity: 0.5}, SmallRatio: r}
		if _, err := registry.Ready(context.Background(), c); err == nil || !strings.Contains(err.Error(), "small_ratio") {
			t.Errorf("small_ratio %v: %v", r, err)
		}
		if err := c.Init(rowsDataset(10)); err == nil || !strings.Contains(err.Error(), "cache.s3fifo: small_ratio") {
			t.Errorf("Init with small_ratio %v: %v", r, err)
		}
	}
}

// BenchmarkDynamic replays a Zipf trace over 2^16 nodes through every
// registered online cache holding 10% of them (warm after the first
// pass): ns/op is per read.
func BenchmarkDynamic(b *testing.B) {
	const n = 1 << 16
	d := rowsDataset(n)
	z := rand.NewZipf(rand.New(rand.NewPCG(5, 6)), 1.05, 1, n-1)
	tr := make([]int32, 1<<16)
	for i := range tr {
		tr[i] = int32(z.Uint64())
	}
	for _, m := range registry.Namespace("cache") {
		if _, ok := m.New().(Dynamic); !ok {
			continue
		}
		b.Run(m.ID, func(b *testing.B) {
			c := mustDynamic(b, m.ID, d, n/10)
			hits := 0
			b.ResetTimer()
			for i := 0; i < b.N; i += len(tr) {
				hits += c.Access(tr[:min(len(tr), b.N-i)])
			}
			b.ReportMetric(float64(hits)/float64(b.N), "hits/read")
		})
	}
}
