package engine

import (
	"context"

	"strata/core/backend"
	"strata/core/ir"
)

// An aggregation (sum, mean or gcn) read only by a bias, itself read only
// by a ReLU or by nothing but what follows the bias, runs as one
// SpMMBiasAct on backends that have it (backend.SpMMBiasActer): the last
// op of the chain holds the result, from the aggregation's step on, and
// the aggregation's and bias's values are never formed (the buffer plan
// gives them none). Their backwards read no values, and a ReLU is only
// taken in when its backward does not read its input either (it reads
// the sign from its dropout's output, see reluSigns) or the program is
// for inference. The products are SpMM's, Elementwise's and Apply's bit
// for bit; the gain is two passes over the output fewer (GCN's layers).
// Not fused: values a caller reads after the forward (outputs, the last
// hidden layer), and the reference binding without sharing (noShare).

// fuseEpilogues marks the chains that run as one SpMMBiasAct.
func (p *Program) fuseEpilogues(model *ir.Graph) {
	if _, ok := p.be.(backend.SpMMBiasActer); !ok || p.noShare || p.env.Split {
		return // a split keeps the aggregations' outputs: they are formed
	}
	n := len(p.g.Ops)
	readers := make([][]int32, n)
	for i, op := range p.g.Ops {
		for _, a := range op.Args {
			readers[a] = append(readers[a], int32(i))
		}
	}
	pinned := map[int32]bool{}
	for _, o := range p.g.Outputs {
		pinned[o] = true
	}
	if h, ok := model.LastHidden(); ok && p.plan.planned(h) >= 0 {
		pinned[p.plan.planned(h)] = true
	}
	// only returns the one reader of i, when it is of kind and reads i
	// as its first argument (and only there).
	only := func(i int32, kind ir.Kind) (int32, bool) {
		if len(readers[i]) != 1 || pinned[i] || p.plan.prefix[readers[i][0]] {
			return 0, false
		}
		r := &p.g.Ops[readers[i][0]]
		return readers[i][0], r.Kind == kind && r.Args[0] == i && (len(r.Args) < 2 || r.Args[1] != i)
	}
	for i := range p.g.Ops {
		op := &p.g.Ops[i]
		agg := int32(i)
		if op.Kind != ir.OpAggregate || op.Reducer != "sum" && op.Reducer != "mean" && op.Reducer != "gcn" {
			continue
		}
		bias, ok := only(agg, ir.OpBias)
		if !ok || !learnable(&p.g.Ops[p.g.Ops[bias].Args[1]]) {
			continue
		}
		target := bias
		if r, ok := only(bias, ir.OpReLU); ok && (p.env.Inference || p.xFor[r] >= 0) {
			target = r
			p.aux[bias].inEpilogue, p.aux[bias].epilogueOf = true, -1
		}
		p.aux[agg].epilogue = target
		p.aux[agg].inEpilogue, p.aux[agg].epilogueOf = true, -1
		p.aux[target].inEpilogue, p.aux[target].epilogueOf = true, agg
	}
}

// forwardEpilogue runs aggregation op i and the bias (and ReLU) after it
// as one SpMMBiasAct into the chain's last value.
func (p *Program) forwardEpilogue(ctx context.Context, i int32) error {
	op := &p.g.Ops[i]
	w := p.adj(op.Args[0])
	target := p.aux[i].epilogue
	bias := target
	act := backend.Identity
	if p.g.Ops[target].Kind == ir.OpReLU {
		bias, act = p.g.Ops[target].Args[0], backend.ReLU
	}
	var norm = w.GCNNorm
	switch op.Reducer {
	case "sum":
		norm = nil
	case "mean":
		norm = w.MeanNorm
	}
	p.cur[i] = nil
	// The bias is a parameter's value (its op may come later in the
	// graph, so it has no current value yet in the first forward).
	return p.be.(backend.SpMMBiasActer).SpMMBiasAct(ctx, w.Adj, norm, p.val(op.Args[1]), p.vals[p.g.Ops[bias].Args[1]], act, 0, p.vals[target])
}

// learnable reports whether op is a param with a gradient (not a buffer).
func learnable(op *ir.Op) bool { return op.Kind == ir.OpParam && !op.Buffer }
