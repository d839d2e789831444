package ir

import "fmt"

// Link chains layers into one model graph: layer i's input "x" becomes
// layer i-1's output, graphs are shared, and parameters are renamed
// "l<i>.<name>" so they are unique checkpoint keys. The first layer's input
// stays the model input.
func Link(layers []*Graph) (*Graph, error) {
	if len(layers) == 0 {
		return nil, fmt.Errorf("model has no layers")
	}
	var out Graph
	graphs := map[string]int32{}
	prev := int32(-1)
	for li, l := range layers {
		remap := make([]int32, len(l.Ops))
		for i, op := range l.Ops {
			switch {
			case op.Kind == OpInput && li > 0:
				want := out.Ops[prev].Shape[1]
				if op.Shape[1] != want {
					return nil, fmt.Errorf("layer %d takes input width %d but layer %d produces %d", li, op.Shape[1], li-1, want)
				}
				remap[i] = prev
				continue
			case op.Kind == OpGraph:
				if h, ok := graphs[op.Name]; ok {
					remap[i] = h
					continue
				}
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
			if op.Kind == OpGraph {
				graphs[op.Name] = remap[i]
			}
		}
		if len(l.Outputs) != 1 {
			return nil, fmt.Errorf("layer %d has %d outputs, want 1", li, len(l.Outputs))
		}
		prev = remap[l.Outputs[0]]
	}
	out.Outputs = []int32{prev}
	return &out, nil
}
