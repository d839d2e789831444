package ir

import (
	"math"
	"slices"
)

// The op table: every IR op kind is declared once here, with its
// operands (arity, which one is a graph), shape rule, attribute, backend
// code, which operands its gradient reads, its reference function and
// derivative or the engine methods that run it, its flop and byte counts
// for the cost models and its gradient-check recipe. The builder validates
// from it, the engine dispatches forward and backward and plans its
// buffers and row spaces from it, the simulator prices from it, the tests
// iterate over it, and `go generate ./core/ir` (internal/opgen) writes the
// backend's function codes, the builder's typed methods, the engine's
// dispatch of the structural ops, the WASM host functions, the guest SDK's
// wrappers and imports, the CUDA code list and docs/ops.md from it.
// Adding an elementwise op is one entry here plus its cpu (and cuda)
// kernel; adding a structural op is one entry (ClassStructural, see
// structural.go) plus its engine methods forward<Impl> and backward<Impl>
// (and bind<Impl> when it keeps per-op state).

//go:generate go run strata/internal/opgen/cmd/opgen

// Class says how an op of the table is shaped and run.
type Class uint8

// Op classes.
const (
	// ClassUnary: (x) -> x's shape, backend Apply / ApplyBackward with
	// code Code and attribute Alpha.
	ClassUnary Class = iota + 1
	// ClassBinary: (a, b) -> a's shape, b the same shape, a row [C] or a
	// scalar [1]; backend Elementwise with code Code.
	ClassBinary
	// ClassGather: (g, x[N,C]) -> [E,C], the source or destination row of
	// every edge of g.
	ClassGather
	// ClassSegment: (g, e[E,C]) -> [N,C], a reduction over each node's
	// in-edges of g (softmax: -> [E,C], normalised over them).
	ClassSegment
	// ClassDegree: (g, x[N,C]) -> [N,C], every column the in-degree of
	// the row's node in g (x gives the width; its values are not read).
	ClassDegree
	// ClassStructural: an op with its own shape rule (Infer) and engine
	// methods (Impl): matmul, aggregate (SpMM), batchnorm, the GAT and
	// LSTM ops, ...
	ClassStructural
	// ClassLeaf: a value the host provides (input, graph, param); no
	// operands, no forward.
	ClassLeaf
)

// Segment says which reduction a ClassSegment op computes.
type Segment uint8

// Segment reductions.
const (
	SegSum Segment = iota + 1
	SegMean
	SegMax
	SegMin
	SegSoftmax
	SegQuantile // the Alpha-quantile of the sorted values, lower element
	SegNth      // the value of the Alpha-th in-edge in CSR order (0 when fewer)
	SegProd     // the product (1 without in-edges)
)

// GradRule says how a binary op's gradient is formed from dy.
type GradRule uint8

// Binary gradient rules.
const (
	GradAdd    GradRule = iota + 1 // da = dy, db = dy
	GradSub                        // da = dy, db = -dy
	GradMul                        // da = dy·b, db = dy·a
	GradDiv                        // da = dy/b, db = -dy·y/b
	GradSelect                     // da = dy·[y == a], db = dy·[y != a]
)

