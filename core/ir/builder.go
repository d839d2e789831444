package ir

import (
	"fmt"
	"math"
	"slices"
)

// Limits bound what one layer may record.
const (
	MaxOps        = 4096
	MaxRank       = 4
	MaxParamElems = 1 << 28
	// MaxModelParamElems bounds the parameters of one layer and of a
	// linked model (2^29 scalars: 2 GiB in float32).
	MaxModelParamElems = 1 << 29
	// MaxWidth bounds the column count of any value (input or concat).
	MaxWidth   = 1 << 28
	MaxNameLen = 256
)

// Builder records ops and checks shapes as they arrive. Handles are op
// indices; a negative handle is poison: the first error is kept, and every
// op given poison returns poison without adding another error.
type Builder struct {
	g      Graph
	err    error
	inputs map[string]int32
	params map[string]bool
	nparam int64 // elements of the params so far
}

// NewBuilder returns an empty builder.
func NewBuilder() *Builder {
	return &Builder{inputs: map[string]int32{}, params: map[string]bool{}}
}

// Err returns the first recorded error, if any.
func (b *Builder) Err() error { return b.err }

// Finish returns the checked graph, or the first error.
func (b *Builder) Finish() (*Graph, error) {
	if b.err != nil {
		return nil, b.err
	}
	if len(b.g.Outputs) == 0 {
		return nil, fmt.Errorf("layer recorded no output: call output(h) with the layer's result")
	}
	g := b.g
	return &g, nil
}

func (b *Builder) fail(kind Kind, format string, args ...any) int32 {
	if b.err == nil {
		b.err = fmt.Errorf("op #%d %s: %s", len(b.g.Ops), kind, fmt.Sprintf(format, args...))
	}
	return -1
}

// vals resolves handles, failing on poison (silently) or bad handles.
func (b *Builder) vals(kind Kind, hs ...int32) ([]*Op, bool) {
	out := make([]*Op, len(hs))
	for i, h := range hs {
		if h < 0 {
			return nil, false
		}
		if int(h) >= len(b.g.Ops) {
			b.fail(kind, "argument %d: handle %d does not name a recorded value", i, h)
			return nil, false
		}
		out[i] = &b.g.Ops[h]
		if out[i].Kind == OpGraph && !takesGraph(kind, i) {
			b.fail(kind, "argument %d is the graph %q, expected a tensor", i, out[i].Name)
			return nil, false
		}
	}
	return out, true
}

func takesGraph(kind Kind, arg int) bool { return arg == 0 && GraphOp(kind) }

func (b *Builder) add(op Op) int32 {
	if b.err != nil {
		return -1
	}
	if len(b.g.Ops) >= MaxOps {
		return b.fail(op.Kind, "more than %d ops", MaxOps)
	}
	b.g.Ops = append(b.g.Ops, op)
	return int32(len(b.g.Ops) - 1)
}

func (b *Builder) checkName(kind Kind, name string) bool {
	if name == "" || len(name) > MaxNameLen {
		b.fail(kind, "name must be 1..%d bytes, got %d", MaxNameLen, len(name))
		return false
	}
	return true
}

// Input declares the layer input "x" with the given column count.
func (b *Builder) Input(name string, cols int64) int32 {
	if !b.checkName(OpInput, name) {
		return -1
	}
	if name != "x" {
		return b.fail(OpInput, "unknown input %q (the host provides \"x\", the layer's input features)", name)
	}
	if h, ok := b.inputs[name]; ok {
		return h
	}
	if cols <= 0 {
		return b.fail(OpInput, "input %q needs a positive width, got %d", name, cols)
	}
	if cols > MaxWidth {
		return b.fail(OpInput, "input %q is %d wide, more than the limit of %d", name, cols, MaxWidth)
	}
	h := b.add(Op{Kind: OpInput, Name: name, Shape: []int64{N, cols}})
	b.inputs[name] = h
	return h
}

