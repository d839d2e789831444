//go:build wasip1

// Roofline cost model: an op takes
//
//	t = max(flops / peak, bytes / bandwidth) + launch overhead
//
// Inputs (the first four describe the machine):
//
//	in[0] peak compute, GFLOP/s (> 0)
//	in[1] memory bandwidth, GB/s (> 0)
//	in[2] launch overhead per op, µs (>= 0)
//	in[3] bytes per element (0 means 4, float32)
//	in[4...] the op's sizes, below
//
// Op codes and their sizes (E = edges/nnz, F = feature columns):
//
//	0 generic      in[4] flops, in[5] bytes
//	1 gemm         in[4] M, in[5] K, in[6] N           flops 2MKN, bytes (MK+KN+MN)·elt
//	2 spmm         in[4] rows, in[5] E, in[6] F, in[7] 1 if weighted
//	               flops (1+weighted)·E·F, bytes E·F·elt + E·(4 + weighted·elt) + 8·(rows+1) + rows·F·elt
//	3 edge (sddmm, u_add_v, u_dot_v)  in[4] E, in[5] F per endpoint, in[6] H per edge
//	               flops 2·E·F, bytes 2·E·F·elt + 8·E + E·H·elt
//	4 elementwise  in[4] elements, in[5] operands (0 means 1), in[6] flops per element (0 means 1)
//	               flops n·fpe, bytes n·(operands+1)·elt
//	5 edge softmax in[4] E, in[5] H, in[6] rows
//	               flops 5·E·H, bytes 3·E·H·elt + 4·E + 8·(rows+1)
//
// Outputs: out[0] seconds, out[1] flops, out[2] bytes, out[3] arithmetic
// intensity (flops per byte; compare with peak/bandwidth to see the bound).
package main

//strata:doc roofline cost model: max(flops/peak, bytes/bandwidth) + launch overhead per op

import (
	"math"

	"strata/models/sdk/cost"
)

func main() {}

func init() { cost.Register(predict) }

// Op codes.
const (
	opGeneric = iota
	opGEMM
	opSpMM
	opEdge
	opElementwise
	opEdgeSoftmax
)

func predict(op int32, in []float64, out *[cost.NumOutputs]float64) int32 {
	peak, bw := cost.Arg(in, 0, 0)*1e9, cost.Arg(in, 1, 0)*1e9
	overhead := cost.Arg(in, 2, 0) * 1e-6
	elt := cost.Arg(in, 3, 0)
	if elt == 0 {
		elt = 4
	}
	a := func(i int) float64 { return cost.Arg(in, 4+i, 0) }
	var flops, bytes float64
	switch op {
	case opGeneric:
		flops, bytes = a(0), a(1)
	case opGEMM:
		m, k, n := a(0), a(1), a(2)
		flops, bytes = 2*m*k*n, (m*k+k*n+m*n)*elt
	case opSpMM:
		rows, e, f, w := a(0), a(1), a(2), 0.0
		if a(3) != 0 {
			w = 1
		}
		flops = (1 + w) * e * f
		bytes = e*f*elt + e*(4+w*elt) + 8*(rows+1) + rows*f*elt
	case opEdge:
		e, f, h := a(0), a(1), a(2)
		flops, bytes = 2*e*f, 2*e*f*elt+8*e+e*h*elt
	case opElementwise:
		n, k, fpe := a(0), a(1), a(2)
		if k == 0 {
			k = 1
		}
		if fpe == 0 {
			fpe = 1
		}
		flops, bytes = n*fpe, n*(k+1)*elt
	case opEdgeSoftmax:
		e, h, rows := a(0), a(1), a(2)
		flops, bytes = 5*e*h, 3*e*h*elt+4*e+8*(rows+1)
	default:
		return cost.UnknownOp
	}
	if !(peak > 0) || !(bw > 0) || !(overhead >= 0) || !(elt > 0) || !(flops >= 0) || !(bytes >= 0) ||
		math.IsInf(peak+bw+overhead+flops+bytes, 0) {
		return cost.BadInputs
	}
	out[0] = max(flops/peak, bytes/bw) + overhead
	out[1], out[2] = flops, bytes
	out[3] = 0
	if bytes > 0 {
		out[3] = flops / bytes
	}
	return cost.OK
}
