package ir

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// AttrType says which field of Op holds an op's attribute.
type AttrType uint8

// Attribute types.
const (
	AttrNone   AttrType = iota
	AttrFloat           // Op.Alpha
	AttrInt             // Op.Heads
	AttrString          // Op.Reducer
)

// Attrs is the attribute of a structural op (the field its AttrType names).
type Attrs struct {
	Alpha   float64
	Heads   int64
	Reducer string
}

// structuralOps are the ops with their own shape rule and engine methods,
// and the leaves. Their builder methods (ops_gen.go), the engine's
// dispatch, the WASM host functions and the SDK wrappers are generated
// from these entries.
var structuralOps = []OpSpec{
	// Leaves: recorded by Builder.Input, Graph and Param.
	{Kind: OpInput, Class: ClassLeaf, Doc: "the layer input \"x\": [N, in_dim]"},
	{Kind: OpGraph, Class: ClassLeaf, Doc: "an adjacency, \"adj\" or \"adj_self\": [N,N]"},
	{Kind: OpParam, Class: ClassLeaf, Doc: "a weight with a concrete shape and an init: learnable, or a buffer (Builder.Buffer, sdk.Buffer) that has no gradient and that the optimizer never changes"},

	{Kind: OpAggregate, Name: "Aggregate", SDK: "Aggregate", Class: ClassStructural, Impl: "Aggregate", Aux: true,
		Operands: []string{"g", "x"}, Attr: "reducer", AttrType: AttrString, Sides: ".sd", Infer: inferAggregate,
		Doc:  "(g, x[N,C]) -> [N,C]: the sum, mean, max or GCN-normalised sum of each node's source rows (the fused SpMM)",
		Cost: costAggregate, CostDoc: "2·E·C flops; E·C + N·C values",
		Checks: []Check{
			{"sum", func(b *Builder, h, _, g, _ int32) int32 { return b.Record(OpAggregate, Attrs{Reducer: "sum"}, g, h) }},
			{"mean", func(b *Builder, h, _, g, _ int32) int32 { return b.Record(OpAggregate, Attrs{Reducer: "mean"}, g, h) }},
			{"gcn", func(b *Builder, h, _, _, gs int32) int32 { return b.Record(OpAggregate, Attrs{Reducer: "gcn"}, gs, h) }},
			{"max", func(b *Builder, h, _, g, _ int32) int32 { return b.Record(OpAggregate, Attrs{Reducer: "max"}, g, h) }},
		}},
	{Kind: OpSpMMEdge, Name: "SpMMEdge", SDK: "SpMMEdge", Class: ClassStructural, Impl: "SpMMEdge",
		Operands: []string{"g", "w", "x"}, Sides: ".esd", ReadsArgs: []int{1, 2}, Infer: inferSpMMEdge,
		Doc:  "(g, w[E,H], x[N,H·C]) -> [N,H·C]: each node's source rows weighted per edge and head",
		Cost: costSpMMEdge, CostDoc: "2·E·H·C flops; E·H + E·H·C + N·H·C values",
		Checks: []Check{{"", func(b *Builder, h, h2, _, gs int32) int32 {
			return b.Record(OpSpMMEdge, Attrs{}, gs, b.Record(OpUDotV, Attrs{Heads: 1}, gs, h, h2), h)
		}}}},
	{Kind: OpMatMul, Name: "MatMul", SDK: "MatMul", Class: ClassStructural, Impl: "MatMul", Aux: true,
		Operands: []string{"a", "b"}, ReadsArgs: []int{0, 1}, Infer: inferMatMul,
		Doc:  "(a[R,K], b[K,M]) -> [R,M], b with concrete rows",
		Cost: costMatMul, CostDoc: "2·R·K·M flops; R·K + K·M + R·M values",
		Checks: []Check{{"", func(b *Builder, h, _, _, _ int32) int32 {
			return b.Record(OpMatMul, Attrs{}, h, checkParam(b, "M", width, 2))
		}}}},
	{Kind: OpBias, Name: "Bias", SDK: "Bias", Class: ClassStructural, Impl: "Bias",
		Operands: []string{"x", "b"}, InPlace: []int{0}, InPlaceGrad: true, Infer: inferBias,
		Doc:  "(x[R,C], b[C]) -> [R,C]: b added to every row",
		Cost: costElementwise(1), CostDoc: "R·C flops; 2·R·C values",
		Checks: []Check{{"", func(b *Builder, h, _, _, _ int32) int32 {
			return b.Record(OpBias, Attrs{}, h, checkParam(b, "c", width))
		}}}},
	{Kind: OpScale, Name: "Scale", SDK: "Scale", Class: ClassStructural, Impl: "Scale",
		Operands: []string{"x"}, Attr: "factor", AttrType: AttrFloat, InPlaceGrad: true, Infer: inferScale,
		Doc:  "(x) -> x's shape: factor·x",
		Cost: costElementwise(1), CostDoc: "one flop per element; 2 values per element",
		Checks: []Check{{"", func(b *Builder, h, _, _, _ int32) int32 { return b.Record(OpScale, Attrs{Alpha: -1.7}, h) }}}},
	{Kind: OpConcat, Name: "Concat", SDK: "Concat", Class: ClassStructural, Impl: "Concat",
		Operands: []string{"a", "b"}, Aligned: true, Infer: inferConcat,
		Doc:  "(a[R,C1], b[R,C2]) -> [R,C1+C2]",
		Cost: costCopy, CostDoc: "no flops; 2·R·(C1+C2) values",
		Checks: []Check{{"", func(b *Builder, h, h2, _, _ int32) int32 { return b.Record(OpConcat, Attrs{}, h, h2) }}}},
	{Kind: OpDropout, Name: "Dropout", Class: ClassStructural, Impl: "Dropout", // SDK: hand-written, sdk.Dropout(x, 0) records nothing

		Operands: []string{"x"}, Attr: "p", AttrType: AttrFloat, InPlace: []int{0}, InPlaceGrad: true, Infer: inferDropout,
		Doc:  "(x) -> x's shape: each element zeroed with probability p and the rest scaled by 1/(1-p), in training only; an element's draw depends on the step, the op and its row's global node or edge id, never on where the row is computed",
		Cost: costElementwise(5), CostDoc: "5 flops per element (mask and scale); 3 values per element",
		Checks: []Check{{"", func(b *Builder, h, _, _, _ int32) int32 { return b.Record(OpDropout, Attrs{Alpha: 0.4}, h) }}}},
	{Kind: OpBatchNorm, Name: "BatchNorm", SDK: "BatchNorm", Class: ClassStructural, Impl: "BatchNorm", Aux: true,
		Operands: []string{"x", "gamma", "beta"}, Attr: "eps", AttrType: AttrFloat, ReadsArgs: []int{0, 1}, Infer: inferBatchNorm,
		Doc:  "(x[R,C], gamma[C], beta[C]) -> [R,C]: columns normalised with the batch statistics in training, the running ones in evaluation; gamma and beta are params",
		Cost: costElementwise(6), CostDoc: "6 flops per element; 3 values per element",
		Checks: []Check{{"", func(b *Builder, h, _, _, _ int32) int32 {
			return b.Record(OpBatchNorm, Attrs{Alpha: 1e-5}, h, checkParam(b, "gamma", width), checkParam(b, "beta", width))
		}}}},
	{Kind: OpLayerNorm, Name: "LayerNorm", SDK: "LayerNorm", Class: ClassStructural, Impl: "LayerNorm", Aux: true,
		Operands: []string{"x", "gamma", "beta"}, Attr: "eps", AttrType: AttrFloat, ReadsArgs: []int{1}, Infer: inferBatchNorm,
		Doc:    "(x[R,C], gamma[C], beta[C]) -> [R,C]: each row normalised by its own mean and biased variance, (x-μ)/√(σ²+eps)·gamma + beta, as torch.nn.LayerNorm over the last dimension; the same in training and evaluation",
		SDKDoc: "See LayerNorm1d for the usual parameters.",
		Cost:   costElementwise(12), CostDoc: "12 flops per element; 3 values per element",
		Checks: []Check{{"", func(b *Builder, h, _, _, _ int32) int32 {
			return b.Record(OpLayerNorm, Attrs{Alpha: 1e-5}, h, checkParam(b, "gamma", width), checkParam(b, "beta", width))
		}}}},
	{Kind: OpHeadDot, Name: "HeadDot", SDK: "HeadDot", Class: ClassStructural, Impl: "HeadDot",
		Operands: []string{"x", "a"}, ReadsArgs: []int{0, 1}, Infer: inferHeadDot,
		Doc:  "(x[R,H·C], a[H,C]) -> [R,H]: one score per row and head",
		Cost: costHeadDot, CostDoc: "2·R·H·C flops; R·H·C + H·C + R·H values",
		Checks: []Check{{"", func(b *Builder, h, _, _, _ int32) int32 {
			return b.Record(OpMatMul, Attrs{}, b.Record(OpHeadDot, Attrs{}, h, checkParam(b, "a", 2, width/2)), checkParam(b, "P", 2, width))
		}}}},
	{Kind: OpUAddV, Name: "UAddV", SDK: "UAddV", Class: ClassStructural, Impl: "UAddV",
		Operands: []string{"g", "u", "v"}, Sides: ".sde", Infer: inferUAddV,
		Doc:  "(g, u[N,H], v[N,H]) -> [E,H]: u of the edge's source plus v of its destination",
		Cost: costEdgeOut(1), CostDoc: "E·H flops; 3·E·H values",
		Checks: []Check{{"", func(b *Builder, h, h2, g, _ int32) int32 {
			u := b.Record(OpMatMul, Attrs{}, h, checkParam(b, "U", width, 2))
			v := b.Record(OpMatMul, Attrs{}, h2, checkParam(b, "V", width, 2))
			return b.Record(OpSpMMEdge, Attrs{}, g, b.Record(OpUAddV, Attrs{}, g, u, v), h)
		}}}},
	{Kind: OpUDotV, Name: "UDotV", SDK: "UDotV", Class: ClassStructural, Impl: "UDotV",
		Operands: []string{"g", "x", "y"}, Attr: "heads", AttrType: AttrInt, Sides: ".dse", ReadsArgs: []int{1, 2}, Infer: inferUDotV,
		Doc:  "(g, x[N,H·C], y[N,H·C]) -> [E,H]: per edge and head <x[dst], y[src]>",
		Cost: costUDotV, CostDoc: "2·E·H·C flops; 2·E·H·C + E·H values",
		Checks: []Check{{"", func(b *Builder, h, h2, g, _ int32) int32 {
			return b.Record(OpSpMMEdge, Attrs{}, g, b.Record(OpUDotV, Attrs{Heads: 2}, g, h, h2), h)
		}}}},
	{Kind: OpEdgeSoftmax, Name: "EdgeSoftmax", SDK: "EdgeSoftmax", Class: ClassStructural, Impl: "EdgeSoftmax",
		Operands: []string{"g", "s"}, Sides: ".ee", ReadsY: true, Infer: inferEdgeSoftmax,
		Doc:  "(g, s[E,H]) -> [E,H]: softmax over each destination's in-edges",
		Cost: costEdgeOut(4), CostDoc: "4·E·H flops; 2·E·H values",
		Checks: []Check{{"", func(b *Builder, h, h2, g, _ int32) int32 {
			return b.Record(OpSpMMEdge, Attrs{}, g, b.Record(OpEdgeSoftmax, Attrs{}, g, b.Record(OpUDotV, Attrs{Heads: 2}, g, h, h2)), h2)
		}}}},
	{Kind: OpHeadMean, Name: "HeadMean", SDK: "HeadMean", Class: ClassStructural, Impl: "HeadMean", Aux: true,
		Operands: []string{"x"}, Attr: "heads", AttrType: AttrInt, Infer: inferHeadMean,
		Doc:  "(x[R,H·C]) -> [R,C]: the mean of the H column blocks",
		Cost: costHeadMean, CostDoc: "R·H·C flops; R·H·C + R·C values",
		Checks: []Check{{"", func(b *Builder, h, _, _, _ int32) int32 { return b.Record(OpHeadMean, Attrs{Heads: 2}, h) }}}},
	{Kind: OpLSTMAggregate, Name: "LSTMAggregate", SDK: "LSTMAggregate", Class: ClassStructural, Impl: "LSTMAggregate", Aux: true,
		Operands: []string{"g", "x", "w_ih", "w_hh", "b"}, Sides: ".s...d", ReadsArgs: []int{1, 2, 3}, Infer: inferLSTM,
		Doc:    "(g, x[N,C], w_ih[C,4H], w_hh[H,4H], b[4H]) -> [N,H]: an LSTM (gates i, f, g, o as PyTorch, zero initial state) over each node's sources in CSR order, the last hidden state (zeros without sources)",
		SDKDoc: "See LSTMAggregation.",
		Cost:   costLSTM, CostDoc: "2·N·C·4H + E·(2·H·4H + 30·H) flops; N·C + E·6H + N·H values",
		Checks: []Check{{"", func(b *Builder, h, _, g, _ int32) int32 {
			return b.Record(OpLSTMAggregate, Attrs{}, g, h, checkParam(b, "Wih", width, 8), checkParam(b, "Whh", 2, 8), checkParam(b, "bl", 8))
		}}}},
}

