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
	// Capacity limits the bytes the backend holds at once (tensors,
	// graphs and the scratch of its kernels); 0 means unlimited. An
	// allocation past it fails with a *backend.OutOfMemoryError. A
	// simulated device is a backend with a capacity (see backend/sim).
	Capacity int64
	// PoolBytes bounds the bytes of released buffers the backend keeps
	// for reuse by AllocRecycled (pool.go): 0 means DefaultPoolBytes, a
	// negative value disables the pool.
	PoolBytes int64
	// AVX2Only keeps the dropout kernels on AVX2 where the CPU has
	// AVX-512 (tests compare the two; their results are identical).
	// STRATA_CPU_ISA=avx2 (ISAEnv) sets it for every backend New makes.
	AVX2Only bool
}

// Backend is the host backend: its only tier is tensor.Host. It
// parallelises every call internally. Its memory accounting is safe for
// concurrent use, so two goroutines may drive it at once as long as they
// work on different tensors: a transfer stage filling the next batch while
// the training goroutine computes the current one.
type Backend struct {
	threads  int
	capacity int64
	mem      *memory
	wide     bool // the dropout kernels run with AVX-512 (kernels.c)
	recycle  bool // AllocRecycled takes from the pool (a Recycling view)
	fit      bool // and from regions up to twice its size (a RecyclingFit view)
}

// memory is the host memory in use and its peak, and the recycling pool.
type memory struct {
	mu    sync.Mutex
	inUse int64
	peak  int64
	pool  pool
}

var _ backend.Backend = (*Backend)(nil)

// New returns a host backend. It panics on a bad STRATA_CPU_ISA, which
// the backend modules check first (CheckEnv).
func New(opts Options) *Backend {
	avx2, err := avx2FromEnv()
	if err != nil {
		panic("cpu: " + err.Error())
	}
	n := opts.Threads
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	initBLAS()
	limit := opts.PoolBytes
	if limit == 0 {
		limit = DefaultPoolBytes
	}
	return &Backend{threads: n, capacity: max(opts.Capacity, 0), mem: &memory{pool: pool{limit: limit}}, wide: !opts.AVX2Only && !avx2 && hasAVX512()}
}

// Threads returns the number of goroutines a call may use.
func (b *Backend) Threads() int { return b.threads }

// Name returns "cpu".
func (b *Backend) Name() string { return "cpu" }

// Tiers returns the host tier, the only one.
func (b *Backend) Tiers() []tensor.Tier { return []tensor.Tier{tensor.Host} }

// tierErr checks that tier is the host.
func tierErr(op string, tier tensor.Tier) error {
	if tier != tensor.Host {
		return errf(op, "tier %q is not available (tiers: %v)", tier, []tensor.Tier{tensor.Host})
	}
	return nil
}

func errf(op, format string, args ...any) error {
	return fmt.Errorf("cpu: "+op+": "+format, args...)
}
