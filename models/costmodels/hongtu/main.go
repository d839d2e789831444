//go:build wasip1

// HongTu cost model (Wang et al., "HongTu: Scalable Full-Graph GNN
// Training on Multiple GPUs", SIGMOD 2023): the communication cost of
// deduplicated communication (§5.3, Eq. 4) and the choice between caching,
// splitting and recomputing a layer's intermediate results (§4.2).
//
// Op 0, communication (Eq. 4): the neighbour rows of a layer pass cross
// from the host once per batch and device after deduplication (V_+ru),
// the duplicates between concurrently scheduled chunks move between
// devices (V_ori − V_+p2p), and the duplicates with the previous batch
// are reused on the device (V_+p2p − V_+ru):
//
//	C = V_+ru/T_hd + (V_ori − V_+p2p)/T_dd + (V_+p2p − V_+ru)/T_ru
//
//	in[0] T_hd, host→device bandwidth, GB/s (> 0)
//	in[1] T_dd, device→device bandwidth, GB/s (0: no peer link, the
//	      duplicates go through the host: 2 crossings at T_hd)
//	in[2] T_ru, device memory bandwidth (reuse), GB/s (> 0)
//	in[3] V_ori bytes, in[4] V_+p2p bytes, in[5] V_+ru bytes
//	out[0] C seconds, out[1] host seconds, out[2] peer seconds,
//	out[3] reuse seconds
//
// Op 1, intermediates (§4.2): a layer's backward either loads the
// intermediates its forward left on the host (cache: they cross twice,
// down in forward and up in backward, and the input rows too if the
// backward reads them), loads the input rows again and reruns the
// forward (recompute), or, where the layer splits (Fig. 4c), loads the
// aggregations' outputs its forward left on the host (they cross twice)
// with the input rows the rerun reads (all, the destinations' or none)
// and reruns the ops after the aggregations (split):
//
//	cache     = (2·saved + read·rows)/T_hd
//	recompute = rows/T_hd + forward
//	split     = (2·kept + reload)/T_hd + rerun
//
// The choice is the cheapest; a tie goes to the one that keeps less on
// the host: recompute, then split, then cache.
//
//	in[0] T_hd GB/s, in[1] saved bytes, in[2] input row bytes,
//	in[3] forward seconds, in[4] 1 if backward reads the input rows,
//	in[5] kept bytes (the aggregations' outputs), in[6] the input row
//	bytes the split's backward loads, in[7] rerun seconds, in[8] 1 if
//	the layer splits (absent: it does not)
//	out[0] cache seconds, out[1] recompute seconds, out[2] the choice:
//	0 recompute, 1 cache, 2 split; out[3] split seconds (+Inf when the
//	layer does not split)
package main

//strata:doc HongTu cost model (SIGMOD 2023): Eq. 4's cost of deduplicated communication and §4.2's cache, split or recompute choice per layer; used by train.mode = "chunked"

import (
	"math"

	"strata/models/sdk/cost"
)

func main() {}

func init() { cost.Register(predict) }

// Op codes.
const (
	opComm = iota
	opIntermediates
)

func predict(op int32, in []float64, out *[cost.NumOutputs]float64) int32 {
	a := func(i int) float64 { return cost.Arg(in, i, 0) }
	switch op {
	case opComm:
		hd, dd, ru := a(0)*1e9, a(1)*1e9, a(2)*1e9
		ori, p2p, reuse := a(3), a(4), a(5)
		if hd <= 0 || ru <= 0 || p2p > ori || reuse > p2p || reuse < 0 {
			return cost.BadInputs
		}
		host := reuse / hd
		peer := 2 * (ori - p2p) / hd
		if dd > 0 {
			peer = (ori - p2p) / dd
		}
		local := (p2p - reuse) / ru
		out[0], out[1], out[2], out[3] = host+peer+local, host, peer, local
		return cost.OK
	case opIntermediates:
		hd := a(0) * 1e9
		saved, rows, fwd, read := a(1), a(2), a(3), a(4)
		kept, reload, rerun, splits := a(5), a(6), a(7), a(8)
		if hd <= 0 || saved < 0 || rows < 0 || fwd < 0 || kept < 0 || reload < 0 || rerun < 0 {
			return cost.BadInputs
		}
		cache := 2 * saved / hd
		if read != 0 {
			cache += rows / hd
		}
		recompute := rows/hd + fwd
		split := math.Inf(1)
		if splits != 0 {
			split = (2*kept+reload)/hd + rerun
		}
		// Ties: recompute, then split, then cache (the least kept).
		choice, best := 0.0, recompute
		if split < best {
			choice, best = 2, split
		}
		if cache < best {
			choice = 1
		}
		out[0], out[1], out[2], out[3] = cache, recompute, choice, split
		return cost.OK
	}
	return cost.UnknownOp
}