// width is the column count of the values a gradient check gives.
const width = 4

// CheckWidth is the column count of h and h2 in a Check.
const CheckWidth = width

func checkParam(b *Builder, name string, shape ...int64) int32 { return b.Param(name, shape, "glorot") }

// fillDerived completes an entry from its class: operands, attribute
// type, what its gradient reads, its row sides and its cost.
func fillDerived(s *OpSpec) {
	if s.Attr != "" && s.AttrType == AttrNone {
		s.AttrType = AttrFloat
	}
	switch s.Class {
	case ClassUnary:
		s.Operands = []string{"x"}
		if s.NeedsX {
			s.ReadsArgs = []int{0}
		}
		s.ReadsY = s.NeedsY
	case ClassBinary:
		s.Operands, s.Aligned = []string{"a", "b"}, true
		switch s.Grad {
		case GradMul:
			s.ReadsArgs = []int{0, 1}
		case GradDiv:
			s.ReadsArgs, s.ReadsY = []int{1}, true
		case GradSelect:
			s.ReadsArgs, s.ReadsY = []int{0}, true
		}
	case ClassGather:
		s.Operands, s.Sides = []string{"g", "x"}, ".de"
		if s.Src {
			s.Sides = ".se"
		}
	case ClassDegree:
		s.Operands, s.Sides = []string{"g", "x"}, ".dd"
	case ClassSegment:
		s.Operands, s.Sides = []string{"g", "e"}, ".ed"
		switch s.Seg {
		case SegSoftmax:
			s.Sides, s.ReadsY = ".ee", true
		case SegProd: // backend.SegmentMultiplier's backward reads the factors
			s.ReadsArgs = []int{1}
		}
	}
	if s.Cost == nil && s.Table() {
		s.Cost, s.CostDoc = costTable(s), fmt.Sprintf("%g flops per output element", s.Flops)
	}
}

