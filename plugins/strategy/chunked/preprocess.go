package chunked

import (
	"fmt"
	"strings"
	"time"
)

// The phases of chunked training's preprocessing: the one-time work
// newChunkedRun does before the first epoch (HongTu Table 9 counts the
// 2-level partition, the deduplication plans and the reorganisation).
const (
	phaseCostModel     = "cost_model"    // costmodel.hongtu loaded (a WASM module)
	phaseSplit         = "split_plan"    // chunked.intermediates = "split" or "hybrid": each layer's split
	phasePartition     = "partition"     // partitioner.hongtu-2level: METIS, then the chunks of each partition
	phaseChunks        = "chunks"        // each chunk's rows and subgraphs with the full graph's edge weights
	phaseReorganize    = "reorganize"    // Alg. 4 and Eq. 4's price of both schedules
	phasePeak          = "peak_estimate" // each chunk step's device peak (with devices.memory_bytes)
	phaseComm          = "comm_volumes"  // V_ori, V_+p2p, V_+ru of the plan and Eq. 4's price (the figures)
	phaseDedup         = "dedup_plan"    // the transition sets of every batch and the reuse plan
	phaseParams        = "params"        // every device's replica of the parameters
	phaseHostTier      = "host_tier"     // the host tier allocated, the features copied into it
	phaseIntermediates = "intermediates" // cache, split or recompute per layer (hybrid: by costmodel.hongtu)
	phasePrecompute    = "precompute"    // chunked.precompute: layer 0's aggregation of the features, once
	phaseOther         = "other"         // the rest of the set-up, between the phases
)

// preprocessPhases lists the phases in the order they run, "other" last.
func preprocessPhases() []string {
	return []string{phaseCostModel, phaseSplit, phasePartition, phaseChunks, phaseReorganize, phasePeak,
		phaseComm, phaseDedup, phaseParams, phaseHostTier, phaseIntermediates, phasePrecompute, phaseOther}
}

// phaseClock measures the preprocessing phases by the wall clock.
type phaseClock struct {
	start time.Time
	d     map[string]time.Duration
	total time.Duration // set by stop
}

func newPhaseClock() *phaseClock {
	return &phaseClock{start: time.Now(), d: map[string]time.Duration{}}
}

// time runs fn and adds its wall-clock time to phase (a nil clock only
// runs fn).
func (c *phaseClock) time(phase string, fn func() error) error {
	if c == nil {
		return fn()
	}
	t := time.Now()
	err := fn()
	c.d[phase] += time.Since(t)
	return err
}

// stop ends the preprocessing: the time since the clock started is the
// total, and what no phase measured is "other" (the phases are disjoint
// intervals of the total, so it is not negative).
func (c *phaseClock) stop() {
	c.total = time.Since(c.start)
	var sum time.Duration
	for p, d := range c.d {
		if p != phaseOther {
			sum += d
		}
	}
	c.d[phaseOther] = c.total - sum
}

// seconds returns every phase's time in seconds (0 for a phase that did
// not run).
func (c *phaseClock) seconds() map[string]float64 {
	out := map[string]float64{}
	for _, p := range preprocessPhases() {
		out[p] = c.d[p].Seconds()
	}
	return out
}

// line is the log line of the preprocessing: the total and each phase
// that took any time, in order.
func (c *phaseClock) line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "chunked: preprocessing %.3f s:", c.total.Seconds())
	for _, p := range preprocessPhases() {
		if d := c.d[p]; d > 0 {
			fmt.Fprintf(&b, " %s %.3f s,", p, d.Seconds())
		}
	}
	return strings.TrimSuffix(b.String(), ",")
}
