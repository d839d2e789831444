package ir

import "testing"

// TestNeeds records layers of known reach: an MLP (0 hops), a
// message-passing layer (1), two propagations in one layer (2), and a
// linked model of an MLP then a propagating layer.
func TestNeeds(t *testing.T) {
	layer := func(props int, graph bool) *Graph {
		b := NewBuilder()
		h := b.MatMul(b.Input("x", 4), b.Param("w", []int64{4, 4}, "glorot"))
		if graph {
			g := b.Graph("adj")
			deg := b.Table(OpDegree, g, h, 0) // a destination-side read: no hop
			for range props {
				h = b.Record(OpAggregate, Attrs{Reducer: "mean"}, g, h)
			}
			h = b.Binary(OpAdd, h, deg)
		}
		b.Output(h)
		out, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	cases := []struct {
		name string
		g    *Graph
		want []LayerNeeds
	}{
		{"mlp", layer(0, false), []LayerNeeds{{0, false}}},
		{"degree only", layer(0, true), []LayerNeeds{{0, true}}},
		{"one hop", layer(1, true), []LayerNeeds{{1, true}}},
		{"two hops", layer(2, true), []LayerNeeds{{2, true}}},
	}
	linked, err := Link([]*Graph{layer(0, false), layer(3, true)})
	if err != nil {
		t.Fatal(err)
	}
	cases = append(cases, struct {
		name string
		g    *Graph
		want []LayerNeeds
	}{"mlp then three hops", linked, []LayerNeeds{{0, false}, {3, true}}})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := c.g.Needs()
			if len(got) != len(c.want) {
				t.Fatalf("%d layers, want %d", len(got), len(c.want))
			}
			for l := range got {
				if got[l] != c.want[l] {
					t.Errorf("layer %d: %+v, want %+v", l, got[l], c.want[l])
				}
			}
			if b, want := got[len(got)-1].Blocks(), c.name == "one hop" || c.name == "degree only"; b != want {
				t.Errorf("Blocks() = %v", b)
			}
		})
	}
}