// Aggregates reports whether an op reduces rows of a graph's sources onto
// its destinations (aggregate, spmm_edge, lstm_aggregate: its Sides read
// a source operand and write destinations).
func (s *OpSpec) Aggregates() bool {
	n := len(s.Sides)
	return n > 0 && s.Sides[n-1] == 'd' && strings.Contains(s.Sides[:n-1], "s")
}

// Record records a structural op: it checks the operands' count and
// kinds, then the entry's shape rule.
func (b *Builder) Record(kind Kind, at Attrs, args ...int32) int32 {
	s := Spec(kind)
	if s == nil || s.Class != ClassStructural {
		return b.fail(kind, "not a structural op of the op table")
	}
	if len(args) != len(s.Operands) {
		return b.fail(kind, "takes %d operands (%v), got %d", len(s.Operands), s.Operands, len(args))
	}
	vs, ok := b.vals(kind, args...)
	if !ok {
		return -1
	}
	for k, name := range s.Operands {
		if name == "g" && vs[k].Kind != OpGraph {
			return b.fail(kind, "argument %d must be a graph, got %s", k, vs[k].Kind)
		}
	}
	op := Op{Kind: kind, Args: slices.Clone(args)}
	switch s.AttrType {
	case AttrFloat:
		op.Alpha = at.Alpha
	case AttrInt:
		op.Heads = at.Heads
	case AttrString:
		op.Reducer = at.Reducer
	}
	shape, err := s.Infer(vs, &op)
	if err != nil {
		return b.fail(kind, "%v", err)
	}
	op.Shape = shape
	return b.add(op)
}

