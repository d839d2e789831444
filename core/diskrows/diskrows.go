// Package diskrows is the disk feature tier of mini-batch training: the
// feature rows stay in a strata binary graph file and are read with
// positional reads (pread) on demand, behind a host cache whose admission
// and replacement are decided by a cache.* module (a caching.Dynamic that
// is also a caching.Holder). The file is never mapped, so the features are
// never resident beyond the cache and the rows of the batches in flight.
package diskrows

import (
	"fmt"
	"os"
	"sync"

	"strata/core/caching"
	"strata/core/graph"
	"strata/core/safefile"
)

// Stats count a tier's traffic.
type Stats struct {
	Hits   int64 `json:"hits" doc:"rows served from the host cache"`
	Misses int64 `json:"misses" doc:"rows read from the file"`
	Bytes  int64 `json:"bytes" doc:"bytes read from the file"`
	Reads  int64 `json:"reads" doc:"positional reads issued (one per run of adjacent rows)"`
	// DeviceBytes is what the OS read from the storage device while the
	// tier's reads ran: the page cache serves the rest. Linux only (0
	// elsewhere); the process's counter, so a concurrent read of another
	// file in those moments counts too.
	DeviceBytes int64 `json:"device_bytes" doc:"bytes the OS read from the storage device during the tier's reads (Linux /proc/self/io read_bytes; pages of 4 KiB, so up to a page per row run)"`
	// HitRate is Hits / (Hits + Misses), 0 before the first row.
	HitRate float64 `json:"hit_rate" doc:"share of the rows asked for that the host cache served"`
}

// Sub returns s − o, field by field: the traffic between two readings.
func (s Stats) Sub(o Stats) Stats {
	return Stats{Hits: s.Hits - o.Hits, Misses: s.Misses - o.Misses, Bytes: s.Bytes - o.Bytes, Reads: s.Reads - o.Reads, DeviceBytes: s.DeviceBytes - o.DeviceBytes}.withRate()
}

// withRate fills HitRate from the counts.
func (s Stats) withRate() Stats {
	s.HitRate = 0
	if n := s.Hits + s.Misses; n > 0 {
		s.HitRate = float64(s.Hits) / float64(n)
	}
	return s
}

// Options size a tier.
type Options struct {
	// CacheBytes bounds the host cache (whole rows).
	CacheBytes int64
	// Readers is how many positional reads run in parallel (≥ 1).
	Readers int
	// DropPageCache makes StartEpoch evict the file's feature rows from
	// the OS page cache, so an epoch reads from the device what the host
	// cache misses (a cold measurement).
	DropPageCache bool
}

// Tier serves feature rows from a file through a host cache. Gather is
// safe for concurrent use (calls are serialised).
type Tier struct {
	mu       sync.Mutex
	f        *os.File
	off      int64 // byte offset of row 0
	n, dim   int
	rowBytes int64
	pol      caching.Dynamic
	hold     caching.Holder
	slot     []int32   // per node: its cache slot, or -1
	owner    []int32   // per slot: its node, or -1
	data     []float32 // slots × dim
	free     []int32
	hand     int
	readers  int
	drop     bool
	st       Stats
}

// Open opens the tier over the rows×dim float32 matrix at byte offset off
// of the file at path. pol decides what the cache holds; it must also be a
// caching.Holder, and is initialised for d. The file is read with
// readahead off (its accesses are random): a miss reads its own pages.
func Open(path string, off int64, d *graph.Dataset, pol caching.Dynamic, o Options) (*Tier, error) {
	cacheBytes, readers := o.CacheBytes, o.Readers
	hold, ok := pol.(caching.Holder)
	if !ok {
		return nil, fmt.Errorf("disk tier: the cache policy %T does not report the rows it holds (caching.Holder)", pol)
	}
	if cacheBytes < 0 || readers < 1 || d.FeatDim <= 0 {
		return nil, fmt.Errorf("disk tier: cache bytes %d, readers %d, feature width %d", cacheBytes, readers, d.FeatDim)
	}
	if bs, ok := pol.(caching.ByteSized); ok {
		bs.SetBytes(cacheBytes)
	}
	if err := pol.Init(d); err != nil {
		return nil, fmt.Errorf("disk tier: %w", err)
	}
	f, st, err := safefile.Open(path) // the gate: no special files
	if err != nil {
		return nil, fmt.Errorf("disk tier: %w", err)
	}
	rb := int64(d.FeatDim) * 4
	if need := off + int64(d.NumNodes)*rb; off < 0 || st.Size() < need {
		f.Close()
		return nil, fmt.Errorf("disk tier: %s holds %d bytes, but %d rows of %d features at offset %d need %d: %w", path, st.Size(), d.NumNodes, d.FeatDim, off, need, graph.ErrRange)
	}
	slots := int(min(cacheBytes/rb, int64(d.NumNodes)))
	t := &Tier{f: f, off: off, n: d.NumNodes, dim: d.FeatDim, rowBytes: rb, pol: pol, hold: hold,
		slot: make([]int32, d.NumNodes), owner: make([]int32, slots), data: make([]float32, slots*d.FeatDim),
		free: make([]int32, 0, slots), readers: readers, drop: o.DropPageCache}
	adviseRandom(f)
	for i := range t.slot {
		t.slot[i] = -1
	}
	for s := slots - 1; s >= 0; s-- {
		t.owner[s] = -1
		t.free = append(t.free, int32(s))
	}
	return t, nil
}

