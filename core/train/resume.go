package train

import (
	"maps"
	"slices"
	"strings"

	"strata/core/backend"
	"strata/core/tensor"
)

// trafficBase carries a resumed run's link counters across the restart:
// the backend of a resumed run counts from zero again, and again counts
// its set-up (parameters, cached rows), so the uninterrupted run's
// counters are the checkpoint's plus what the backend counted since the
// set-up. base is checkpoint minus set-up; it is empty for a fresh run.
type trafficBase struct {
	links    []backend.LinkTraffic
	purposes map[string]int64
}

// resumeTraffic returns the base of a run resumed from a checkpoint that
// recorded links and purposes, on a backend that has just counted its
// set-up (setup, setupPurposes).
func resumeTraffic(links []backend.LinkTraffic, purposes map[string]int64, setup []backend.LinkTraffic, setupPurposes map[string]int64) trafficBase {
	b := trafficBase{links: addTraffic(links, setup, -1), purposes: maps.Clone(purposes)}
	if b.purposes == nil {
		b.purposes = map[string]int64{}
	}
	for k, v := range setupPurposes {
		b.purposes[k] -= v
	}
	return b
}

// totals returns the counters of the uninterrupted run: the base plus
// what the backend counted.
func (b trafficBase) totals(links []backend.LinkTraffic, purposes map[string]int64) ([]backend.LinkTraffic, map[string]int64) {
	if len(b.links) == 0 && len(b.purposes) == 0 {
		return links, purposes
	}
	out := maps.Clone(purposes)
	if out == nil {
		out = map[string]int64{}
	}
	for k, v := range b.purposes {
		if out[k] += v; out[k] == 0 {
			delete(out, k)
		}
	}
	return addTraffic(links, b.links, 1), out
}

// addTraffic returns a + sign*b per link (bytes and seconds), sorted by
// link; a link's bandwidth is whichever side knows it.
func addTraffic(a, b []backend.LinkTraffic, sign int) []backend.LinkTraffic {
	byLink := map[string]backend.LinkTraffic{}
	for _, t := range a {
		byLink[t.Link] = t
	}
	for _, t := range b {
		s := byLink[t.Link]
		s.Link = t.Link
		s.Bytes += int64(sign) * t.Bytes
		s.Seconds += float64(sign) * t.Seconds
		if s.GBps == 0 {
			s.GBps = t.GBps
		}
		byLink[t.Link] = s
	}
	out := make([]backend.LinkTraffic, 0, len(byLink))
	for _, t := range byLink {
		if t.Bytes != 0 {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(x, y backend.LinkTraffic) int { return strings.Compare(x.Link, y.Link) })
	return out
}

// linkBytes is the bytes over all links.
func linkBytes(links []backend.LinkTraffic) int64 {
	var n int64
	for _, t := range links {
		n += t.Bytes
	}
	return n
}

// tierKeyed is the inverse of tierMap (a checkpoint's peaks by tier name).
func tierKeyed(m map[string]int64) map[tensor.Tier]int64 {
	out := make(map[tensor.Tier]int64, len(m))
	for k, v := range m {
		out[tensor.Tier(k)] = v
	}
	return out
}