// OpSpec declares one op of the table.
type OpSpec struct {
	Kind Kind   // the IR op ("" for a backend-only function: identity, neg)
	Name string // the backend code's Go name (Exp, Log, ...)
	SDK  string // the SDK wrapper's name ("" when hand-written in the SDK)
	// SDKDoc is a further paragraph of the SDK wrapper's doc comment.
	SDKDoc string
	Class  Class
	Doc    string
	// Code is the backend.Unary or backend.Binary value (stable: CUDA
	// kernels and checkpoints of cost data use it).
	Code uint8
	// Attr names what Alpha means ("" when the op takes none).
	Attr string
	// NeedsX and NeedsY say what the gradient reads: the input x and/or
	// the output y (unary ops).
	NeedsX, NeedsY bool
	// F and DF are the reference function and its derivative (unary:
	// dy/dx from x, y = F(x) and Alpha).
	F  func(x, alpha float64) float64
	DF func(x, y, alpha float64) float64
	// F2 and Grad are the binary reference function and gradient rule.
	F2   func(a, b float64) float64
	Grad GradRule
	// Seg is the reduction of a segment op; Src (gather) takes the source
	// rows (else the destinations).
	Seg Segment
	Src bool
	// Flops per output element, for the cost models.
	Flops float64
	// Domain is the open interval a gradient check draws inputs from
	// (0,0 means (-2, 2)); Alpha a value the check uses.
	DomainLo, DomainHi float64
	CheckAlpha         float64

	// Operands names the arguments in order (the arity is their count);
	// "g" is a graph. Filled from the class for the elementwise, gather,
	// segment and degree ops.
	Operands []string
	// AttrType says which field of Op holds the attribute Attr names.
	AttrType AttrType
	// Infer is a structural op's shape rule: it checks the operands and
	// the attribute and returns the output shape.
	Infer func(args []*Op, op *Op) ([]int64, error)
	// Sides is, for an op with a graph operand, the row space of every
	// operand and then of the output: 's' the graph's sources, 'd' its
	// destinations (an operand given on the sources is narrowed), 'e' its
	// edges, '.' not rows of the graph (the graph itself, parameters).
	Sides string
	// Aligned: the second operand has the first's rows (binary ops,
	// concat); otherwise an op's rows are its first operand's.
	Aligned bool
	// ReadsArgs and ReadsY say which operand values (by position) and
	// whether its own value the backward reads (derived from NeedsX,
	// NeedsY, Grad and Seg for the other classes).
	ReadsArgs []int
	ReadsY    bool
	// InPlace lists the operands whose buffer the forward may write its
	// output over; InPlaceGrad says the backward may write the first
	// operand's gradient over the output's.
	InPlace     []int
	InPlaceGrad bool
	// Impl names a structural op's engine methods: forward<Impl>,
	// backward<Impl> and, with Aux, bind<Impl> (generated dispatch,
	// core/engine/dispatch_gen.go).
	Impl string
	Aux  bool
	// Cost is a structural op's flop and byte count for concrete operand
	// and output shapes (edges: the graph's edge count); the other classes
	// derive it from Flops.
	Cost func(args [][]int64, out []int64, edges int64) (flops, bytes float64)
	// CostDoc is Cost in words (docs/ops.md).
	CostDoc string
	// Checks are a structural op's finite-difference gradient cases.
	Checks []Check
}

// Check is one gradient-check recipe of an op: it records the op on h
// and h2 (two [N,width] values), g ("adj") and gs ("adj_self") and
// returns a [N,C] value.
type Check struct {
	Name  string
	Build func(b *Builder, h, h2, g, gs int32) int32
}

// Unary and binary function codes that are not IR ops.
const (
	codeIdentity = 0
	codeNeg      = 7
)

func relu(x, _ float64) float64 { return max(x, 0) }

