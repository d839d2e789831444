package engine

import (
	"fmt"
	"slices"

	"strata/core/ir"
)

// OpNarrow is the op the planner inserts: y = x[:rows], the destination
// prefix of a block's source rows. Layer modules never see it.
const OpNarrow ir.Kind = "narrow_rows"

// opNarrow is OpNarrow inside the engine.
const opNarrow = OpNarrow

// Space says what the rows of a value are.
type Space uint8

// Row spaces of planned values.
const (
	SpaceNone Space = iota // params and graphs: no node or edge rows
	SpaceNode              // one row per node
	SpaceEdge              // one row per edge
)

// BlockShape is the size of one layer's block, for a Sizer: its
// destinations, its sources and the edges of each graph the model reads
// in it.
type BlockShape struct {
	Dst, Src int
	Edges    map[string]int64
	// Degrees, per graph name, describe the rows of the graphs a kernel
	// steps through row by row (an LSTM aggregation's).
	Degrees map[string]Degrees
}

// sizes is what the planner asks of a binding (an Env; a Sizer's holds
// dry graphs of given sizes).
type sizes interface {
	hasBlocks() bool
	numBlocks() int
	// graphDims returns the destinations, sources and edges of a graph
	// a layer reads.
	graphDims(layer int32, name string) (dst, src, edges int, err error)
	layerSources(layer int32) (int, error)
	layerDestinations(layer int32) (int, error)
	inputRows() int
	// plainInput: the input rows are in memory (not given by their
	// entries), so an op may read their first rows in place (pushNarrows).
	plainInput() bool
	// keepNarrows: plan as written, narrows not pushed (tests compare
	// the two).
	keepNarrows() bool
}

// plan is the graph a Program runs: the model graph with narrow ops
// inserted, the row count of every value, and the index of each op in the
// model graph (-1 for inserted ops).
type plan struct {
	g     *ir.Graph
	rows  []int
	space []Space
	orig  []int32
	// edgeOf names, for an edge value, the graph whose edges its rows
	// are ("" for other values).
	edgeOf []string
	// prefix marks the ops that read only the first rows of a node
	// operand with more rows than their own: the narrows pushNarrows
	// moved below them.
	prefix []bool
}

// makePlan resolves the row count of every node- and edge-valued op for the
// graphs bound in env. In a mini-batch, layer l reads the sources of block l
// and writes its destinations, which are the first rows of its sources (the
// sampler convention); where an op combines the two (a root term added to
// an aggregation, a destination score, a layer's output passed on), plan
// inserts a narrow op that keeps the destination prefix. Full-graph
// programs have equal sources and destinations and need no narrowing.
func makePlan(g *ir.Graph, env sizes) (*plan, error) {
	p := &plan{g: &ir.Graph{}}
	remap := make([]int32, len(g.Ops))
	add := func(op ir.Op, rows int, sp Space, orig int32) int32 {
		return p.push(op, rows, sp, orig, false)
	}
	narrow := func(v int32, rows int, layer int32) int32 {
		src := p.g.Ops[v]
		return add(ir.Op{Kind: opNarrow, Args: []int32{v}, Shape: slices.Clone(src.Shape), Layer: layer}, rows, SpaceNode, -1)
	}
	for i := range g.Ops {
		op := g.Ops[i]
		op.Args = slices.Clone(op.Args)
		for k, a := range op.Args {
			op.Args[k] = remap[a]
		}
		fail := func(format string, args ...any) error {
			return fmt.Errorf("engine: op #%d %s (layer %d): %s", i, op.Kind, op.Layer, fmt.Sprintf(format, args...))
		}
		// A node value from an earlier layer enters this layer as its
		// block's sources.
		if env.hasBlocks() && op.Kind != ir.OpGraph {
			src, err := env.layerSources(op.Layer)
			if err != nil {
				return nil, fail("%v", err)
			}
			for k, a := range op.Args {
				if p.space[a] != SpaceNode || p.g.Ops[a].Layer >= op.Layer {
					continue
				}
				switch r := p.rows[a]; {
				case r > src:
					op.Args[k] = narrow(a, src, op.Layer)
				case r < src:
					return nil, fail("operand %d has %d rows but block %d has %d sources", k, r, op.Layer, src)
				}
			}
		}
		rows, sp := -1, SpaceNone
		arg := func(k int) int32 { return op.Args[k] }
		s := ir.Spec(op.Kind)
		switch {
		case op.Kind == ir.OpParam:
		case op.Kind == ir.OpGraph:
			if _, _, _, err := env.graphDims(op.Layer, op.Name); err != nil {
				return nil, fail("%v", err)
			}
		case op.Kind == ir.OpInput:
			rows, sp = env.inputRows(), SpaceNode
		case s != nil && s.Sides != "": // a graph op: its operands' and output's sides (ir.OpSpec.Sides)
			dst, srcs, edges, err := env.graphDims(op.Layer, g.Ops[g.Ops[i].Args[0]].Name)
			if err != nil {
				return nil, fail("%v", err)
			}
			side := func(c byte) (int, Space) {
				switch c {
				case 's':
					return srcs, SpaceNode
				case 'd':
					return dst, SpaceNode
				}
				return edges, SpaceEdge
			}
			// An operand must have its side's rows; a destination-side
			// operand given on the sources is narrowed.
			for k := range len(s.Sides) - 1 {
				c := s.Sides[k]
				if c == '.' {
					continue
				}
				n, _ := side(c)
				r := p.rows[arg(k)]
				if c == 'd' && r != n && r == srcs && p.space[arg(k)] == SpaceNode {
					op.Args[k] = narrow(arg(k), n, op.Layer)
					continue
				}
				if r != n {
					return nil, fail("operand %d has %d rows, want %d", k, r, n)
				}
			}
			rows, sp = side(s.Sides[len(s.Sides)-1])
		case s != nil && s.Aligned:
			a, b := arg(0), arg(1)
			rows, sp = p.rows[a], p.space[a]
			if p.space[b] == SpaceNone || g.Ops[g.Ops[i].Args[1]].Shape[0] > 0 {
				break // b is a broadcast row or scalar
			}
			ra, rb := p.rows[a], p.rows[b]
			switch {
			case ra == rb:
			case sp == SpaceNode && p.space[b] == SpaceNode && ra > rb:
				op.Args[0] = narrow(a, rb, op.Layer)
				rows = rb
			case sp == SpaceNode && p.space[b] == SpaceNode:
				op.Args[1] = narrow(b, ra, op.Layer)
			default:
				return nil, fail("operands have %d and %d rows", ra, rb)
			}
		default: // row-wise ops: the rows of the first operand
			rows, sp = p.rows[arg(0)], p.space[arg(0)]
		}
		remap[i] = add(op, rows, sp, int32(i))
	}
	p.g.Outputs = make([]int32, len(g.Outputs))
	for k, o := range g.Outputs {
		out := remap[o]
		if env.hasBlocks() {
			last := int32(env.numBlocks() - 1)
			dst, err := env.layerDestinations(last)
			if err != nil {
				return nil, err
			}
			switch r := p.rows[out]; {
			case r > dst:
				out = narrow(out, dst, last)
			case r < dst:
				return nil, fmt.Errorf("engine: the model output has %d rows but the last block has %d destinations", r, dst)
			}
		}
		p.g.Outputs[k] = out
	}
	if !env.keepNarrows() {
		p = pushNarrows(p, env.plainInput())
	}
	p.edgeOf = edgeGraphs(p)
	return p, nil
}

