package ir

import "fmt"

// Link chains layers into one model graph: layer i's input "x" becomes
// layer i-1's output, every op records its layer in Op.Layer, and
// parameters are renamed "l<i>.<name>" so they are unique checkpoint keys.
// The first layer's input stays the model input. Each layer keeps its own
// graph ops, so a mini-batch binds a different block to every layer while
// full-graph training binds the same adjacency to all of them.
func Link(layers []*Graph) (*Graph, error) {
	g, _, err := link(layers)
	if err == nil {
		err = checkModelParams(g)
	}
	if err != nil {
		return nil, err
	}
	return g, nil
}

// link is Link without the parameter limit; it also returns every
// layer's output in the linked graph.
func link(layers []*Graph) (*Graph, []int32, error) {
	if len(layers) == 0 {
		return nil, nil, fmt.Errorf("model has no layers")
	}
	var out Graph
	prev := int32(-1)
	outs := make([]int32, 0, len(layers))
	for li, l := range layers {
		remap := make([]int32, len(l.Ops))
		for i, op := range l.Ops {
			if op.Kind == OpInput && li > 0 {
				want := out.Ops[prev].Shape[1]
				if op.Shape[1] != want {
					return nil, nil, fmt.Errorf("layer %d takes input width %d but layer %d produces %d", li, op.Shape[1], li-1, want)
				}
				remap[i] = prev
				continue
			}
			op.Layer = int32(li)
			if op.Kind == OpDropout {
				op.Stream = StreamOf(li, i)
			}
			op.Args = append([]int32(nil), op.Args...)
			for j, a := range op.Args {
				op.Args[j] = remap[a]
			}
			if op.Kind == OpParam {
				op.Name = fmt.Sprintf("l%d.%s", li, op.Name)
			}
			out.Ops = append(out.Ops, op)
			remap[i] = int32(len(out.Ops) - 1)
		}
		if len(l.Outputs) != 1 {
			return nil, nil, fmt.Errorf("layer %d has %d outputs, want 1", li, len(l.Outputs))
		}
		prev = remap[l.Outputs[0]]
		outs = append(outs, prev)
	}
	out.Outputs = []int32{prev}
	return &out, outs, nil
}

// checkModelParams bounds the parameters of a linked model.
func checkModelParams(g *Graph) error {
	if n := g.NumParams(); n > MaxModelParamElems {
		return fmt.Errorf("the model's parameters hold %s elements, more than the limit of %d: use fewer or narrower layers", elemCount(n), MaxModelParamElems)
	}
	return nil
}

// StreamOf is the Stream of op i of layer li's own graph: distinct for
// every (layer, op) and never 0.
func StreamOf(li, i int) uint64 {
	return uint64(li+1)<<32 | uint64(uint32(i))
}

// LastHidden returns the op whose value is the input of a linked model's
// last layer (the last hidden layer's output, the node embeddings); false
// for a one-layer model, whose last layer reads the model input.
func (g *Graph) LastHidden() (int32, bool) {
	last := int32(0)
	for _, op := range g.Ops {
		last = max(last, op.Layer)
	}
	if last == 0 {
		return 0, false
	}
	for _, op := range g.Ops {
		if op.Layer != last {
			continue
		}
		for _, a := range op.Args {
			if g.Ops[a].Layer == last-1 && g.Ops[a].Kind != OpParam && g.Ops[a].Kind != OpGraph && g.Ops[a].Kind != OpInput {
				return a, true
			}
		}
	}
	return 0, false
}
