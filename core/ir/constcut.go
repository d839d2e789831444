package ir

import "fmt"

// A layer whose input is fixed (the model's first layer reads the
// features, which no step changes) and which aggregates that input
// before anything learned or random touches it (GCN's Â·X, then ·W) has
// the same aggregation every step: it can be computed once per run and
// the layer then reads it row by row (SGC's precomputation; strategy
// chunked, chunked.precompute).

// constOp reports whether op's value depends on its operands alone,
// the same every step: an aggregation over a graph, scaling,
// concatenation or an elementwise function (no parameter, no dropout,
// no batch statistics; those are checked by the operands and the kind).
func (g *Graph) constOp(op *Op) bool {
	switch op.Kind {
	case OpAggregate, OpScale, OpConcat:
		return true
	}
	s := Spec(op.Kind)
	return s != nil && (s.Class == ClassUnary || s.Class == ClassBinary)
}

// constPrefix marks the ops of layer g computed from its input and its
// graphs alone (constOp, every operand the input, a graph or another
// such op), and, per op, whether a graph op is among what it is computed
// from.
func (g *Graph) constPrefix() (in, aggregated []bool) {
	in = make([]bool, len(g.Ops))
	aggregated = make([]bool, len(g.Ops))
	for i := range g.Ops {
		op := &g.Ops[i]
		switch {
		case op.Kind == OpInput || op.Kind == OpGraph:
			in[i] = true
			continue
		case !g.constOp(op):
			continue
		}
		ok := true
		for _, a := range op.Args {
			ok = ok && in[a]
			aggregated[i] = aggregated[i] || aggregated[a] || g.Ops[a].Kind == OpGraph
		}
		in[i] = ok
	}
	return in, aggregated
}

// ConstCut returns the value of layer g that a run with a fixed input
// can compute once: the last of the ops computed from the input and the
// graphs alone (no parameter, no dropout), an aggregation among them,
// when the rest of the layer reads that value and no other of them and
// is row-wise (no graph op: the layer is then a function of the cut's
// row, CutConst). ok is false for a layer that multiplies or drops out
// its input before it aggregates, reads the input beside the
// aggregation (GraphSAGE's root product, GIN's learnable ε), or
// aggregates again after a learned op (attention, a second hop).
func (g *Graph) ConstCut() (cut int32, ok bool) {
	in, aggregated := g.constPrefix()
	cut = -1
	for i := range g.Ops {
		op := &g.Ops[i]
		if in[i] || op.Kind == OpParam {
			continue
		}
		if !g.rowWise(op) {
			return -1, false
		}
		for _, a := range op.Args {
			if !in[a] {
				continue
			}
			if g.Ops[a].Kind == OpGraph || cut >= 0 && a != cut {
				return -1, false
			}
			cut = a
		}
	}
	for _, o := range g.Outputs {
		if in[o] {
			return -1, false
		}
	}
	if cut < 0 || !aggregated[cut] {
		return -1, false
	}
	return cut, true
}

// CutConst splits layer g at cut (ConstCut): pre computes the cut from
// the input and the graphs, post is the rest of the layer (row-wise)
// reading the cut as its input "x", with the parameters, names and
// dropout streams of the whole layer.
func (g *Graph) CutConst(cut int32) (pre, post *Graph, err error) {
	if c, ok := g.ConstCut(); !ok || c != cut {
		return nil, nil, fmt.Errorf("op #%d is not a fixed aggregation the rest of the layer reads row by row", cut)
	}
	in, _ := g.constPrefix()
	pre, post = g.cutAt(cut, in)
	return pre, post, nil
}
