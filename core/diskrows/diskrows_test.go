package diskrows_test

import (
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"testing"

	"strata/core/caching"
	"strata/core/diskrows"
	"strata/core/graph/formats"
	"strata/core/train/strategytest"
	"strata/plugins/cache"
)

// batches draws nb batches of distinct ids (as a sampler's input lists).
func batches(n, nb, size int) [][]int32 {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([][]int32, nb)
	for b := range out {
		out[b] = make([]int32, 0, size)
		for _, v := range r.Perm(n)[:size] {
			out[b] = append(out[b], int32(v))
		}
	}
	return out
}

// policies are fresh dynamic cache modules.
func policies() map[string]func() caching.Dynamic {
	return map[string]func() caching.Dynamic{
		"lru": func() caching.Dynamic { return &cache.LRU{} }, "clock": func() caching.Dynamic { return &cache.Clock{} },
		"sieve": func() caching.Dynamic { return &cache.Sieve{} }, "s3fifo": func() caching.Dynamic { return &cache.S3FIFO{SmallRatio: 0.1} },
	}
}

// TestTierRowsAndCounts checks, per policy and cache size, that the rows
// are the file's bit for bit, that the hits are the policy's own on the
// same accesses, and that the bytes read are the misses × the row size.
func TestTierRowsAndCounts(t *testing.T) {
	path, d := strategytest.CoraBinary(t)
	off, _, _, err := formats.FeatureSection(path)
	if err != nil {
		t.Fatal(err)
	}
	rb := int64(d.FeatDim) * 4
	bs := batches(d.NumNodes, 12, 400)
	for name, mk := range policies() {
		for _, rows := range []int64{0, 300, int64(d.NumNodes)} {
			// One size reads cold: the page cache is dropped every few
			// batches, which must change no row and no count.
			cold := rows == 300 && runtime.GOOS == "linux"
			tier, err := diskrows.Open(path, off, d, mk(), diskrows.Options{CacheBytes: rows * rb, Readers: 3, DropPageCache: cold})
			if err != nil {
				t.Fatal(err)
			}
			ref := mk()
			ref.(caching.ByteSized).SetBytes(rows * rb)
			if err := ref.Init(d); err != nil {
				t.Fatal(err)
			}
			wantHits, seen := 0, map[int32]bool{}
			for k, b := range bs {
				if k%4 == 0 {
					if err := tier.StartEpoch(); err != nil {
						t.Fatal(err)
					}
				}
				got, err := tier.Gather(b)
				if err != nil {
					t.Fatal(err)
				}
				for i, v := range b {
					seen[v] = true
					for j := range d.FeatDim {
						if got[i*d.FeatDim+j] != d.Features[int(v)*d.FeatDim+j] {
							t.Fatalf("%s/%d: row %d col %d differs", name, rows, v, j)
						}
					}
					wantHits += ref.Access([]int32{v})
				}
			}
			st := tier.Stats()
			if st.Hits != int64(wantHits) || st.Hits+st.Misses != int64(12*400) || st.Bytes != st.Misses*rb {
				t.Errorf("%s/%d rows: %+v, want %d hits, bytes = misses × %d", name, rows, st, wantHits, rb)
			}
			if rows == 0 && st.Hits != 0 {
				t.Errorf("%s: capacity 0 gave %d hits", name, st.Hits)
			}
			if rows == int64(d.NumNodes) && st.Misses != int64(len(seen)) {
				t.Errorf("%s: a cache of every row read %d rows, want each of the %d once", name, st.Misses, len(seen))
			}
			tier.Close()
		}
	}
}

// TestTierRejects checks the inputs Open refuses.
func TestTierRejects(t *testing.T) {
	path, d := strategytest.CoraBinary(t)
	off, _, _, _ := formats.FeatureSection(path)
	for _, c := range []struct {
		name    string
		bytes   int64
		readers int
	}{{"negative cache", -1, 1}, {"no readers", 0, 0}} {
		if _, err := diskrows.Open(path, off, d, &cache.LRU{}, diskrows.Options{CacheBytes: c.bytes, Readers: c.readers}); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
	if _, _, _, err := formats.FeatureSection(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("FeatureSection of a missing file: no error")
	}
}