// Graph requests an adjacency variant.
func (b *Builder) Graph(name string) int32 {
	if !b.checkName(OpGraph, name) {
		return -1
	}
	if _, ok := graphNames[name]; !ok {
		return b.fail(OpGraph, "unknown graph %q (allowed: %v)", name, GraphNames())
	}
	if h, ok := b.inputs["graph:"+name]; ok {
		return h
	}
	h := b.add(Op{Kind: OpGraph, Name: name, Shape: []int64{N, N}})
	b.inputs["graph:"+name] = h
	return h
}

// elemCount formats an element count, naming an overflow.
func elemCount(n int64) string {
	if n == math.MaxInt64 {
		return "more than 2^63"
	}
	return fmt.Sprint(n)
}

// Param declares a learnable weight.
func (b *Builder) Param(name string, shape []int64, init string) int32 {
	if !b.checkName(OpParam, name) {
		return -1
	}
	if b.params[name] {
		return b.fail(OpParam, "duplicate parameter name %q", name)
	}
	if len(shape) == 0 || len(shape) > MaxRank {
		return b.fail(OpParam, "%q: rank %d outside 1..%d", name, len(shape), MaxRank)
	}
	for _, d := range shape {
		if d <= 0 {
			return b.fail(OpParam, "%q: shape %s must be concrete and positive", name, ShapeString(shape))
		}
	}
	n := Numel(shape)
	if n > MaxParamElems {
		return b.fail(OpParam, "%q: shape %s has %s elements, more than the limit of %d per parameter", name, ShapeString(shape), elemCount(n), MaxParamElems)
	}
	if b.nparam+n > MaxModelParamElems {
		return b.fail(OpParam, "%q: the layer's parameters would hold %d elements, more than the limit of %d", name, b.nparam+n, MaxModelParamElems)
	}
	b.nparam += n
	if !slices.Contains(Inits, init) {
		return b.fail(OpParam, "%q: unknown init %q (allowed: %v)", name, init, Inits)
	}
	b.params[name] = true
	return b.add(Op{Kind: OpParam, Name: name, Shape: slices.Clone(shape), Init: init})
}

func rank2(s []int64) bool { return len(s) == 2 }

// Aggregate reduces neighbour rows of x over graph g.
func (b *Builder) Aggregate(g, x int32, reducer string) int32 {
	v, ok := b.vals(OpAggregate, g, x)
	if !ok {
		return -1
	}
	if v[0].Kind != OpGraph {
		return b.fail(OpAggregate, "argument 0 must be a graph, got %s", v[0].Kind)
	}
	if !slices.Contains(Reducers, reducer) {
		return b.fail(OpAggregate, "unknown reducer %q (allowed: %v)", reducer, Reducers)
	}
	if !rank2(v[1].Shape) || v[1].Shape[0] != N {
		return b.fail(OpAggregate, "x must be [N,C], got %s", ShapeString(v[1].Shape))
	}
	return b.add(Op{Kind: OpAggregate, Args: []int32{g, x}, Reducer: reducer, Shape: slices.Clone(v[1].Shape)})
}

// edgeShape returns [E,H] for a graph op.
func edgeRows(g *Op) int64 { d, _ := EdgeDim(g.Name); return d }

// SpMMEdge aggregates x with per-edge, per-head weights w.
func (b *Builder) SpMMEdge(g, w, x int32) int32 {
	v, ok := b.vals(OpSpMMEdge, g, w, x)
	if !ok {
		return -1
	}
	if v[0].Kind != OpGraph {
		return b.fail(OpSpMMEdge, "argument 0 must be a graph, got %s", v[0].Kind)
	}
	ws, xs := v[1].Shape, v[2].Shape
	if !rank2(ws) || ws[0] != edgeRows(v[0]) {
		return b.fail(OpSpMMEdge, "weights must be [%s,H], got %s", DimString(edgeRows(v[0])), ShapeString(ws))
	}
	if !rank2(xs) || xs[0] != N || xs[1]%ws[1] != 0 {
		return b.fail(OpSpMMEdge, "x must be [N,H*C] with H=%d, got %s", ws[1], ShapeString(xs))
	}
	return b.add(Op{Kind: OpSpMMEdge, Args: []int32{g, w, x}, Shape: slices.Clone(xs)})
}

