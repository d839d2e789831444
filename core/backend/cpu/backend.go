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
	// Tiers adds memory tiers beside the host, all held in host memory: a
	// simulated device is such a tier with a capacity (see backend/sim).
	// Operands of one kernel must share a tier; Copy moves data between
	// tiers.
	Tiers []Tier
	// Transfer, when set, is told of every byte that crosses between two
	// tiers: Upload and UploadGraph (host to the tier), Download (the tier
	// to host) and Copy between different tiers. tag is the tag of the
	// view that moved them (see WithTag; nil for the backend itself).
	Transfer func(from, to tensor.Tier, bytes int64, tag any)
}

// Tier is an extra memory tier.
type Tier struct {
	Name     tensor.Tier
	Capacity int64 // bytes; 0 = unlimited
}

// Backend is the host backend. It parallelises every call internally. Its
// memory accounting is shared by all its views (WithTag) and safe for
// concurrent use, so two goroutines may drive it at once as long as they
// work on different tensors: a transfer stage filling the next batch while
// the training goroutine computes the current one.
type Backend struct {
	threads  int
	tiers    []tensor.Tier
	capacity map[tensor.Tier]int64
	transfer func(from, to tensor.Tier, bytes int64, tag any)
	tag      any // passed to transfer; set by WithTag
	mem      *memory
}

// memory is the use and peak per tier, shared by a backend's views.
type memory struct {
	mu    sync.Mutex
	inUse map[tensor.Tier]int64
	peak  map[tensor.Tier]int64
}

// WithTag returns a view of the backend that shares its tiers, memory and
// tensors and reports its transfers under tag: a simulated device counts
// bytes per purpose this way, without state shared between goroutines.
func (b *Backend) WithTag(tag any) *Backend {
	v := *b
	v.tag = tag
	return &v
}

var _ backend.Backend = (*Backend)(nil)

// New returns a host backend.
func New(opts Options) *Backend {
	n := opts.Threads
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	initBLAS()
	b := &Backend{threads: n, tiers: []tensor.Tier{tensor.Host}, capacity: map[tensor.Tier]int64{},
		transfer: opts.Transfer, mem: &memory{inUse: map[tensor.Tier]int64{}, peak: map[tensor.Tier]int64{}}}
	for _, t := range opts.Tiers {
		if t.Name != tensor.Host {
			b.tiers = append(b.tiers, t.Name)
		}
		b.capacity[t.Name] = t.Capacity
	}
	return b
}

// Threads returns the number of goroutines a call may use.
func (b *Backend) Threads() int { return b.threads }

// Name returns "cpu".
func (b *Backend) Name() string { return "cpu" }

// Tiers returns the host tier and the configured extra tiers.
func (b *Backend) Tiers() []tensor.Tier { return append([]tensor.Tier(nil), b.tiers...) }

// hasTier reports whether t is one of the backend's tiers.
func (b *Backend) hasTier(t tensor.Tier) bool {
	for _, x := range b.tiers {
		if x == t {
			return true
		}
	}
	return false
}

// moved reports bytes that crossed from one tier to another.
func (b *Backend) moved(from, to tensor.Tier, bytes int64) {
	if b.transfer != nil && from != to && bytes > 0 {
		b.transfer(from, to, bytes, b.tag)
	}
}

func errf(op, format string, args ...any) error {
	return fmt.Errorf("cpu: "+op+": "+format, args...)
}
