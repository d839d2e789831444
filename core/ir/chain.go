package ir

import "fmt"

// Chain returns the graph that runs b on a's output: b's input "x" is
// a's output, and every other op of both is kept as it is (parameters,
// names, layers and dropout streams), a's first. a and b are pieces of
// one linked model (SplitLayers, CutRows, CutConst): the rows a node
// pass computes with a and then b are the rows the chained graph
// computes in one pass, with the same masks. A parameter named in both
// is an error (two values of one name); a graph named in both is the one
// graph the binding gives that name.
func Chain(a, b *Graph) (*Graph, error) {
	if len(a.Outputs) != 1 || len(b.Outputs) != 1 {
		return nil, fmt.Errorf("chain: graphs of %d and %d outputs, want one each", len(a.Outputs), len(b.Outputs))
	}
	out := a.Ops[a.Outputs[0]]
	names := map[string]Kind{} // a's parameters
	for _, op := range a.Ops {
		if op.Kind == OpParam {
			names[op.Name] = op.Kind
		}
	}
	g := &Graph{Ops: make([]Op, 0, len(a.Ops)+len(b.Ops))}
	at := map[int32]int32{}
	for i, op := range a.Ops {
		appendOp(g, op, at, int32(i))
	}
	bAt := map[int32]int32{}
	inputs := 0
	for i, op := range b.Ops {
		switch {
		case op.Kind == OpInput:
			if len(op.Shape) != 2 || len(out.Shape) != 2 || op.Shape[1] != out.Shape[1] {
				return nil, fmt.Errorf("chain: the second graph's input is %v wide, the first's output %v", op.Shape, out.Shape)
			}
			bAt[int32(i)] = at[a.Outputs[0]]
			inputs++
			continue
		case op.Kind == OpParam:
			if _, dup := names[op.Name]; dup {
				return nil, fmt.Errorf("chain: parameter %q is in both graphs", op.Name)
			}
		}
		appendOp(g, op, bAt, int32(i))
	}
	if inputs != 1 {
		return nil, fmt.Errorf("chain: the second graph has %d inputs, want one", inputs)
	}
	g.Outputs = []int32{bAt[b.Outputs[0]]}
	return g, nil
}