// MatMul multiplies two matrices.
func (b *Builder) MatMul(x, w int32) int32 {
	v, ok := b.vals(OpMatMul, x, w)
	if !ok {
		return -1
	}
	a, c := v[0].Shape, v[1].Shape
	if !rank2(a) || !rank2(c) || a[1] != c[0] {
		return b.fail(OpMatMul, "inner dims mismatch: a=%s b=%s", ShapeString(a), ShapeString(c))
	}
	if c[0] < 0 {
		return b.fail(OpMatMul, "b must have concrete rows, got %s", ShapeString(c))
	}
	return b.add(Op{Kind: OpMatMul, Args: []int32{x, w}, Shape: []int64{a[0], c[1]}})
}

// Bias adds a row vector to every row.
func (b *Builder) Bias(x, bias int32) int32 {
	v, ok := b.vals(OpBias, x, bias)
	if !ok {
		return -1
	}
	if !rank2(v[0].Shape) || len(v[1].Shape) != 1 || v[1].Shape[0] != v[0].Shape[1] {
		return b.fail(OpBias, "want x [R,C] and b [C], got %s and %s", ShapeString(v[0].Shape), ShapeString(v[1].Shape))
	}
	return b.add(Op{Kind: OpBias, Args: []int32{x, bias}, Shape: slices.Clone(v[0].Shape)})
}

// Binary records a binary op of the table (add, sub, mul, div, minimum,
// maximum) with broadcasting of the second operand.
func (b *Builder) Binary(kind Kind, x, y int32) int32 {
	if s := Spec(kind); s == nil || s.Class != ClassBinary {
		return b.fail(kind, "not a binary op (binary ops: %v)", TableKinds(ClassBinary))
	}
	v, ok := b.vals(kind, x, y)
	if !ok {
		return -1
	}
	xs, ys := v[0].Shape, v[1].Shape
	same := slices.Equal(xs, ys)
	row := len(ys) == 1 && rank2(xs) && ys[0] == xs[1]
	scalar := len(ys) == 1 && ys[0] == 1
	if !same && !row && !scalar {
		return b.fail(kind, "shapes %s and %s do not broadcast (b must match a, be a row [C] or a scalar [1])", ShapeString(xs), ShapeString(ys))
	}
	return b.add(Op{Kind: kind, Args: []int32{x, y}, Shape: slices.Clone(xs)})
}

// Unary records an elementwise op of the table, scale or dropout, with an
// optional scalar attribute.
func (b *Builder) Unary(kind Kind, x int32, alpha float64) int32 {
	switch s := Spec(kind); {
	case kind == OpScale:
	case kind == OpDropout:
		if alpha < 0 || alpha >= 1 {
			return b.fail(kind, "drop probability %g outside [0,1)", alpha)
		}
	case s != nil && s.Class == ClassUnary:
		if math.IsNaN(alpha) || math.IsInf(alpha, 0) {
			return b.fail(kind, "%s = %g must be finite", s.Attr, alpha)
		}
	default:
		return b.fail(kind, "not a unary op (unary ops: scale, dropout, %v)", TableKinds(ClassUnary))
	}
	v, ok := b.vals(kind, x)
	if !ok {
		return -1
	}
	return b.add(Op{Kind: kind, Args: []int32{x}, Alpha: alpha, Shape: slices.Clone(v[0].Shape)})
}