// tableOps are the elementwise, gather, segment and degree ops. Unary
// codes continue the backend's historical numbering (identity 0 ... neg
// 7); binary codes likewise (add 0 ... div 3).
var tableOps = []OpSpec{
	// Unary functions.
	{Name: "Identity", Class: ClassUnary, Code: codeIdentity, Doc: "y = x", Flops: 0,
		F: func(x, _ float64) float64 { return x }, DF: func(_, _, _ float64) float64 { return 1 }},
	{Kind: OpReLU, Name: "ReLU", SDK: "ReLU", Class: ClassUnary, Code: 1, NeedsX: true, InPlace: []int{0}, InPlaceGrad: true, Doc: "max(x, 0)", Flops: 1,
		F: relu, DF: func(x, _, _ float64) float64 { return step(x) }},
	{Kind: OpLeakyReLU, Name: "LeakyReLU", Class: ClassUnary, Code: 2, Attr: "slope", NeedsX: true, InPlace: []int{0}, InPlaceGrad: true, Doc: "x if x > 0 else slope·x", Flops: 2, CheckAlpha: 0.2,
		F:  func(x, a float64) float64 { return pick(x > 0, x, a*x) },
		DF: func(x, _, a float64) float64 { return pick(x > 0, 1, a) }},
	{Kind: OpELU, Name: "ELU", Class: ClassUnary, Code: 3, Attr: "alpha", NeedsX: true, NeedsY: true, InPlace: []int{0}, InPlaceGrad: true, Doc: "x if x > 0 else alpha·(e^x - 1)", Flops: 4, CheckAlpha: 1,
		F:  func(x, a float64) float64 { return pick(x > 0, x, a*math.Expm1(x)) },
		DF: func(x, y, a float64) float64 { return pick(x > 0, 1, y+a) }},
	{Kind: OpSigmoid, Name: "Sigmoid", SDK: "Sigmoid", Class: ClassUnary, Code: 4, NeedsY: true, InPlace: []int{0}, InPlaceGrad: true, Doc: "1/(1+e^-x)", Flops: 4,
		F: func(x, _ float64) float64 { return 1 / (1 + math.Exp(-x)) }, DF: func(_, y, _ float64) float64 { return y * (1 - y) }},
	{Kind: OpTanh, Name: "Tanh", SDK: "Tanh", Class: ClassUnary, Code: 5, NeedsY: true, InPlace: []int{0}, InPlaceGrad: true, Doc: "tanh(x)", Flops: 6,
		F: func(x, _ float64) float64 { return math.Tanh(x) }, DF: func(_, y, _ float64) float64 { return 1 - y*y }},
	{Kind: OpExp, Name: "Exp", SDK: "Exp", Class: ClassUnary, Code: 6, NeedsY: true, Doc: "e^x", Flops: 4,
		F: func(x, _ float64) float64 { return math.Exp(x) }, DF: func(_, y, _ float64) float64 { return y }},
	{Name: "Neg", Class: ClassUnary, Code: codeNeg, Doc: "-x", Flops: 1,
		F: func(x, _ float64) float64 { return -x }, DF: func(_, _, _ float64) float64 { return -1 }},
	{Kind: OpLog, Name: "Log", SDK: "Ln", Class: ClassUnary, Code: 8, NeedsX: true, Doc: "natural logarithm", Flops: 4, DomainLo: 0.2, DomainHi: 3,
		F: func(x, _ float64) float64 { return math.Log(x) }, DF: func(x, _, _ float64) float64 { return 1 / x }},
	{Kind: OpSqrt, Name: "Sqrt", SDK: "Sqrt", Class: ClassUnary, Code: 9, NeedsY: true, Doc: "square root", Flops: 2, DomainLo: 0.2, DomainHi: 3,
		F: func(x, _ float64) float64 { return math.Sqrt(x) }, DF: func(_, y, _ float64) float64 { return 0.5 / y }},
	{Kind: OpPow, Name: "Pow", SDK: "Pow", Class: ClassUnary, Code: 10, Attr: "exponent", NeedsX: true, NeedsY: true, Doc: "x^exponent (x > 0 unless the exponent is an integer)", Flops: 8, DomainLo: 0.2, DomainHi: 3, CheckAlpha: 1.7,
		F:  func(x, a float64) float64 { return math.Pow(x, a) },
		DF: func(x, _, a float64) float64 { return a * math.Pow(x, a-1) }},
	{Kind: OpAbs, Name: "Abs", SDK: "Abs", Class: ClassUnary, Code: 11, NeedsX: true, Doc: "|x| (gradient sign(x), 0 at 0)", Flops: 1,
		F: func(x, _ float64) float64 { return math.Abs(x) }, DF: func(x, _, _ float64) float64 { return sign(x) }},
	{Kind: OpSign, Name: "Sign", SDK: "Sign", Class: ClassUnary, Code: 12, Doc: "-1, 0 or 1 (gradient 0)", Flops: 1,
		F: func(x, _ float64) float64 { return sign(x) }, DF: func(_, _, _ float64) float64 { return 0 }},
	{Kind: OpClampMin, Name: "ClampMin", SDK: "ClampMin", Class: ClassUnary, Code: 13, Attr: "min", NeedsX: true, NeedsY: true, Doc: "max(x, min) (gradient where x > min)", Flops: 1, CheckAlpha: 0.3,
		F: func(x, a float64) float64 { return max(x, a) }, DF: func(x, y, _ float64) float64 { return pick(x == y, 1, 0) }},
	{Kind: OpClampMax, Name: "ClampMax", SDK: "ClampMax", Class: ClassUnary, Code: 14, Attr: "max", NeedsX: true, NeedsY: true, Doc: "min(x, max) (gradient where x < max)", Flops: 1, CheckAlpha: 0.3,
		F: func(x, a float64) float64 { return min(x, a) }, DF: func(x, y, _ float64) float64 { return pick(x == y, 1, 0) }},
	{Kind: OpShift, Name: "Shift", SDK: "Shift", Class: ClassUnary, Code: 16, Attr: "c", Doc: "x + c (a constant)", Flops: 1, CheckAlpha: 0.7,
		F: func(x, a float64) float64 { return x + a }, DF: func(_, _, _ float64) float64 { return 1 }},
	{Kind: OpCos, Name: "Cos", SDK: "Cos", Class: ClassUnary, Code: 15, NeedsX: true, Doc: "cos(x)", Flops: 8,
		F: func(x, _ float64) float64 { return math.Cos(x) }, DF: func(x, _, _ float64) float64 { return -math.Sin(x) }},

	// Binary functions (b broadcasts: same shape, a row [C] or a scalar [1]).
	{Kind: OpAdd, Name: "Add", SDK: "Add", Class: ClassBinary, InPlace: []int{0, 1}, InPlaceGrad: true, Code: 0, Grad: GradAdd, Doc: "a + b", Flops: 1,
		F2: func(a, b float64) float64 { return a + b }},
	{Kind: OpSub, Name: "Sub", SDK: "Sub", Class: ClassBinary, InPlace: []int{0, 1}, InPlaceGrad: true, Code: 1, Grad: GradSub, Doc: "a - b", Flops: 1,
		F2: func(a, b float64) float64 { return a - b }},
	{Kind: OpMul, Name: "Mul", SDK: "Mul", Class: ClassBinary, InPlace: []int{0, 1}, Code: 2, Grad: GradMul, Doc: "a · b", Flops: 1,
		F2: func(a, b float64) float64 { return a * b }},
	{Kind: OpDiv, Name: "Div", SDK: "Div", Class: ClassBinary, Code: 3, Grad: GradDiv, Doc: "a / b", Flops: 1, DomainLo: 0.3, DomainHi: 2,
		F2: func(a, b float64) float64 { return a / b }},
	{Kind: OpMinimum, Name: "Minimum", SDK: "Minimum", Class: ClassBinary, Code: 4, Grad: GradSelect, Doc: "min(a, b) (a tie goes to a)", Flops: 1,
		F2: func(a, b float64) float64 { return min(a, b) }},
	{Kind: OpMaximum, Name: "Maximum", SDK: "Maximum", Class: ClassBinary, Code: 5, Grad: GradSelect, Doc: "max(a, b) (a tie goes to a)", Flops: 1,
		F2: func(a, b float64) float64 { return max(a, b) }},
	{Name: "Equal", Class: ClassBinary, Code: 6, Doc: "1 where a == b, else 0 (the select gradients' mask)", Flops: 1,
		F2: func(a, b float64) float64 { return pick(a == b, 1, 0) }},

	// Gathers: node rows onto the edges of g.
	{Kind: OpGatherSrc, Name: "GatherSrc", SDK: "GatherSrc", Class: ClassGather, Src: true, Doc: "e[k] = x[src(k)] for every edge k of g"},
	{Kind: OpGatherDst, Name: "GatherDst", SDK: "GatherDst", Class: ClassGather, Doc: "e[k] = x[dst(k)] for every edge k of g"},

	// Segment reductions over each node's in-edges of g.
	{Kind: OpSegmentSum, Name: "SegmentSum", SDK: "SegmentSum", Class: ClassSegment, Seg: SegSum, Doc: "Σ over the node's in-edges (0 without)"},
	{Kind: OpSegmentMean, Name: "SegmentMean", SDK: "SegmentMean", Class: ClassSegment, Seg: SegMean, Doc: "mean over the node's in-edges (0 without)"},
	{Kind: OpSegmentMax, Name: "SegmentMax", SDK: "SegmentMax", Class: ClassSegment, Seg: SegMax, Doc: "max over the node's in-edges (0 without)"},
	{Kind: OpSegmentMin, Name: "SegmentMin", SDK: "SegmentMin", Class: ClassSegment, Seg: SegMin, Doc: "min over the node's in-edges (0 without)"},
	{Kind: OpSegmentSoftmax, Name: "SegmentSoftmax", SDK: "SegmentSoftmax", Class: ClassSegment, Seg: SegSoftmax, Doc: "softmax over the node's in-edges, per column: [E,C] -> [E,C]"},
	{Kind: OpSegmentProd, Name: "SegmentProd", SDK: "SegmentProd", Class: ClassSegment, Seg: SegProd, Flops: 1,
		Doc: "the product over the node's in-edges (1 without); a factor's gradient is the product of the others, zeros included"},
	{Kind: OpSegmentQuantile, Name: "SegmentQuantile", SDK: "SegmentQuantile", Class: ClassSegment, Seg: SegQuantile, Attr: "q", CheckAlpha: 0.5,
		Doc: "the q-quantile of the node's in-edge values per column, the lower element of the sorted values (q = 0.5: the lower median; 0 without in-edges)"},
	{Kind: OpSegmentNth, Name: "SegmentNth", SDK: "SegmentNth", Class: ClassSegment, Seg: SegNth, Attr: "k", CheckAlpha: 1,
		Doc: "the value of the node's k-th in-edge (from 0) in CSR order (0 when it has k or fewer)"},

	// Degree.
	{Kind: OpDegree, Name: "Degree", SDK: "Degree", Class: ClassDegree, Doc: "the node's in-degree in g, in every column of x's width (no gradient)"},
}

