package ir

import (
	"fmt"
	"slices"
)

// SplitLayers undoes Link for layer-by-layer execution: it returns one
// graph per layer of a linked model, each reading its input "x" (the
// previous layer's output, or the model input) as an OpInput of that
// width. Every op's Layer is 0 in the result, so a layer graph binds one
// block; parameter names keep their "l<i>." prefix, so the layer graphs
// bind to the parameter set of the whole model.
func (g *Graph) SplitLayers() ([]*Graph, error) {
	layers := int32(0)
	for _, op := range g.Ops {
		layers = max(layers, op.Layer+1)
	}
	if layers == 0 || len(g.Outputs) != 1 {
		return nil, fmt.Errorf("not a linked model: %d ops, %d outputs", len(g.Ops), len(g.Outputs))
	}
	outs := make([]int32, layers) // each layer's output op
	outs[layers-1] = g.Outputs[0]
	for i, op := range g.Ops {
		for _, a := range op.Args {
			if g.Ops[a].Layer != op.Layer {
				if g.Ops[a].Layer != op.Layer-1 || g.Ops[a].Kind == OpParam || g.Ops[a].Kind == OpGraph {
					return nil, fmt.Errorf("op #%d of layer %d reads op #%d of layer %d, which is not its input: a model that runs layer by layer cannot skip layers (model.jk with more than 2 layers)", i, op.Layer, a, g.Ops[a].Layer)
				}
				if prev := outs[g.Ops[a].Layer]; prev != 0 && prev != a {
					return nil, fmt.Errorf("layer %d reads ops #%d and #%d of layer %d: a model that runs layer by layer passes one tensor between layers", op.Layer, prev, a, g.Ops[a].Layer)
				}
				outs[g.Ops[a].Layer] = a
			}
		}
	}
	out := make([]*Graph, layers)
	for l := range layers {
		remap := map[int32]int32{}
		lg := &Graph{}
		if l > 0 {
			prev := g.Ops[outs[l-1]]
			lg.Ops = append(lg.Ops, Op{Kind: OpInput, Name: "x", Shape: []int64{N, prev.Shape[1]}})
			remap[outs[l-1]] = 0
		}
		for i, op := range g.Ops {
			if op.Layer != l {
				continue
			}
			op.Layer = 0
			op.Args = append([]int32(nil), op.Args...)
			for j, a := range op.Args {
				r, ok := remap[a]
				if !ok {
					return nil, fmt.Errorf("op #%d of layer %d reads op #%d before it is defined", i, l, a)
				}
				op.Args[j] = r
			}
			op.Shape = append([]int64(nil), op.Shape...)
			remap[int32(i)] = int32(len(lg.Ops))
			lg.Ops = append(lg.Ops, op)
		}
		r, ok := remap[outs[l]]
		if !ok {
			return nil, fmt.Errorf("layer %d has no output", l)
		}
		lg.Outputs = []int32{r}
		out[l] = lg
	}
	return out, nil
}

// rowWise reports whether op computes each row of its value from the
// same row of its operands and the parameters alone: a product with a
// weight, a bias, dropout, scaling, concatenation, an elementwise
// function.
func (g *Graph) rowWise(op *Op) bool {
	switch op.Kind {
	case OpMatMul:
		return g.Ops[op.Args[1]].Kind == OpParam
	case OpBias, OpDropout, OpScale, OpConcat:
		return true
	}
	s := Spec(op.Kind)
	return s != nil && (s.Class == ClassUnary || s.Class == ClassBinary)
}

// rowPrefix marks the ops of layer g computed from the input row by row
// (rowWise, every operand the input, another such op or a parameter).
func (g *Graph) rowPrefix() []bool {
	in := make([]bool, len(g.Ops))
	for i := range g.Ops {
		op := &g.Ops[i]
		if op.Kind == OpInput {
			in[i] = true
			continue
		}
		if !g.rowWise(op) {
			continue
		}
		row, ok := false, true
		for _, a := range op.Args {
			switch {
			case in[a]:
				row = true
			case g.Ops[a].Kind != OpParam:
				ok = false
			}
		}
		in[i] = row && ok
	}
	return in
}

