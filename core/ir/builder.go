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

// takesGraph reports whether operand arg of kind is a graph (its op table
// entry names it "g").
func takesGraph(kind Kind, arg int) bool {
	s := Spec(kind)
	return s != nil && arg < len(s.Operands) && s.Operands[arg] == "g"
}

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
	return b.param(name, shape, init, false)
}

// Buffer declares a non-learnable parameter (torch's register_buffer): a
// param op with Buffer set, held and checkpointed with the model but
// given no gradient and never updated by the optimizer.
func (b *Builder) Buffer(name string, shape []int64, init string) int32 {
	return b.param(name, shape, init, true)
}

func (b *Builder) param(name string, shape []int64, init string, buffer bool) int32 {
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
	return b.add(Op{Kind: OpParam, Name: name, Shape: slices.Clone(shape), Init: init, Buffer: buffer})
}

func rank2(s []int64) bool { return len(s) == 2 }

// UnaryKinds lists what Unary records: the structural ops of one operand
// and a float attribute, then the unary ops of the table.
func UnaryKinds() []Kind {
	var out []Kind
	for _, s := range Ops {
		if s.Class == ClassStructural && len(s.Operands) == 1 && s.AttrType == AttrFloat {
			out = append(out, s.Kind)
		}
	}
	return append(out, TableKinds(ClassUnary)...)
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

// Unary records an elementwise op of the table, or a structural op of one
// operand and a float attribute (scale, dropout), with an optional scalar
// attribute.
func (b *Builder) Unary(kind Kind, x int32, alpha float64) int32 {
	switch s := Spec(kind); {
	case s != nil && s.Class == ClassStructural && len(s.Operands) == 1 && s.AttrType == AttrFloat:
		return b.Record(kind, Attrs{Alpha: alpha}, x)
	case s != nil && s.Class == ClassUnary:
		if math.IsNaN(alpha) || math.IsInf(alpha, 0) {
			return b.fail(kind, "%s = %g must be finite", s.Attr, alpha)
		}
	default:
		return b.fail(kind, "not a unary op (unary ops: %v)", UnaryKinds())
	}
	v, ok := b.vals(kind, x)
	if !ok {
		return -1
	}
	return b.add(Op{Kind: kind, Args: []int32{x}, Alpha: alpha, Shape: slices.Clone(v[0].Shape)})
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

// OutputScores marks a value as a decoder graph's result: one score per
// edge of the pair graph "adj", [EAdj,1].
func (b *Builder) OutputScores(h int32) int32 {
	v, ok := b.vals("output", h)
	if !ok {
		return -1
	}
	if s := v[0].Shape; !rank2(s) || s[0] != EAdj || s[1] != 1 {
		return b.fail("output", "a decoder's output must be one score per pair of \"adj\", [E,1], got %s", ShapeString(s))
	}
	if len(b.g.Outputs) > 0 {
		return b.fail("output", "the graph already has an output (%%%d)", b.g.Outputs[0])
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