// Ops is the op table: the elementwise, gather, segment and degree ops
// above, then the structural ops and the leaves (structural.go).
var Ops = func() []OpSpec {
	all := append(slices.Clone(tableOps), structuralOps...)
	for i := range all {
		fillDerived(&all[i])
	}
	return all
}()

// Table ops beyond the hand-written kinds of ir.go.
const (
	OpExp             Kind = "exp"
	OpLog             Kind = "log"
	OpSqrt            Kind = "sqrt"
	OpPow             Kind = "pow"
	OpAbs             Kind = "abs"
	OpSign            Kind = "sign"
	OpClampMin        Kind = "clamp_min"
	OpClampMax        Kind = "clamp_max"
	OpCos             Kind = "cos"
	OpShift           Kind = "shift"
	OpDiv             Kind = "div"
	OpMinimum         Kind = "minimum"
	OpMaximum         Kind = "maximum"
	OpGatherSrc       Kind = "gather_src"
	OpGatherDst       Kind = "gather_dst"
	OpSegmentSum      Kind = "segment_sum"
	OpSegmentMean     Kind = "segment_mean"
	OpSegmentMax      Kind = "segment_max"
	OpSegmentMin      Kind = "segment_min"
	OpSegmentSoftmax  Kind = "segment_softmax"
	OpSegmentProd     Kind = "segment_prod"
	OpSegmentQuantile Kind = "segment_quantile"
	OpSegmentNth      Kind = "segment_nth"
	OpDegree          Kind = "degree"
)