// edgeRows returns the symbolic edge count of a graph op.
func edgeRows(g *Op) int64 { d, _ := EdgeDim(g.Name); return d }

func inferAggregate(v []*Op, op *Op) ([]int64, error) {
	if !slices.Contains(Reducers, op.Reducer) {
		return nil, fmt.Errorf("unknown reducer %q (allowed: %v)", op.Reducer, Reducers)
	}
	if !rank2(v[1].Shape) || v[1].Shape[0] != N {
		return nil, fmt.Errorf("x must be [N,C], got %s", ShapeString(v[1].Shape))
	}
	return slices.Clone(v[1].Shape), nil
}

func inferSpMMEdge(v []*Op, _ *Op) ([]int64, error) {
	ws, xs := v[1].Shape, v[2].Shape
	if !rank2(ws) || ws[0] != edgeRows(v[0]) {
		return nil, fmt.Errorf("weights must be [%s,H], got %s", DimString(edgeRows(v[0])), ShapeString(ws))
	}
	if !rank2(xs) || xs[0] != N || xs[1]%ws[1] != 0 {
		return nil, fmt.Errorf("x must be [N,H*C] with H=%d, got %s", ws[1], ShapeString(xs))
	}
	return slices.Clone(xs), nil
}

func inferMatMul(v []*Op, _ *Op) ([]int64, error) {
	a, c := v[0].Shape, v[1].Shape
	if !rank2(a) || !rank2(c) || a[1] != c[0] {
		return nil, fmt.Errorf("inner dims mismatch: a=%s b=%s", ShapeString(a), ShapeString(c))
	}
	if c[0] < 0 {
		return nil, fmt.Errorf("b must have concrete rows, got %s", ShapeString(c))
	}
	return []int64{a[0], c[1]}, nil
}

