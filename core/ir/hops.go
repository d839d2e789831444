package ir

// LayerNeeds is what the engine assumes of one layer of a linked model,
// derived from the ops it recorded.
type LayerNeeds struct {
	// Hops is how many hops of a graph the layer's values reach: 1 for a
	// message-passing layer, 0 for one that reads no neighbours (an MLP
	// layer), K for one that propagates K times (APPNP's last layer).
	Hops int
	// ReadsGraph: the layer reads an adjacency.
	ReadsGraph bool
}

// Blocks reports whether the layer runs on one sampled block (its
// destinations' neighbours, one hop, as a mini-batch binds per layer).
func (n LayerNeeds) Blocks() bool { return n.ReadsGraph && n.Hops <= 1 }

// Needs returns the needs of every layer of a linked model (one entry for
// an unlinked layer graph). A value's hop count is the largest among its
// operands' within its layer (a value from an earlier layer enters as the
// block's sources, at 0), plus one where a graph op reads it on the
// graph's sources ('s' in OpSpec.Sides): that is where a block's sources
// become its destinations.
func (g *Graph) Needs() []LayerNeeds {
	layers := int32(1)
	for _, op := range g.Ops {
		layers = max(layers, op.Layer+1)
	}
	out := make([]LayerNeeds, layers)
	hops := make([]int, len(g.Ops))
	for i, op := range g.Ops {
		n := &out[op.Layer]
		if op.Kind == OpGraph {
			n.ReadsGraph = true
			continue
		}
		sides := ""
		if s := Spec(op.Kind); s != nil {
			sides = s.Sides
		}
		for k, a := range op.Args {
			h := 0
			if g.Ops[a].Layer == op.Layer {
				h = hops[a]
			}
			if k < len(sides) && sides[k] == 's' {
				h++
			}
			hops[i] = max(hops[i], h)
		}
		n.Hops = max(n.Hops, hops[i])
	}
	return out
}
