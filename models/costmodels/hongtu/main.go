//go:build wasip1

// HongTu cost model (Wang et al., "HongTu: Scalable Full-Graph GNN
// Training on Multiple GPUs", SIGMOD 2023): the communication cost of
// deduplicated communication (§5.3, Eq. 4) and the choice between caching
// and recomputing a layer's intermediate results (§4.2).
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
// backward reads them) or loads the input rows again and reruns the
// forward (recompute):
//
//	cache     = (2·saved + read·rows)/T_hd
//	recompute = rows/T_hd + forward
//
//	in[0] T_hd GB/s, in[1] saved bytes, in[2] input row bytes,
//	in[3] forward seconds, in[4] 1 if backward reads the input rows
//	out[0] cache seconds, out[1] recompute seconds, out[2] 1 when
//	caching is cheaper, out[3] the cheaper one's seconds
package main

//strata:doc HongTu cost model (SIGMOD 2023): Eq. 4's cost of deduplicated communication and §4.2's cache-or-recompute choice per layer; used by train.mode = "chunked"

import "strata/models/sdk/cost"

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
		if hd <= 0 || saved < 0 || rows < 0 || fwd < 0 {
			return cost.BadInputs
		}
		cache := 2 * saved / hd
		if read != 0 {
			cache += rows / hd
		}
		recompute := rows/hd + fwd
		out[0], out[1] = cache, recompute
		out[2], out[3] = 0, recompute
		if cache < recompute {
			out[2], out[3] = 1, cache
		}
		return cost.OK
	}
	return cost.UnknownOp
}