// edgeGraphs names the graph behind every edge value of a plan: a graph
// op's edge-side output has its graph's edges; any other edge value has
// the rows of its first edge operand.
func edgeGraphs(p *plan) []string {
	out := make([]string, len(p.g.Ops))
	for i, op := range p.g.Ops {
		if p.space[i] != SpaceEdge {
			continue
		}
		if s := ir.Spec(op.Kind); s != nil && s.Sides != "" && len(op.Args) > 0 && p.g.Ops[op.Args[0]].Kind == ir.OpGraph {
			out[i] = p.g.Ops[op.Args[0]].Name
			continue
		}
		for _, a := range op.Args {
			if p.space[a] == SpaceEdge {
				out[i] = out[a]
				break
			}
		}
	}
	return out
}

func (e Env) hasBlocks() bool   { return e.Blocks != nil }
func (e Env) numBlocks() int    { return len(e.Blocks) }
func (e Env) plainInput() bool  { return e.InputEntries == nil }
func (e Env) keepNarrows() bool { return e.keepAsWritten }
func (e Env) inputRows() int {
	if e.InputEntries != nil {
		return e.InputEntries.Host.NumRows
	}
	return e.Input.Rows()
}

func (e Env) graphDims(layer int32, name string) (dst, src, edges int, err error) {
	gr, err := e.graph(layer, name)
	if err != nil {
		return 0, 0, 0, err
	}
	return gr.Adj.Rows(), gr.Adj.Cols(), int(gr.Adj.NNZ()), nil
}

// graph returns the adjacency name bound for a layer.
func (e Env) graph(layer int32, name string) (*Graph, error) {
	if e.Blocks == nil {
		if gr, ok := e.Graphs[name]; ok {
			return gr, nil
		}
		return nil, fmt.Errorf("graph %q is not bound", name)
	}
	if int(layer) >= len(e.Blocks) {
		return nil, fmt.Errorf("the model has more layers than the %d blocks bound", len(e.Blocks))
	}
	if gr, ok := e.Blocks[layer][name]; ok {
		return gr, nil
	}
	return nil, fmt.Errorf("graph %q is not bound for block %d", name, layer)
}

// layerSources returns the source count of a layer's block.
func (e Env) layerSources(layer int32) (int, error) {
	gr, err := e.anyGraph(layer)
	if err != nil {
		return 0, err
	}
	return gr.Adj.Cols(), nil
}

// layerDestinations returns the destination count of a layer's block.
func (e Env) layerDestinations(layer int32) (int, error) {
	gr, err := e.anyGraph(layer)
	if err != nil {
		return 0, err
	}
	return gr.Adj.Rows(), nil
}

// anyGraph returns one graph of a layer's block; all of a block's graphs
// (adj, adj_self) share its source and destination nodes.
func (e Env) anyGraph(layer int32) (*Graph, error) {
	if int(layer) >= len(e.Blocks) {
		return nil, fmt.Errorf("the model has more layers than the %d blocks bound", len(e.Blocks))
	}
	for _, name := range ir.GraphNames() {
		if gr, ok := e.Blocks[layer][name]; ok {
			return gr, nil
		}
	}
	return nil, fmt.Errorf("block %d binds no graph", layer)
}
