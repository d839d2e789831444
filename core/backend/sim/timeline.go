package sim

import (
	"strconv"
)

// A timeline is the predicted schedule of one purpose's transfers: every
// resource (a link direction, or a PCIe switch's uplink direction) has its
// own clock. A transfer occupies the resources it crosses from the moment
// all of them are free until its bytes have passed at the link's
// bandwidth, so transfers on different links overlap and transfers that
// share a link (or a switch) take turns on it. Taking turns at full
// bandwidth finishes the last of them when sharing the bandwidth fairly
// would, so the critical path is that of bandwidth sharing. A copy
// routed through the host crosses its second link after its first
// (store and forward).
//
// The transfers since the last barrier all may run at once; a barrier
// (reading the prediction) waits for all of them, adds their critical
// path to the total and starts every clock again at zero. Byte counts do
// not depend on the schedule.
type timeline struct {
	free map[string]float64 // per resource: when it is next free, seconds since the barrier
	done float64            // the critical paths of the windows before the barrier
}

func newTimeline() *timeline { return &timeline{free: map[string]float64{}} }

// schedule books a transfer of seconds on every resource of res, no
// earlier than ready, and returns when it ends.
func (tl *timeline) schedule(res []string, ready, seconds float64) float64 {
	start := ready
	for _, r := range res {
		start = max(start, tl.free[r])
	}
	end := start + seconds
	for _, r := range res {
		tl.free[r] = end
	}
	return end
}

// barrier ends the current window and returns the total critical path.
func (tl *timeline) barrier() float64 {
	var span float64
	for _, f := range tl.free {
		span = max(span, f)
	}
	tl.done += span
	clear(tl.free)
	return tl.done
}

// resources returns what a transfer over link l occupies: the link, and
// for a host link of a device behind a PCIe switch, the switch's uplink in
// the same direction, which the devices behind the switch share.
func (b *Backend) resources(l Link) []string {
	res := []string{l.String()}
	if s := b.switchOf(l); s >= 0 {
		dir := "down"
		if b.device(l.To) < 0 {
			dir = "up"
		}
		res = append(res, "switch"+strconv.Itoa(s)+":"+dir)
	}
	return res
}

// switchOf returns the PCIe switch a host link of l crosses, or -1 (a
// peer link, or a device with its own host link).
func (b *Backend) switchOf(l Link) int {
	fi, ti := b.device(l.From), b.device(l.To)
	switch {
	case fi >= 0 && ti >= 0:
		return -1
	case fi >= 0:
		return b.topo.SwitchOf(fi)
	default:
		return b.topo.SwitchOf(ti)
	}
}

// linkSeconds is the time of n bytes over l: at the link's bandwidth, or
// at the switch uplink's when that is slower.
func (b *Backend) linkSeconds(l Link, n int64) float64 {
	bw := b.bandwidth(l)
	if b.switchOf(l) >= 0 {
		bw = min(bw, b.topo.SwitchGBps)
	}
	return float64(n) / (bw * 1e9)
}
