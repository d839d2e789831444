//go:build wasip1

// HyScale-GNN performance model: the stage times, epoch time and
// throughput of hybrid CPU + accelerator training, after Lin et al.,
// "HyScale-GNN: A Scalable Hybrid GNN Training System on Single-Node
// Heterogeneous Architecture" (IPDPS 2023), §V, Eq. 5-13.
//
// The host describes the machine (CPU threads and their throughput and
// memory bandwidth, the devices' rooflines, the PCIe bandwidth) and the
// work of one step (edges and rows of each trainer's blocks); the module
// returns seconds. All sizes are counts of elements unless noted; S is
// bytes per feature element (4 for float32).
//
// Op codes and inputs:
//
//	0 sampling (T_samp; the paper measures a profile instead of an
//	  equation, and so do we: the rate comes from a micro-benchmark)
//	  in[0] sampled edges, in[1] threads, in[2] million edges per second
//	  per thread
//	1 feature loading, Eq. 7: in[0] rows gathered (Σ over trainers
//	  |V⁰|), in[1] f⁰, in[2] S, in[3] GB/s per thread, in[4] threads;
//	  strata's addition (absent or 0: Eq. 7 as printed): in[5] bytes of
//	  staging memory allocated fresh for the step, in[6] the GB/s at
//	  which fresh memory is first touched (zeroed by the allocator or
//	  faulted in by the kernel) before the gather writes it. out[1] the
//	  gather, out[2] the first touch.
//	2 data transfer, Eq. 8: in[0] rows sent to one device, in[1] f⁰,
//	  in[2] S, in[3] PCIe GB/s, in[4] topology bytes of the blocks (the
//	  paper counts the features only; 0 reproduces it)
//	3 one trainer, Eq. 10-12: in[0] pipelined (1: ⊕ is max, an FPGA;
//	  0: ⊕ is +, a CPU or GPU), in[1] memory GB/s, in[2] GFLOP/s (N ×
//	  freq; a MAC counts two flops), in[3] S, in[4] L, then per layer
//	  l = 1..L three values at in[5+3(l-1)]: |E^l| edges, f^l the width
//	  the layer aggregates, and the layer's multiply-adds Σ rows × f^l ×
//	  f^(l+1) over its weight matrices (Eq. 12's |V^l| f^l f^(l+1); the
//	  host counts a weight applied before the aggregation on the
//	  block's sources, after it on its destinations). out[1]
//	  aggregation seconds, out[2] update seconds.
//	4 synchronisation, Eq. 13: in[0] model scalars (Σ f^(l-1) f^l),
//	  in[1] S, in[2] PCIe GB/s (0: no device, no transfer)
//	5 one iteration and the throughput, Eq. 5, 6, 9: in[0] T_samp,
//	  in[1] T_load, in[2] T_trans, in[3] max over trainers T_Trainer,
//	  in[4] T_sync, in[5] edges traversed by all trainers, in[6]
//	  pipelined stages (1: Eq. 6's max, two-stage prefetch; 0: the
//	  stages run one after another, their sum). out[0] T_execution,
//	  out[1] MTEPS, out[2] T_prop.
//	7 one layer's pass of one trainer, forward or backward: Eq. 10's
//	  term t_agg^l ⊕ t_upd^l with strata's additions. The paper's
//	  backward (op 3) is the first layer's update plus the later layers'
//	  forward terms; an autodiff's backward computes every weight's
//	  gradient, a weight's input gradient where its input depends on a
//	  parameter (so twice the forward's multiply-adds past the first
//	  layer), and a transposed aggregation where the aggregation's input
//	  needs a gradient; and dropout (drawing a mask and applying it,
//	  forward and backward) is elementwise work Eq. 10 leaves out. in[0]
//	  pipelined (as op 3), in[1] memory GB/s, in[2] GFLOP/s, in[3] S,
//	  in[4] |E^l|, in[5] the width the pass aggregates (0: none), in[6]
//	  the pass's multiply-adds, in[7] dropout elements, in[8] dropout
//	  elements per second in millions. out[0] t_agg ⊕ t_upd + t_drop,
//	  out[1] t_agg, out[2] t_upd, out[3] t_drop.
//	8 sampling on an accelerator (T_SA; the paper profiles it): in[0]
//	  topology bytes read in the device's own memory, in[1] its memory
//	  GB/s, in[2] topology bytes read over links, in[3] their GB/s.
//	9 one iteration with the CPU trainers' bind and the two sides'
//	  trainers apart (strata's Eq. 6): in[0] T_samp, in[1] T_load, in[2]
//	  T_trans (the devices'), in[3] T_bind (the CPU trainers'), in[4]
//	  T_TA, in[5] T_TC, in[6] T_sync, in[7] edges, in[8] pipelined. With
//	  the stages pipelined, max(T_samp, T_load, max(T_trans, T_bind),
//	  max(T_TA, T_TC) + T_sync); without, T_samp + T_load + max(T_trans
//	  + T_TA, T_bind + T_TC) + T_sync: the CPU trainers do not wait for
//	  the devices' transfer. With the stages pipelined, in[9] the
//	  thread-seconds of the host stages that share in[10] threads (the
//	  CPU thread budget less the CPU trainers' threads; absent or 0:
//	  each stage has threads of its own) bound the step from below:
//	  they cannot finish sooner than in[9] / in[10]. out as op 5.
//	6 the CPU trainer's bind (no equation in the paper: the host work
//	  of building each block's adjacency and edge weights and binding
//	  the layer's program before training): in[0] sampled edges, in[1]
//	  M edges per second (one thread), in[2] staged bytes copied into
//	  the trainer's input (0 when the loader gathers into it), in[3]
//	  GB/s of that copy.
package main