// Concat joins two matrices column-wise.
func (b *Builder) Concat(x, y int32) int32 {
	v, ok := b.vals(OpConcat, x, y)
	if !ok {
		return -1
	}
	xs, ys := v[0].Shape, v[1].Shape
	if !rank2(xs) || !rank2(ys) || xs[0] != ys[0] {
		return b.fail(OpConcat, "row counts differ: %s and %s", ShapeString(xs), ShapeString(ys))
	}
	if xs[1] > MaxWidth-ys[1] {
		return b.fail(OpConcat, "result would have %d columns, more than the limit of %d", xs[1]+ys[1], MaxWidth)
	}
	return b.add(Op{Kind: OpConcat, Args: []int32{x, y}, Shape: []int64{xs[0], xs[1] + ys[1]}})
}

// BatchNorm normalises columns with learnable gamma and beta.
func (b *Builder) BatchNorm(x, gamma, beta int32, eps float64) int32 {
	v, ok := b.vals(OpBatchNorm, x, gamma, beta)
	if !ok {
		return -1
	}
	xs := v[0].Shape
	if !rank2(xs) {
		return b.fail(OpBatchNorm, "x must be [R,C], got %s", ShapeString(xs))
	}
	for i, p := range v[1:] {
		if p.Kind != OpParam || len(p.Shape) != 1 || p.Shape[0] != xs[1] {
			return b.fail(OpBatchNorm, "argument %d must be a param [%d], got %s %s", i+1, xs[1], p.Kind, ShapeString(p.Shape))
		}
	}
	if eps <= 0 {
		return b.fail(OpBatchNorm, "eps must be positive, got %g", eps)
	}
	return b.add(Op{Kind: OpBatchNorm, Args: []int32{x, gamma, beta}, Alpha: eps, Shape: slices.Clone(xs)})
}

// HeadDot computes one score per row and head.
func (b *Builder) HeadDot(x, a int32) int32 {
	v, ok := b.vals(OpHeadDot, x, a)
	if !ok {
		return -1
	}
	xs, as := v[0].Shape, v[1].Shape
	if !rank2(xs) || !rank2(as) || as[0]*as[1] != xs[1] {
		return b.fail(OpHeadDot, "want x [R,H*C] and a [H,C], got %s and %s", ShapeString(xs), ShapeString(as))
	}
	return b.add(Op{Kind: OpHeadDot, Args: []int32{x, a}, Shape: []int64{xs[0], as[0]}})
}

// UAddV adds source and destination node scores onto every edge.
func (b *Builder) UAddV(g, u, w int32) int32 {
	v, ok := b.vals(OpUAddV, g, u, w)
	if !ok {
		return -1
	}
	if v[0].Kind != OpGraph {
		return b.fail(OpUAddV, "argument 0 must be a graph, got %s", v[0].Kind)
	}
	us, ws := v[1].Shape, v[2].Shape
	if !rank2(us) || !slices.Equal(us, ws) || us[0] != N {
		return b.fail(OpUAddV, "u and v must both be [N,H], got %s and %s", ShapeString(us), ShapeString(ws))
	}
	return b.add(Op{Kind: OpUAddV, Args: []int32{g, u, w}, Shape: []int64{edgeRows(v[0]), us[1]}})
}

// UDotV computes per-edge, per-head dot products <x[dst], y[src]>.
func (b *Builder) UDotV(g, x, y int32, heads int64) int32 {
	v, ok := b.vals(OpUDotV, g, x, y)
	if !ok {
		return -1
	}
	if v[0].Kind != OpGraph {
		return b.fail(OpUDotV, "argument 0 must be a graph, got %s", v[0].Kind)
	}
	xs, ys := v[1].Shape, v[2].Shape
	if !rank2(xs) || !slices.Equal(xs, ys) || xs[0] != N || heads <= 0 || xs[1]%heads != 0 {
		return b.fail(OpUDotV, "x and y must both be [N,H*C] with H=%d, got %s and %s", heads, ShapeString(xs), ShapeString(ys))
	}
	return b.add(Op{Kind: OpUDotV, Args: []int32{g, x, y}, Heads: heads, Shape: []int64{edgeRows(v[0]), heads}})
}

