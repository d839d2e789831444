package engine

import (
	"fmt"
	"slices"

	"strata/core/ir"
)

// opNarrow is an engine-internal op: y = x[:rows], the destination prefix
// of a block's source rows. plan inserts it; layer modules never see it.
const opNarrow ir.Kind = "narrow_rows"

// space says what the rows of a value are.
type space uint8

const (
	spaceNone space = iota // params and graphs: no node or edge rows
	spaceNode              // one row per node
	spaceEdge              // one row per edge
)

// plan is the graph a Program runs: the model graph with narrow ops
// inserted, the row count of every value, and the index of each op in the
// model graph (-1 for inserted ops).
type plan struct {
	g     *ir.Graph
	rows  []int
	space []space
	orig  []int32
}

// makePlan resolves the row count of every node- and edge-valued op for the
// graphs bound in env. In a mini-batch, layer l reads the sources of block l
// and writes its destinations, which are the first rows of its sources (the
// sampler convention); where an op combines the two (a root term added to
// an aggregation, a destination score, a layer's output passed on), plan
// inserts a narrow op that keeps the destination prefix. Full-graph
// programs have equal sources and destinations and need no narrowing.
func makePlan(g *ir.Graph, env Env) (*plan, error) {
	p := &plan{g: &ir.Graph{}}
	remap := make([]int32, len(g.Ops))
	add := func(op ir.Op, rows int, sp space, orig int32) int32 {
		p.g.Ops = append(p.g.Ops, op)
		p.rows = append(p.rows, rows)
		p.space = append(p.space, sp)
		p.orig = append(p.orig, orig)
		return int32(len(p.g.Ops) - 1)
	}
	narrow := func(v int32, rows int, layer int32) int32 {
		src := p.g.Ops[v]
		return add(ir.Op{Kind: opNarrow, Args: []int32{v}, Shape: slices.Clone(src.Shape), Layer: layer}, rows, spaceNode, -1)
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
		if env.Blocks != nil && op.Kind != ir.OpGraph {
			src, err := env.layerSources(op.Layer)
			if err != nil {
				return nil, fail("%v", err)
			}
			for k, a := range op.Args {
				if p.space[a] != spaceNode || p.g.Ops[a].Layer >= op.Layer {
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
		rows, sp := -1, spaceNone
		arg := func(k int) int32 { return op.Args[k] }
		switch op.Kind {
		case ir.OpParam:
		case ir.OpGraph:
			if _, err := env.graph(op.Layer, op.Name); err != nil {
				return nil, fail("%v", err)
			}
		case ir.OpInput:
			rows, sp = env.Input.Rows(), spaceNode
		case ir.OpAggregate, ir.OpSpMMEdge, ir.OpUAddV, ir.OpUDotV, ir.OpEdgeSoftmax, ir.OpLSTMAggregate:
			gr, err := env.graph(op.Layer, g.Ops[g.Ops[i].Args[0]].Name)
			if err != nil {
				return nil, fail("%v", err)
			}
			dst, srcs, edges := gr.Adj.Rows(), gr.Adj.Cols(), int(gr.Adj.NNZ())
			// want checks operand k against the rows it must have; a
			// destination-side operand given on the sources is narrowed.
			want := func(k, n int, dstSide bool) error {
				r := p.rows[arg(k)]
				if dstSide && r != n && r == srcs && p.space[arg(k)] == spaceNode {
					op.Args[k] = narrow(arg(k), n, op.Layer)
					return nil
				}
				if r != n {
					return fail("operand %d has %d rows, want %d", k, r, n)
				}
				return nil
			}
			var errs []error
			switch op.Kind {
			case ir.OpAggregate, ir.OpLSTMAggregate:
				errs = append(errs, want(1, srcs, false))
				rows, sp = dst, spaceNode
			case ir.OpSpMMEdge:
				errs = append(errs, want(1, edges, false), want(2, srcs, false))
				rows, sp = dst, spaceNode
			case ir.OpUAddV:
				errs = append(errs, want(1, srcs, false), want(2, dst, true))
				rows, sp = edges, spaceEdge
			case ir.OpUDotV:
				errs = append(errs, want(1, dst, true), want(2, srcs, false))
				rows, sp = edges, spaceEdge
			case ir.OpEdgeSoftmax:
				errs = append(errs, want(1, edges, false))
				rows, sp = edges, spaceEdge
			}
			for _, err := range errs {
				if err != nil {
					return nil, err
				}
			}
		case ir.OpAdd, ir.OpSub, ir.OpMul, ir.OpConcat:
			a, b := arg(0), arg(1)
			rows, sp = p.rows[a], p.space[a]
			if p.space[b] == spaceNone || g.Ops[g.Ops[i].Args[1]].Shape[0] > 0 {
				break // b is a broadcast row or scalar
			}
			ra, rb := p.rows[a], p.rows[b]
			switch {
			case ra == rb:
			case sp == spaceNode && p.space[b] == spaceNode && ra > rb:
				op.Args[0] = narrow(a, rb, op.Layer)
				rows = rb
			case sp == spaceNode && p.space[b] == spaceNode:
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
		if env.Blocks != nil {
			last := int32(len(env.Blocks) - 1)
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
	return p, nil
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