//strata:doc HyScale-GNN performance model (IPDPS 2023 §V, Eq. 5-13): stage times, iteration time and MTEPS of hybrid CPU + device training

import (
	"math"

	"strata/models/sdk/cost"
)

func main() {}

func init() { cost.Register(predict) }

// Op codes.
const (
	opSample = iota
	opLoad
	opTransfer
	opTrainer
	opSync
	opIteration
	opBind
	opLayer
	opDeviceSample
	opHybridIteration
)

func predict(op int32, in []float64, out *[cost.NumOutputs]float64) int32 {
	for _, v := range in {
		if !(v >= 0) || math.IsInf(v, 0) {
			return cost.BadInputs
		}
	}
	a := func(i int) float64 { return cost.Arg(in, i, 0) }
	div := func(x, y float64) float64 {
		if x == 0 {
			return 0
		}
		return x / y // y = 0 with work to do gives +Inf: rejected below
	}
	switch op {
	case opSample:
		out[0] = div(a(0), a(1)*a(2)*1e6)
	case opLoad:
		out[1] = div(a(0)*a(1)*a(2), a(3)*1e9*a(4)) // Eq. 7
		out[2] = div(a(5), a(6)*1e9)
		out[0] = out[1] + out[2]
	case opTransfer:
		out[0] = div(a(0)*a(1)*a(2)+a(4), a(3)*1e9) // Eq. 8
	case opTrainer:
		layers := int(a(4))
		if layers < 1 || len(in) < 5+3*layers {
			return cost.BadInputs
		}
		bw, flops, s := a(1)*1e9, a(2)*1e9, a(3)
		agg := make([]float64, layers)
		upd := make([]float64, layers)
		var aggS, updS float64
		for l := range layers {
			e, f, macs := a(5+3*l), a(6+3*l), a(7+3*l)
			agg[l] = div(e*f*s, bw)     // Eq. 11
			upd[l] = div(2*macs, flops) // Eq. 12
			aggS += agg[l]
			updS += upd[l]
		}
		join := func(x, y float64) float64 {
			if a(0) == 1 {
				return max(x, y)
			}
			return x + y
		}
		var t float64
		for l := range layers { // forward
			t += join(agg[l], upd[l])
		}
		t += upd[0] // backward, Eq. 10: the first layer's update only
		for l := 1; l < layers; l++ {
			t += join(agg[l], upd[l])
		}
		out[0], out[1], out[2] = t, aggS, updS
	case opSync:
		if a(2) > 0 {
			out[0] = a(0) * a(1) / (a(2) * 1e9) * 2 // Eq. 13
		}
	case opIteration:
		prop := a(3) + a(4) // Eq. 9
		if a(6) == 1 {
			out[0] = max(a(0), a(1), a(2), prop) // Eq. 6
		} else {
			out[0] = a(0) + a(1) + a(2) + prop
		}
		out[1] = div(a(5), out[0]*1e6) // Eq. 5
		out[2] = prop
	case opLayer:
		agg, upd := div(a(4)*a(5)*a(3), a(1)*1e9), div(2*a(6), a(2)*1e9)
		out[3] = div(a(7), a(8)*1e6)
		if a(0) == 1 {
			out[0] = max(agg, upd) + out[3]
		} else {
			out[0] = agg + upd + out[3]
		}
		out[1], out[2] = agg, upd
	case opHybridIteration:
		if a(8) == 1 {
			out[2] = max(a(4), a(5)) + a(6)
			out[0] = max(a(0), a(1), a(2), a(3), out[2])
			if a(10) > 0 {
				out[0] = max(out[0], a(9)/a(10))
			}
		} else {
			out[2] = max(a(2)+a(4), a(3)+a(5)) + a(6)
			out[0] = a(0) + a(1) + out[2]
		}
		out[1] = div(a(7), out[0]*1e6)
	case opDeviceSample:
		out[0] = div(a(0), a(1)*1e9) + div(a(2), a(3)*1e9)
	case opBind:
		out[0] = div(a(0), a(1)*1e6) + div(a(2), a(3)*1e9)
	default:
		return cost.UnknownOp
	}
	for _, v := range out {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return cost.BadInputs
		}
	}
	return cost.OK
}
