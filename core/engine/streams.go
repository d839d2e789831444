package engine

import (
	"fmt"

	"strata/core/backend"
	"strata/core/ir"
	"strata/core/tensor"
)

// Dropout streams: a mask is drawn from the step's seed (Mode.Seed), the
// op's stream in the model (ir.Op.Stream) and each row's global key
// (backend.DropoutMask's rows): a node's id, or the EdgeKey of an edge's
// endpoints. Nothing depends on which program, chunk, micro-batch, rank
// or device computes a row, so every strategy that splits the same step
// draws the masks full-graph training draws (docs/decisions.md, "Dropout
// streams keyed by global ids").

// keySpace is a row space whose keys a program uploads once: the node
// rows of a layer's block, or the edges of one of its graphs.
type keySpace struct {
	space Space
	layer int32
	graph string
	rows  int
}

// opStream is the seed of dropout op i's mask in a step seeded seed.
func (p *Program) opStream(seed uint64, i int32) uint64 {
	return mixSeed(seed, streamKey(&p.g.Ops[i], p.plan.orig[i]))
}

// streamKey is op's stream in the model (ir.Op.Stream), or, in a graph
// that was never linked, one of its own from its position.
func streamKey(op *ir.Op, orig int32) uint64 {
	if op.Stream != 0 {
		return op.Stream
	}
	return 1<<62 | uint64(uint32(orig))
}

// bindDropoutKeys gives every dropout of a training program its row keys.
func (p *Program) bindDropoutKeys() error {
	if p.env.Inference {
		return nil
	}
	for i := range p.g.Ops {
		op := &p.g.Ops[i]
		if op.Kind != ir.OpDropout || op.Alpha == 0 {
			continue
		}
		t, err := p.rowKeys(i)
		if err != nil {
			return fmt.Errorf("engine: op #%d dropout (layer %d): %w", i, op.Layer, err)
		}
		p.aux[i].dropRows = t
	}
	return nil
}

// rowKeys returns the row keys of dropout op i's value, shared by the
// dropouts of one row space: nil where row r is node r (the node values
// of a whole-graph binding), else an Int64 tensor of the rows' global
// node ids, or of the EdgeKey of the global endpoints of the edges. A
// dry binding (Sizer) only counts the tensor.
func (p *Program) rowKeys(i int) (*tensor.Tensor, error) {
	op := &p.g.Ops[i]
	ks := keySpace{space: p.plan.space[i], layer: op.Layer, rows: p.plan.rows[i]}
	switch {
	case ks.space == SpaceNone:
		return nil, nil // no node or edge rows: never split
	case ks.space == SpaceNode && p.env.Blocks == nil && len(p.env.NodeIDs) == 0:
		return nil, nil // the whole graph's rows in order
	case ks.space == SpaceEdge:
		ks.graph = p.plan.edgeOf[i]
	}
	if t, ok := p.keys[ks]; ok {
		return t, nil
	}
	var keys []int64
	if !p.dry() {
		var err error
		if keys, err = p.keysOf(ks); err != nil {
			return nil, err
		}
	}
	t, err := p.allocT(KindIndex, tensor.Int64, []int{ks.rows})
	if err != nil {
		return nil, err
	}
	if !p.dry() {
		if err := p.be.Upload(t, keys); err != nil {
			return nil, err
		}
	}
	if p.keys == nil {
		p.keys = map[keySpace]*tensor.Tensor{}
	}
	p.keys[ks] = t
	return t, nil
}

// keysOf computes the keys of a row space: the global node ids of its
// rows, or the EdgeKey of its edges' endpoints.
func (p *Program) keysOf(ks keySpace) ([]int64, error) {
	ids, err := p.env.nodeIDs(ks.layer)
	if err != nil {
		return nil, err
	}
	if ks.space == SpaceEdge {
		return p.edgeKeys(ks, ids)
	}
	if ids == nil {
		return nil, fmt.Errorf("no node ids for the rows of layer %d", ks.layer)
	}
	if len(ids) < ks.rows {
		return nil, fmt.Errorf("Env.NodeIDs names %d rows of layer %d, its values have %d", len(ids), ks.layer, ks.rows)
	}
	keys := make([]int64, ks.rows)
	for r := range keys {
		keys[r] = int64(ids[r])
	}
	return keys, nil
}

