package ir

import (
	"slices"
	"testing"
)

// TestChain chains the layers of a linked model back into one graph: the
// linked model's ops in order without the second layer's input (its op
// kinds, parameter names and dropout streams), the output as wide; graphs
// that do not chain are refused.
func TestChain(t *testing.T) {
	model, err := Link([]*Graph{layer(t, 8, 4), layer(t, 4, 2)})
	if err != nil {
		t.Fatal(err)
	}
	parts, err := model.SplitLayers()
	if err != nil {
		t.Fatal(err)
	}
	g, err := Chain(parts[0], parts[1])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(opKinds(g), opKinds(model)) {
		t.Errorf("kinds %v, want the model's %v", opKinds(g), opKinds(model))
	}
	for i, op := range g.Ops {
		want := model.Ops[i]
		if op.Name != want.Name || op.Stream != want.Stream || !slices.Equal(op.Args, want.Args) {
			t.Errorf("op #%d %s %q args %v stream %d, want %q args %v stream %d", i, op.Kind, op.Name, op.Args, op.Stream, want.Name, want.Args, want.Stream)
		}
	}
	if o := g.Ops[g.Outputs[0]]; o.Shape[1] != 2 || g.Outputs[0] != model.Outputs[0] {
		t.Errorf("output op #%d %v, want the model's #%d", g.Outputs[0], o.Shape, model.Outputs[0])
	}
	for _, c := range []struct {
		name string
		a, b *Graph
	}{
		{"widths differ", parts[1], parts[0]},
		{"a parameter in both", parts[1], parts[1].withInputWidth(2)},
		{"no input", parts[0], &Graph{Ops: []Op{{Kind: OpParam, Name: "w", Shape: []int64{2}}}, Outputs: []int32{0}}},
	} {
		if _, err := Chain(c.a, c.b); err == nil {
			t.Errorf("%s: chained", c.name)
		}
	}
}

// withInputWidth returns a copy of layer g whose input is w wide.
func (g *Graph) withInputWidth(w int64) *Graph {
	c := &Graph{Ops: slices.Clone(g.Ops), Outputs: slices.Clone(g.Outputs)}
	for i, op := range c.Ops {
		if op.Kind == OpInput {
			c.Ops[i].Shape = []int64{op.Shape[0], w}
		}
	}
	return c
}