func inferBias(v []*Op, _ *Op) ([]int64, error) {
	if !rank2(v[0].Shape) || len(v[1].Shape) != 1 || v[1].Shape[0] != v[0].Shape[1] {
		return nil, fmt.Errorf("want x [R,C] and b [C], got %s and %s", ShapeString(v[0].Shape), ShapeString(v[1].Shape))
	}
	return slices.Clone(v[0].Shape), nil
}

func inferScale(v []*Op, _ *Op) ([]int64, error) { return slices.Clone(v[0].Shape), nil }

func inferDropout(v []*Op, op *Op) ([]int64, error) {
	if op.Alpha < 0 || op.Alpha >= 1 {
		return nil, fmt.Errorf("drop probability %g outside [0,1)", op.Alpha)
	}
	return slices.Clone(v[0].Shape), nil
}

func inferConcat(v []*Op, _ *Op) ([]int64, error) {
	xs, ys := v[0].Shape, v[1].Shape
	if !rank2(xs) || !rank2(ys) || xs[0] != ys[0] {
		return nil, fmt.Errorf("row counts differ: %s and %s", ShapeString(xs), ShapeString(ys))
	}
	if xs[1] > MaxWidth-ys[1] {
		return nil, fmt.Errorf("result would have %d columns, more than the limit of %d", xs[1]+ys[1], MaxWidth)
	}
	return []int64{xs[0], xs[1] + ys[1]}, nil
}

