//go:build !unix

package cpu

// mapRegion returns n bytes of Go memory where anonymous mappings are
// not available: the pool still recycles, but its regions are Go heap.
func mapRegion(n int64) ([]byte, error) { return make([]byte, n), nil }

// unmapRegion leaves r to the garbage collector.
func unmapRegion([]byte) error { return nil }