// EdgeSoftmax normalises edge scores over each destination's in-edges.
func (b *Builder) EdgeSoftmax(g, s int32) int32 {
	v, ok := b.vals(OpEdgeSoftmax, g, s)
	if !ok {
		return -1
	}
	if v[0].Kind != OpGraph {
		return b.fail(OpEdgeSoftmax, "argument 0 must be a graph, got %s", v[0].Kind)
	}
	if ss := v[1].Shape; !rank2(ss) || ss[0] != edgeRows(v[0]) {
		return b.fail(OpEdgeSoftmax, "scores must be [%s,H], got %s", DimString(edgeRows(v[0])), ShapeString(ss))
	}
	return b.add(Op{Kind: OpEdgeSoftmax, Args: []int32{g, s}, Shape: slices.Clone(v[1].Shape)})
}

// HeadMean averages the H column blocks of x.
func (b *Builder) HeadMean(x int32, heads int64) int32 {
	v, ok := b.vals(OpHeadMean, x)
	if !ok {
		return -1
	}
	xs := v[0].Shape
	if !rank2(xs) || heads <= 0 || xs[1]%heads != 0 {
		return b.fail(OpHeadMean, "x must be [R,H*C] with H=%d, got %s", heads, ShapeString(xs))
	}
	return b.add(Op{Kind: OpHeadMean, Args: []int32{x}, Heads: heads, Shape: []int64{xs[0], xs[1] / heads}})
}

// LSTMAggregate runs an LSTM (gates i, f, g, o as PyTorch, zero initial
// state) over the sources of each node in the graph's CSR order and returns
// the last hidden state, zeros for a node without sources.
func (b *Builder) LSTMAggregate(g, x, wih, whh, bias int32) int32 {
	v, ok := b.vals(OpLSTMAggregate, g, x, wih, whh, bias)
	if !ok {
		return -1
	}
	if v[0].Kind != OpGraph {
		return b.fail(OpLSTMAggregate, "argument 0 must be a graph, got %s", v[0].Kind)
	}
	xs, is, hs, bs := v[1].Shape, v[2].Shape, v[3].Shape, v[4].Shape
	concrete := func(s []int64) bool { return !slices.ContainsFunc(s, func(d int64) bool { return d <= 0 }) }
	if !rank2(xs) || xs[0] != N || !rank2(is) || !rank2(hs) || len(bs) != 1 ||
		!concrete(is) || !concrete(hs) || !concrete(bs) ||
		is[0] != xs[1] || hs[1] != 4*hs[0] || is[1] != hs[1] || bs[0] != hs[1] {
		return b.fail(OpLSTMAggregate, "want x [N,C], w_ih [C,4H], w_hh [H,4H] and b [4H], got x=%s w_ih=%s w_hh=%s b=%s",
			ShapeString(xs), ShapeString(is), ShapeString(hs), ShapeString(bs))
	}
	return b.add(Op{Kind: OpLSTMAggregate, Args: []int32{g, x, wih, whh, bias}, Shape: []int64{N, hs[0]}})
}

// Output marks a value as the layer's result.
func (b *Builder) Output(h int32) int32 {
	v, ok := b.vals("output", h)
	if !ok {
		return -1
	}
	if s := v[0].Shape; !rank2(s) || s[0] != N {
		return b.fail("output", "the layer output must be [N,C], got %s", ShapeString(s))
	}
	if len(b.g.Outputs) > 0 {
		return b.fail("output", "the layer already has an output (%%%d)", b.g.Outputs[0])
	}
	b.g.Outputs = append(b.g.Outputs, h)
	return h
}

// Shape returns the inferred shape of a recorded value (nil for poison).
func (b *Builder) Shape(h int32) []int64 {
	if h < 0 || int(h) >= len(b.g.Ops) {
		return nil
	}
	return slices.Clone(b.g.Ops[h].Shape)
}