// RowCut returns the last value of layer g's row-wise prefix (the ops
// computed from the input row by row, before any graph op reads it) when
// the rest of the layer reads that value and no other of the prefix: the
// layer is then pre (input → cut, row by row) followed by the rest over
// the cut's rows (CutRows), and since every row of the cut depends on the
// same row of the input alone, pre can run once per node rather than once
// per chunk source row (a GCN layer that multiplies by W before it
// aggregates: Â·(X·W)). ok is false when the rest reads the input itself
// or several values of the prefix (GraphSAGE's root and neighbour
// products of one dropout), or the layer's output is in the prefix.
func (g *Graph) RowCut() (cut int32, ok bool) {
	in := g.rowPrefix()
	cut = -1
	for i := range g.Ops {
		op := &g.Ops[i]
		if in[i] || op.Kind == OpParam || op.Kind == OpGraph {
			continue
		}
		for _, a := range op.Args {
			if !in[a] {
				continue
			}
			if cut >= 0 && a != cut {
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
	if cut <= 0 || g.Ops[cut].Kind == OpInput {
		return -1, false
	}
	return cut, true
}

// CutRows splits layer g at cut (RowCut): pre computes the cut from the
// input (the prefix ops it reads, its output the cut), post is the rest
// of the layer reading the cut as its input "x". Both keep the ops'
// parameters, names and dropout streams, so each draws the masks the
// whole layer draws for the same rows.
func (g *Graph) CutRows(cut int32) (pre, post *Graph, err error) {
	if c, ok := g.RowCut(); !ok || c != cut {
		return nil, nil, fmt.Errorf("op #%d is not the end of the layer's row-wise prefix", cut)
	}
	pre, post = g.cutAt(cut, g.rowPrefix())
	return pre, post, nil
}

// cutAt splits layer g at cut, the one value of the prefix in (the ops
// before the cut, the input among them) that the rest of the layer
// reads: pre computes the cut from the input, post is the rest over the
// cut's rows.
func (g *Graph) cutAt(cut int32, in []bool) (pre, post *Graph) {
	need := make([]bool, len(g.Ops)) // the ops pre computes
	need[cut] = true
	used := make([]bool, len(g.Ops)) // the parameters and graphs post reads
	for i := len(g.Ops) - 1; i >= 0; i-- {
		for _, a := range g.Ops[i].Args {
			switch {
			case in[i] && need[i]:
				need[a] = true
			case !in[i]:
				used[a] = true
			}
		}
	}
	pre, post = &Graph{}, &Graph{}
	preAt, postAt := map[int32]int32{}, map[int32]int32{cut: 0}
	post.Ops = append(post.Ops, Op{Kind: OpInput, Name: "x", Shape: []int64{N, g.Ops[cut].Shape[1]}})
	for i, op := range g.Ops {
		leaf := op.Kind == OpParam || op.Kind == OpGraph
		if need[i] {
			appendOp(pre, op, preAt, int32(i))
		}
		if !in[i] && (!leaf || used[i]) {
			appendOp(post, op, postAt, int32(i))
		}
	}
	pre.Outputs = []int32{preAt[cut]}
	post.Outputs = make([]int32, len(g.Outputs))
	for k, o := range g.Outputs {
		post.Outputs[k] = postAt[o]
	}
	return pre, post
}

// appendOp appends a copy of op (op #i of the graph cut) to into, its
// operands renumbered by at, and records its place in at.
func appendOp(into *Graph, op Op, at map[int32]int32, i int32) {
	op.Args = slices.Clone(op.Args)
	for k, a := range op.Args {
		op.Args[k] = at[a]
	}
	op.Shape = slices.Clone(op.Shape)
	at[i] = int32(len(into.Ops))
	into.Ops = append(into.Ops, op)
}
