package ir

import "fmt"

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
