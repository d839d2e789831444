// Package worktest bounds the work a call does by what it allocates, not
// by how long it takes: a test that a refusal comes before an expansion,
// or that a parser stays linear, then holds on a loaded machine, where a
// wall-clock bound fails at random. Speed itself is measured by
// benchmarks.
package worktest

import (
	"runtime"
	"testing"
)

// Allocated returns the bytes f allocates on the heap (all goroutines;
// the test must not run beside parallel tests of its package).
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// MaxAlloc fails t when f allocates more than limit bytes; what names f.
func MaxAlloc(t testing.TB, what string, limit uint64, f func()) {
	t.Helper()
	if n := Allocated(f); n > limit {
		t.Errorf("%s allocated %.1f MiB, more than the bound of %.1f MiB", what, float64(n)/(1<<20), float64(limit)/(1<<20))
	}
}

// Linear fails t unless f's allocations grow at most linearly with its
// size: f(2n) may allocate at most 3 times what f(n) does. A linear cost
// doubles and a quadratic one quadruples; the slack between covers
// buffers that grow by doubling (a buffer just past a doubling at 2n
// holds up to twice what it must) and an n log n term. Choose n where
// the cost in question dominates the fixed costs.
func Linear(t testing.TB, what string, n int, f func(n int)) {
	t.Helper()
	small, large := Growth(n, f)
	if float64(large) > linearBound*float64(max(small, 1)) {
		t.Errorf("%s: %d allocated %.1f MiB, %d allocated %.1f MiB: more than linear", what, n, float64(small)/(1<<20), 2*n, float64(large)/(1<<20))
	}
}

// linearBound is the most f(2n) may allocate, as a multiple of f(n).
const linearBound = 3

// Growth returns what f(n) and f(2n) allocate.
func Growth(n int, f func(n int)) (small, large uint64) {
	return Allocated(func() { f(n) }), Allocated(func() { f(2 * n) })
}
