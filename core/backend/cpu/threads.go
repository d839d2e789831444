package cpu

import "strata/core/backend"

var _ backend.Threaded = (*Backend)(nil)

// WithThreads implements backend.Threaded: a view sharing b's memory
// accounting whose calls use n goroutines (at least 1). Results do not
// depend on n (see the package comment).
func (b *Backend) WithThreads(n int) backend.Backend {
	return &Backend{threads: max(n, 1), capacity: b.capacity, mem: b.mem, recycle: b.recycle, fit: b.fit}
}