func inferBatchNorm(v []*Op, op *Op) ([]int64, error) {
	xs := v[0].Shape
	if !rank2(xs) {
		return nil, fmt.Errorf("x must be [R,C], got %s", ShapeString(xs))
	}
	for i, p := range v[1:] {
		if p.Kind != OpParam || len(p.Shape) != 1 || p.Shape[0] != xs[1] {
			return nil, fmt.Errorf("argument %d must be a param [%d], got %s %s", i+1, xs[1], p.Kind, ShapeString(p.Shape))
		}
	}
	if op.Alpha <= 0 {
		return nil, fmt.Errorf("eps must be positive, got %g", op.Alpha)
	}
	return slices.Clone(xs), nil
}

func inferHeadDot(v []*Op, _ *Op) ([]int64, error) {
	xs, as := v[0].Shape, v[1].Shape
	if !rank2(xs) || !rank2(as) || as[0]*as[1] != xs[1] {
		return nil, fmt.Errorf("want x [R,H*C] and a [H,C], got %s and %s", ShapeString(xs), ShapeString(as))
	}
	return []int64{xs[0], as[0]}, nil
}

func inferUAddV(v []*Op, _ *Op) ([]int64, error) {
	us, ws := v[1].Shape, v[2].Shape
	if !rank2(us) || !slices.Equal(us, ws) || us[0] != N {
		return nil, fmt.Errorf("u and v must both be [N,H], got %s and %s", ShapeString(us), ShapeString(ws))
	}
	return []int64{edgeRows(v[0]), us[1]}, nil
}

func inferUDotV(v []*Op, op *Op) ([]int64, error) {
	xs, ys, heads := v[1].Shape, v[2].Shape, op.Heads
	if !rank2(xs) || !slices.Equal(xs, ys) || xs[0] != N || heads <= 0 || xs[1]%heads != 0 {
		return nil, fmt.Errorf("x and y must both be [N,H*C] with H=%d, got %s and %s", heads, ShapeString(xs), ShapeString(ys))
	}
	return []int64{edgeRows(v[0]), heads}, nil
}

func inferEdgeSoftmax(v []*Op, _ *Op) ([]int64, error) {
	if ss := v[1].Shape; !rank2(ss) || ss[0] != edgeRows(v[0]) {
		return nil, fmt.Errorf("scores must be [%s,H], got %s", DimString(edgeRows(v[0])), ShapeString(ss))
	}
	return slices.Clone(v[1].Shape), nil
}

func inferHeadMean(v []*Op, op *Op) ([]int64, error) {
	xs, heads := v[0].Shape, op.Heads
	if !rank2(xs) || heads <= 0 || xs[1]%heads != 0 {
		return nil, fmt.Errorf("x must be [R,H*C] with H=%d, got %s", heads, ShapeString(xs))
	}
	return []int64{xs[0], xs[1] / heads}, nil
}

func inferLSTM(v []*Op, _ *Op) ([]int64, error) {
	xs, is, hs, bs := v[1].Shape, v[2].Shape, v[3].Shape, v[4].Shape
	concrete := func(s []int64) bool { return !slices.ContainsFunc(s, func(d int64) bool { return d <= 0 }) }
	if !rank2(xs) || xs[0] != N || !rank2(is) || !rank2(hs) || len(bs) != 1 ||
		!concrete(is) || !concrete(hs) || !concrete(bs) ||
		is[0] != xs[1] || hs[1] != 4*hs[0] || is[1] != hs[1] || bs[0] != hs[1] {
		return nil, fmt.Errorf("want x [N,C], w_ih [C,4H], w_hh [H,4H] and b [4H], got x=%s w_ih=%s w_hh=%s b=%s",
			ShapeString(xs), ShapeString(is), ShapeString(hs), ShapeString(bs))
	}
	return []int64{N, hs[0]}, nil
}

