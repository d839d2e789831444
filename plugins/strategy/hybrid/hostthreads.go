package hybrid

import (
	"context"
	"sync"
	"time"
)

// hostThreads holds strategy.hybrid's host stages to the CPU thread
// budget (hybrid.threads), as HyScale gives each task threads of its own:
// the CPU trainers own their training threads, and sampling, feature
// loading and the CPU trainers' bind share the rest (at least one).
// A stage takes its threads before it works and gives them back after,
// so that when the tasks' threads add up to more than the budget (fewer
// than three cores: one each) they take turns instead of time-slicing
// the cores, and each runs at the rate its probe measured beside a busy
// trainer. A stage's measured time starts once it holds its threads; the
// wait shows in the epoch's time (and the model's shared-thread bound,
// costmodel.hyscale op 9), not in the stage's.
type hostThreads struct {
	mu       sync.Mutex
	budget   int
	reserved int           // the CPU trainers' threads
	busy     int           // threads the host stages hold now
	peak     int           // the most they held at once
	waitS    float64       // seconds the host stages waited for threads
	changed  chan struct{} // closed (and replaced) when threads are given back or the reservation changes
}

func newHostThreads(budget, reserved int) *hostThreads {
	return &hostThreads{budget: budget, reserved: reserved, changed: make(chan struct{})}
}

// capacity is the host stages' threads now. The caller holds mu.
func (h *hostThreads) capacity() int { return hostCapacity(h.budget, h.reserved) }

// hostCapacity is the host stages' threads beside n CPU trainer threads
// out of budget: the rest, at least one.
func hostCapacity(budget, n int) int { return max(1, budget-n) }

// wake tells waiting stages that threads may have become free. The
// caller holds mu.
func (h *hostThreads) wake() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// reserve sets the CPU trainers' threads: the step's state's.
func (h *hostThreads) reserve(n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n != h.reserved {
		h.reserved = n
		h.wake()
	}
}

// acquire waits until k threads (at least one, at most the capacity) are
// free for a host stage and takes them. It returns how many it took and
// the function that gives them back, or ctx's error.
func (h *hostThreads) acquire(ctx context.Context, k int) (int, func(), error) {
	t0 := time.Now()
	h.mu.Lock()
	for {
		n := min(max(k, 1), h.capacity())
		if h.busy+n <= h.capacity() {
			h.busy += n
			h.peak = max(h.peak, h.busy)
			h.waitS += time.Since(t0).Seconds()
			h.mu.Unlock()
			var once sync.Once
			return n, func() {
				once.Do(func() {
					h.mu.Lock()
					h.busy -= n
					h.wake()
					h.mu.Unlock()
				})
			}, nil
		}
		ch := h.changed
		h.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			h.mu.Lock()
			h.waitS += time.Since(t0).Seconds()
			h.mu.Unlock()
			return 0, func() {}, ctx.Err()
		}
		h.mu.Lock()
	}
}

// takeStats returns the most threads the host stages held at once and
// the seconds they waited since the last call, and starts both anew.
func (h *hostThreads) takeStats() (peak int, waitS float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	peak, waitS = h.peak, h.waitS
	h.peak, h.waitS = h.busy, 0
	return peak, waitS
}
