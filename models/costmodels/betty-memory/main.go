//go:build wasip1

// Betty memory model: the peak device memory of one (micro-)batch training
// step, after Yang et al., "Betty: Enabling Large-Scale GNN Training with
// Batch-Level Graph Partitioning" (ASPLOS 2023), §4.4 "Partition memory
// estimation", with the constants of strata's engine and cpu/sim backend.
//
// Betty counts (1) the parameters NP, (2) the input features N_in × H_in,
// (3) the output labels N_out, (4) the blocks, E × 3 words each, (5) the
// hidden outputs Σ N_i × h_i, (6) the aggregator's intermediates (LSTM:
// Σ L_i × B_i × H × 18 in PyTorch), (7) the gradients NP and (8) the
// optimizer state, 2·NP for Adam; its peak is max((6), (7)) plus the rest,
// since PyTorch frees (6) during backward.
//
// strata binds a program once per batch and frees it only at the end, so
// nothing is released between forward and backward and the peak is the
// plain sum. Its terms, in bytes (elt = bytes per float element):
//
//	(1)+(7)+(8) resident  NP·elt·(2 + slots) + in[14]
//	            parameters and their gradients (always allocated), the
//	            optimizer's slots per parameter, and whatever else lives
//	            on the device (batch-norm running statistics, a feature
//	            cache)
//	(2) features          N_in·H_in·elt
//	(3) labels            N_out·8: an int32 label and an int32 row index
//	            per output (training); N_out·4, the int32 argmax of each
//	            output row (inference)
//	(4) blocks            E·(16 + 2·elt) + 8·V: per edge an int32 column,
//	            the transpose's int32 column and int64 edge permutation
//	            (SpMMᵀ in backward), and the GCN and mean edge weights;
//	            8 bytes per row pointer of the CSR and its transpose
//	(5) hidden            H·elt: every value the engine keeps, layer
//	            outputs and the op outputs inside a layer alike
//	(6) aggregators       S·f·elt: S = Σ L_i × B_i × H over the sequence
//	            (LSTM) aggregations, f values kept per element (in[13];
//	            strata's LSTM keeps 6 per edge and hidden unit: 4 gate
//	            pre-activations, the cell and the previous hidden state,
//	            where PyTorch's keeps Betty's 18); mean, sum and GCN
//	            aggregation keep nothing beyond their output and the edge
//	            weights (4); max keeps its int32 argmax (in[11])
//	(7') activations      (G + M + X)·elt + I·4: the gradient of every
//	            value on the path to a parameter, dropout masks, backward
//	            scratch, int32 index buffers (narrowed rows, argmax)
//
// Inputs (counts of elements unless noted; the host computes them from the
// model's op graph and the micro-batch's blocks):
//
//	in[0]  elt, bytes per float element (0 means 4)
//	in[1]  NP, learnable scalars (NP_GNN + NP_Agg)
//	in[2]  optimizer state tensors per parameter (Adam 2, SGD with
//	       momentum 1, SGD 0)
//	in[3]  N_in × H_in, input feature elements (block 0's sources)
//	in[4]  N_out, output nodes (the micro-batch's labelled nodes)
//	in[5]  E, edges of every block graph bound (adj and adj_self apart)
//	in[6]  V, int64 row words: Σ (destinations + sources + 2) over them
//	       (the CSR's and its transpose's row pointers), plus an LSTM
//	       graph's step schedule (2 per destination + max degree + 1)
//	in[7]  H, hidden elements: Σ rows × width over the values kept, with
//	       an LSTM's x·W_ih (4H per source) and, in inference, the LSTM
//	       kernel's temporaries at their peak
//	in[8]  G, activation gradient elements
//	in[9]  M, dropout mask elements
//	in[10] X, backward scratch elements, at their peak (a kernel's
//	       temporaries, such as the LSTM's state gradients, included)
//	in[11] I, int32 index words
//	in[12] S, sequence-aggregator inputs Σ L_i × B_i × H
//	in[13] f, aggregator intermediates per element of S (Betty's 18 for
//	       PyTorch's LSTM; the host passes strata's calibrated value)
//	in[14] resident bytes besides the parameters, their gradients and
//	       the optimizer state (batch-norm running statistics, a feature
//	       cache)
//	in[15] input rows gathered from a feature cache on the device (0
//	       when the host uploads them)
//
// When the input rows are gathered from a feature cache on the device
// (in[15] > 0), the gather, which runs before the step binds anything,
// stages each source tier's rows on the device before scattering them
// into place: at most one more copy of the input rows and two int32
// indices per row, so the peak is at least resident + 2·N_in·H_in·elt +
// 8·in[15].
//
// Op codes:
//
//	0 training step: forward, loss and backward of one micro-batch
//	1 inference: an evaluation forward (in[8], in[9] and in[10] are
//	  ignored; the optimizer state stays resident)
//
// Outputs: out[0] peak bytes, out[1] resident bytes (the floor that no
// number of micro-batches lowers), out[2] batch data bytes (features,
// labels, blocks), out[3] activation bytes ((5), (6) and (7')).
package main

//strata:doc Betty memory estimate (ASPLOS 2023 §4.4): peak device bytes of one micro-batch training step from its sizes; picks train.micro_batches = "auto"

import (
	"math"

	"strata/models/sdk/cost"
)

func main() {}

func init() { cost.Register(predict) }

// Op codes.
const (
	opTrain = iota
	opInfer
)

// Implementation constants of strata's cpu/sim backend (bytes).
const (
	edgeIndexBytes = 16 // int32 column + transposed int32 column + int64 permutation
	edgeWeights    = 2  // GCN and mean weights, elt each
	rowPtrBytes    = 8  // int64 row pointer
	labelBytes     = 8  // int32 label + int32 row index
	argmaxBytes    = 4  // int32 predicted class
	int32Bytes     = 4
)

func predict(op int32, in []float64, out *[cost.NumOutputs]float64) int32 {
	a := func(i int) float64 { return cost.Arg(in, i, 0) }
	for i := range in {
		if !(in[i] >= 0) || math.IsInf(in[i], 0) {
			return cost.BadInputs
		}
	}
	elt := a(0)
	if elt == 0 {
		elt = 4
	}
	np, slots := a(1), a(2)
	resident := np*elt*(2+slots) + a(14)
	blocks := a(5)*(edgeIndexBytes+edgeWeights*elt) + rowPtrBytes*a(6)
	features := a(3) * elt
	agg := a(12) * a(13) * elt
	var data, act float64
	switch op {
	case opTrain:
		data = features + a(4)*labelBytes + blocks
		act = (a(7)+a(8)+a(9)+a(10))*elt + a(11)*int32Bytes + agg
	case opInfer:
		data = features + a(4)*argmaxBytes + blocks
		act = a(7)*elt + a(11)*int32Bytes + agg
	default:
		return cost.UnknownOp
	}
	out[0] = resident + data + act
	if gathered := a(15); gathered > 0 {
		out[0] = max(out[0], resident+2*features+8*gathered)
	}
	out[1], out[2], out[3] = resident, data, act
	if math.IsInf(out[0], 0) {
		return cost.BadInputs
	}
	return cost.OK
}