// Cost functions: concrete shapes (args[k] is operand k's, nil for a
// graph), the output's and the graph's edge count.

func numelF(s []int64) float64 { return float64(max(Numel(s), 0)) }

func dim(s []int64, k int) float64 {
	if k < len(s) {
		return float64(s[k])
	}
	return 0
}

func costTable(s *OpSpec) func(args [][]int64, out []int64, _ int64) (float64, float64) {
	return func(args [][]int64, out []int64, _ int64) (float64, float64) {
		moved := numelF(out)
		for _, a := range args {
			moved += numelF(a)
		}
		return s.Flops * numelF(out), moved
	}
}

func costElementwise(flops float64) func(args [][]int64, out []int64, _ int64) (float64, float64) {
	return func(args [][]int64, out []int64, _ int64) (float64, float64) {
		n := numelF(out)
		return flops * n, 2*n + numelF(args[len(args)-1])*float64(len(args)-1)
	}
}

func costCopy(_ [][]int64, out []int64, _ int64) (float64, float64) { return 0, 2 * numelF(out) }

func costAggregate(args [][]int64, out []int64, e int64) (float64, float64) {
	c := dim(args[1], 1)
	return 2 * float64(e) * c, float64(e)*c + numelF(out)
}

func costSpMMEdge(args [][]int64, out []int64, e int64) (float64, float64) {
	hc := dim(args[2], 1)
	return 2 * float64(e) * hc, numelF(args[1]) + float64(e)*hc + numelF(out)
}

func costMatMul(args [][]int64, out []int64, _ int64) (float64, float64) {
	return 2 * dim(args[0], 0) * dim(args[0], 1) * dim(args[1], 1), numelF(args[0]) + numelF(args[1]) + numelF(out)
}

func costHeadDot(args [][]int64, out []int64, _ int64) (float64, float64) {
	return 2 * numelF(args[0]), numelF(args[0]) + numelF(args[1]) + numelF(out)
}

func costEdgeOut(flops float64) func(args [][]int64, out []int64, _ int64) (float64, float64) {
	return func(_ [][]int64, out []int64, _ int64) (float64, float64) {
		return flops * numelF(out), 3 * numelF(out)
	}
}

func costUDotV(args [][]int64, out []int64, e int64) (float64, float64) {
	c := dim(args[1], 1)
	return 2 * float64(e) * c, 2*float64(e)*c + numelF(out)
}

func costHeadMean(args [][]int64, out []int64, _ int64) (float64, float64) {
	return numelF(args[0]), numelF(args[0]) + numelF(out)
}

func costLSTM(args [][]int64, out []int64, e int64) (float64, float64) {
	n, c, h := dim(args[1], 0), dim(args[1], 1), dim(out, 1)
	return 2*n*c*4*h + float64(e)*(8*h*h+30*h), n*c + float64(e)*6*h + numelF(out)
}

// OpCost returns the flop count and the values moved (read and written;
// times the element size for bytes) of op i of g, with the symbolic dims
// resolved by dims (N: the node count, E_adj and E_adj_self: the edge
// counts). Leaves cost nothing.
func OpCost(g *Graph, i int, dims func(int64) int64) (flops, moved float64) {
	op := &g.Ops[i]
	s := Spec(op.Kind)
	if s == nil || s.Cost == nil {
		return 0, 0
	}
	resolve := func(sh []int64) []int64 {
		out := slices.Clone(sh)
		for k, d := range out {
			if d < 0 {
				out[k] = dims(d)
			}
		}
		return out
	}
	args := make([][]int64, len(op.Args))
	var edges int64
	for k, a := range op.Args {
		if g.Ops[a].Kind == OpGraph {
			if d, ok := EdgeDim(g.Ops[a].Name); ok {
				edges = dims(d)
			}
			continue
		}
		args[k] = resolve(g.Ops[a].Shape)
	}
	f, m := s.Cost(args, resolve(op.Shape), edges)
	if math.IsNaN(f) || math.IsNaN(m) {
		return 0, 0
	}
	return f, m
}
