// Package cpu implements backend.Backend on the host. GEMM runs through
// OpenBLAS (gonum's netlib cgo binding); the sparse and index kernels are C
// with AVX2/FMA (kernels.c), called once per chunk of rows, with the chunks
// spread over goroutines. Elementwise ops, reductions and the NN helpers are
// Go. Every result is a deterministic function of the inputs: each output
// element is computed by exactly one goroutine in a fixed order, and
// reductions use a chunking that does not depend on the thread count.
package cpu

import (
	"fmt"
	"runtime"
	"sync"

	"strata/core/backend"
	"strata/core/tensor"
)

// Options configures a Backend.
type Options struct {
	// Threads is the number of goroutines used by one call; 0 means
	// GOMAXPROCS. OpenBLAS itself runs single-threaded (see gemm.go).
	Threads int
}

// Backend is the host backend. Like every backend it serves one goroutine at
// a time and parallelises internally.
type Backend struct {
	threads int

	mu    sync.Mutex // guards inUse and peak (graph cleanups may run concurrently)
	inUse int64
	peak  int64
}

var _ backend.Backend = (*Backend)(nil)

// New returns a host backend.
func New(opts Options) *Backend {
	n := opts.Threads
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	initBLAS()
	return &Backend{threads: n}
}

// Threads returns the number of goroutines a call may use.
func (b *Backend) Threads() int { return b.threads }

// Name returns "cpu".
func (b *Backend) Name() string { return "cpu" }

// Tiers returns the host tier only.
func (b *Backend) Tiers() []tensor.Tier { return []tensor.Tier{tensor.Host} }

func errf(op, format string, args ...any) error {
	return fmt.Errorf("cpu: "+op+": "+format, args...)
}