// edgeKeys are the keys of the edges of graph ks.graph of layer
// ks.layer, in the adjacency's order, under the node ids ids (nil: the
// identity).
func (p *Program) edgeKeys(ks keySpace, ids []int32) ([]int64, error) {
	gr, err := p.env.graph(ks.layer, ks.graph)
	if err != nil {
		return nil, err
	}
	h := gr.Host
	if h == nil {
		return nil, fmt.Errorf("graph %q has no host structure (Graph.Host) to key its edges' dropout by", ks.graph)
	}
	if h.NNZ() != int64(ks.rows) {
		return nil, fmt.Errorf("graph %q's host structure has %d edges, its edge values %d rows", ks.graph, h.NNZ(), ks.rows)
	}
	if ids != nil && len(ids) < max(h.NumRows, h.NumCols) {
		return nil, fmt.Errorf("Env.NodeIDs names %d rows of layer %d, graph %q has %d×%d", len(ids), ks.layer, ks.graph, h.NumRows, h.NumCols)
	}
	id := func(v int64) int64 {
		if ids == nil {
			return v
		}
		return int64(ids[v])
	}
	keys := make([]int64, ks.rows)
	for d := range h.NumRows {
		dst := id(int64(d))
		for e := h.Indptr[d]; e < h.Indptr[d+1]; e++ {
			keys[e] = int64(backend.EdgeKey(dst, id(h.Col(e))))
		}
	}
	return keys, nil
}

// nodeIDs returns the global ids of layer l's rows (nil: row r is node
// r), checking that a blocks binding names them.
func (e Env) nodeIDs(l int32) ([]int32, error) {
	if e.Blocks == nil {
		if len(e.NodeIDs) > 0 {
			return e.NodeIDs[0], nil
		}
		return nil, nil
	}
	if int(l) >= len(e.NodeIDs) || e.NodeIDs[l] == nil {
		return nil, fmt.Errorf("a training program over blocks draws its dropout masks by the rows' global ids: Env.NodeIDs must name the sources of block %d", l)
	}
	return e.NodeIDs[l], nil
}

// DropsEdges reports whether a training program of g draws dropout masks
// over edge rows (GAT's attention dropout), whose keys need each graph's
// host structure (Graph.Host). It follows the planner's rule: a graph
// op's edge-side output has edge rows, any other op its first operand's.
func DropsEdges(g *ir.Graph) bool {
	edge := make([]bool, len(g.Ops))
	for i, op := range g.Ops {
		s := ir.Spec(op.Kind)
		switch {
		case op.Kind == ir.OpParam || op.Kind == ir.OpGraph || op.Kind == ir.OpInput:
		case s != nil && s.Sides != "":
			edge[i] = s.Sides[len(s.Sides)-1] == 'e'
		case len(op.Args) > 0:
			edge[i] = edge[op.Args[0]]
		}
		if op.Kind == ir.OpDropout && op.Alpha > 0 && edge[i] {
			return true
		}
	}
	return false
}

// SetNodeIDs rebinds a program bound over the rows Env.NodeIDs[0] names
// (no blocks: a node pass over node ranges) to the rows ids, as many as
// before, whose input rows the caller has placed in Env.Input: the
// dropouts' row keys follow ids. Binding a fresh program for every range
// cleared all its buffers each time.
func (p *Program) SetNodeIDs(ids []int32) error {
	if p.env.Blocks != nil || len(p.env.NodeIDs) != 1 || len(ids) != len(p.env.NodeIDs[0]) {
		return fmt.Errorf("engine: SetNodeIDs rebinds the %d rows of a program over named node rows to as many, not %d", p.InputRows(), len(ids))
	}
	p.env.NodeIDs = [][]int32{ids}
	for ks, t := range p.keys {
		keys, err := p.keysOf(ks)
		if err != nil {
			return err
		}
		if err := p.be.Upload(t, keys); err != nil {
			return err
		}
	}
	return nil
}