func step(x float64) float64 { return pick(x > 0, 1, 0) }

func sign(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

func pick(c bool, a, b float64) float64 {
	if c {
		return a
	}
	return b
}

// specByKind indexes Ops by kind. It is filled by init, not by its
// initialiser, so that the entries' gradient checks (which record ops
// through Spec) do not make Ops depend on itself.
var specByKind map[Kind]*OpSpec

func init() {
	specByKind = map[Kind]*OpSpec{}
	for i := range Ops {
		if Ops[i].Kind != "" {
			specByKind[Ops[i].Kind] = &Ops[i]
		}
	}
}

// Spec returns the table entry of an op kind (nil for a kind not in the
// table).
func Spec(k Kind) *OpSpec { return specByKind[k] }

// UnarySpec returns the table entry of a backend unary code (nil when
// unknown).
func UnarySpec(code uint8) *OpSpec { return byCode(ClassUnary, code) }

// BinarySpec returns the table entry of a backend binary code (nil when
// unknown).
func BinarySpec(code uint8) *OpSpec { return byCode(ClassBinary, code) }

func byCode(c Class, code uint8) *OpSpec {
	for i := range Ops {
		if Ops[i].Class == c && Ops[i].Code == code {
			return &Ops[i]
		}
	}
	return nil
}

// TableKinds lists the IR kinds of a class, in table order.
func TableKinds(c Class) []Kind {
	var out []Kind
	for _, s := range Ops {
		if s.Class == c && s.Kind != "" {
			out = append(out, s.Kind)
		}
	}
	return out
}

// takesGraphArg reports whether a table op reads a graph as argument 0.
func (s *OpSpec) takesGraphArg() bool { return len(s.Operands) > 0 && s.Operands[0] == "g" }

// GraphOp reports whether an op kind reads a graph as its first argument.
func GraphOp(k Kind) bool {
	s := Spec(k)
	return s != nil && s.takesGraphArg()
}

// Table reports whether an op is one of the elementwise, gather, segment
// and degree ops the engine runs generically (not structural, not a leaf).
func (s *OpSpec) Table() bool { return s.Class >= ClassUnary && s.Class <= ClassDegree }

// Table records a table op of class gather, segment or degree: (g, v)
// with attribute alpha (the quantile q, the position k).
func (b *Builder) Table(kind Kind, g, v int32, alpha float64) int32 {
	s := Spec(kind)
	if s == nil || !s.takesGraphArg() || !s.Table() {
		return b.fail(kind, "not a gather, segment or degree op of the op table")
	}
	vs, ok := b.vals(kind, g, v)
	if !ok {
		return -1
	}
	if vs[0].Kind != OpGraph {
		return b.fail(kind, "argument 0 must be a graph, got %s", vs[0].Kind)
	}
	e := edgeRows(vs[0])
	xs := vs[1].Shape
	switch s.Class {
	case ClassGather, ClassDegree:
		if !rank2(xs) || xs[0] != N {
			return b.fail(kind, "x must be [N,C], got %s", ShapeString(xs))
		}
		if s.Class == ClassDegree {
			return b.add(Op{Kind: kind, Args: []int32{g, v}, Shape: slices.Clone(xs)})
		}
		return b.add(Op{Kind: kind, Args: []int32{g, v}, Shape: []int64{e, xs[1]}})
	}
	if !rank2(xs) || xs[0] != e {
		return b.fail(kind, "edge values must be [%s,C] (one row per edge of %q), got %s", DimString(e), vs[0].Name, ShapeString(xs))
	}
	switch s.Seg {
	case SegQuantile:
		if !(alpha >= 0 && alpha <= 1) {
			return b.fail(kind, "q = %g outside [0,1]", alpha)
		}
	case SegNth:
		if alpha < 0 || alpha != math.Trunc(alpha) || alpha > 1<<20 {
			return b.fail(kind, "k = %g must be an integer in [0, 2^20]", alpha)
		}
	}
	if s.Seg == SegSoftmax {
		return b.add(Op{Kind: kind, Args: []int32{g, v}, Shape: slices.Clone(xs)})
	}
	return b.add(Op{Kind: kind, Args: []int32{g, v}, Alpha: alpha, Shape: []int64{N, xs[1]}})
}