// Close closes the file.
func (t *Tier) Close() error { return t.f.Close() }

// StartEpoch prepares the tier for an epoch: with Options.DropPageCache
// the file's feature rows leave the OS page cache.
func (t *Tier) StartEpoch() error {
	if !t.drop {
		return nil
	}
	if err := dropPageCache(t.f, t.off, int64(t.n)*t.rowBytes); err != nil {
		return fmt.Errorf("disk tier: dropping %s from the page cache: %w", t.f.Name(), err)
	}
	return nil
}

// RowBytes is the size of one row in the file.
func (t *Tier) RowBytes() int64 { return t.rowBytes }

// Stats returns the counts so far.
func (t *Tier) Stats() Stats { t.mu.Lock(); defer t.mu.Unlock(); return t.st.withRate() }

// miss is one row to read: its node and where it goes in the output.
type miss struct{ node, pos int32 }

// Gather returns the rows of ids (len(ids)×dim). Each id is presented to
// the policy in order; a row the policy and the cache hold is copied from
// the cache, every other one is read from the file. The rows read are
// sorted, coalesced into runs of adjacent rows and read in parallel, so
// the bytes read are exactly the distinct rows missed × the row size.
func (t *Tier) Gather(ids []int32) ([]float32, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]float32, len(ids)*t.dim)
	var misses []miss
	var one [1]int32
	for i, v := range ids {
		if v < 0 || int(v) >= t.n {
			return nil, fmt.Errorf("disk tier: row %d out of [0, %d)", v, t.n)
		}
		one[0] = v
		hit := t.pol.Access(one[:]) == 1
		if s := t.slot[v]; s >= 0 {
			if hit {
				copy(out[i*t.dim:(i+1)*t.dim], t.data[int(s)*t.dim:(int(s)+1)*t.dim])
				t.st.Hits++
				continue
			}
			t.release(s) // the policy dropped it: it is re-read
		}
		misses = append(misses, miss{v, int32(i)})
	}
	if err := t.read(misses, out); err != nil {
		return nil, err
	}
	for _, m := range misses {
		if t.slot[m.node] < 0 && t.hold.Holds(m.node) {
			t.admit(m.node, out[int(m.pos)*t.dim:(int(m.pos)+1)*t.dim])
		}
	}
	return out, nil
}

func (t *Tier) release(s int32) {
	t.slot[t.owner[s]], t.owner[s] = -1, -1
	t.free = append(t.free, s)
}

// admit copies row into a free slot, first reclaiming (clock hand) a slot
// whose node the policy no longer holds; with none, the row is not kept.
func (t *Tier) admit(v int32, row []float32) {
	if len(t.free) == 0 {
		for k := 0; k < len(t.owner); k++ {
			s := int32(t.hand)
			t.hand = (t.hand + 1) % len(t.owner)
			if o := t.owner[s]; o >= 0 && !t.hold.Holds(o) {
				t.release(s)
				break
			}
		}
		if len(t.free) == 0 {
			return
		}
	}
	s := t.free[len(t.free)-1]
	t.free = t.free[:len(t.free)-1]
	t.owner[s], t.slot[v] = v, s
	copy(t.data[int(s)*t.dim:(int(s)+1)*t.dim], row)
}
