package ir

import (
	"slices"
	"testing"
)

// TestSplitLayers splits a linked model back into its layers: the same op
// kinds, the parameters under their linked names, each layer reading an
// input of the previous layer's width, every op in layer 0.
func TestSplitLayers(t *testing.T) {
	l0, l1 := layer(t, 8, 4), layer(t, 4, 2)
	g, err := Link([]*Graph{l0, l1})
	if err != nil {
		t.Fatal(err)
	}
	parts, err := g.SplitLayers()
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 {
		t.Fatalf("%d layers, want 2", len(parts))
	}
	for i, want := range []*Graph{l0, l1} {
		p := parts[i]
		var kinds, wantKinds []Kind
		for _, op := range p.Ops {
			kinds = append(kinds, op.Kind)
			if op.Layer != 0 {
				t.Errorf("layer %d: op %s has Layer %d", i, op.Kind, op.Layer)
			}
		}
		for _, op := range want.Ops {
			wantKinds = append(wantKinds, op.Kind)
		}
		if !slices.Equal(kinds, wantKinds) {
			t.Errorf("layer %d kinds %v, want %v", i, kinds, wantKinds)
		}
		in := p.Ops[0]
		if in.Kind != OpInput || in.Shape[1] != want.Ops[0].Shape[1] {
			t.Errorf("layer %d input %v", i, in)
		}
		if p.Ops[p.Outputs[0]].Shape[1] != want.Ops[want.Outputs[0]].Shape[1] {
			t.Errorf("layer %d output width differs", i)
		}
		for _, pi := range p.Params() {
			if name := p.Ops[pi].Name; name[:2] != "l"+string(rune('0'+i)) {
				t.Errorf("layer %d param %q lost its prefix", i, name)
			}
		}
	}
	if _, err := (&Graph{}).SplitLayers(); err == nil {
		t.Error("an empty graph splits")
	}
}
