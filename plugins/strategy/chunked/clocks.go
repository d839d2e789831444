package chunked

import "strata/core/backend"

// deviceClocks is HongTu's concurrent schedule on the simulated clock
// (Fig. 5b): each of the m devices works through its own chunks of a
// pass, its kernels and its links' transfers advancing its own clock, and
// a pass (one layer's forward or backward over all chunks, the gradients'
// all-reduce) ends when the slowest device ends it. Between two
// synchronisation points s, device d is busy b[d][s] seconds
// (backend.BusyCounter); the concurrent epoch is Σ_s max_d b[d][s], the
// sequential one, every chunk after the other on one clock, Σ_s Σ_d
// b[d][s]. Both read the same work: the arithmetic, the plan and the
// bytes are those of the run; only the clock differs.
//
// Bounds: max_d b ≤ Σ_d b with equality when one device does all the
// work of a pass (always, with m = 1), and max_d b ≥ (Σ_d b)/m because
// the largest of m numbers is at least their mean; summed over the
// passes, sequential/m ≤ concurrent ≤ sequential.
type deviceClocks struct {
	be                   backend.BusyCounter // nil: the backend does not predict per device
	off                  bool                // never read the counters (tests: the numerics without the clocks)
	last                 []float64           // the busy times at the last synchronisation point
	concurrent, sequence float64             // this epoch's, so far
	// ConcurrentS and SequentialS are the last finished epoch's.
	ConcurrentS, SequentialS float64
}

// start begins an epoch on the backend's busy counters (none: the clocks
// stay at zero).
func (c *deviceClocks) start(be backend.Backend) {
	c.be, _ = be.(backend.BusyCounter)
	if c.off {
		c.be = nil
	}
	c.concurrent, c.sequence = 0, 0
	c.last = nil
	if c.be != nil {
		c.last = c.be.DeviceBusy()
	}
}

// sync is a synchronisation point: the devices' work since the last one
// ends at the slowest device's clock.
func (c *deviceClocks) sync() {
	if c.be == nil {
		return
	}
	now := c.be.DeviceBusy()
	var slowest, sum float64
	for d, b := range now {
		dt := b - c.last[d]
		slowest = max(slowest, dt)
		sum += dt
	}
	c.concurrent += slowest
	c.sequence += sum
	c.last = now
}

// end records the epoch's two clocks.
func (c *deviceClocks) end() {
	c.ConcurrentS, c.SequentialS = c.concurrent, c.sequence
}
