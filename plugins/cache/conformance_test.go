package cache

import (
	"testing"

	"strata/core/caching"
	"strata/core/caching/cachetest"
)

// TestConformance runs the cache conformance suites on configurations
// beyond the registered defaults (plugins/all runs those).
func TestConformance(t *testing.T) {
	for _, tt := range []struct {
		name string
		p    func() caching.Policy
	}{
		{"random seed=9 capacity=0.5", func() caching.Policy { return &Random{Capacity: Capacity{Capacity: 0.5}, Seed: 9} }},
		{"presample 2 epochs", func() caching.Policy {
			return &Presample{Capacity: Capacity{Capacity: 0.3}, Epochs: 2, Fanouts: []int{3, 2}, BatchSize: 7, Seed: 4}
		}},
		{"rpagerank 1 iteration", func() caching.Policy {
			return &RPageRank{Capacity{Capacity: 1}, PageRankOptions{Iterations: 1, Damping: 0.5}}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) { cachetest.TestPolicy(t, tt.p) })
	}
	for _, tt := range []struct {
		name string
		d    func() caching.Dynamic
	}{
		{"lru capacity=0.5", func() caching.Dynamic { return &LRU{Capacity: Capacity{Capacity: 0.5}} }},
		{"clock capacity=0.01", func() caching.Dynamic { return &Clock{Capacity: Capacity{Capacity: 0.01}} }},
		{"sieve capacity=0.3", func() caching.Dynamic { return &Sieve{Capacity: Capacity{Capacity: 0.3}} }},
		{"s3fifo capacity=0.5 small_ratio=0.5", func() caching.Dynamic {
			return &S3FIFO{Capacity: Capacity{Capacity: 0.5}, SmallRatio: 0.5}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) { cachetest.TestDynamic(t, tt.d) })
	}
}
