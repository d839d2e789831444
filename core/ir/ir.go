// Package ir is the layer intermediate representation: a small graph of
// primitive ops recorded by a layer module and then checked, differentiated
// and executed natively by the host. The guest never runs during training.
package ir

import (
	"fmt"
	"math"
	"math/bits"
	"strings"
)

// Symbolic dimensions. Concrete dimensions are positive.
const (
	N        int64 = -1 // number of nodes
	EAdj     int64 = -2 // edges of the "adj" graph
	EAdjSelf int64 = -3 // edges of the "adj_self" graph
)

// Graph names a layer may request with OpGraph.
var graphNames = map[string]int64{"adj": EAdj, "adj_self": EAdjSelf}

// GraphNames lists the adjacency variants the host provides.
func GraphNames() []string { return []string{"adj", "adj_self"} }

// EdgeDim returns the symbolic edge count of a named graph.
func EdgeDim(graph string) (int64, bool) { d, ok := graphNames[graph]; return d, ok }

// Kind names a primitive op.
type Kind string

// Primitive ops. Shapes use R rows, C columns, H heads.
const (
	OpInput       Kind = "input"        // layer input "x": [N, in_dim]
	OpGraph       Kind = "graph"        // adjacency: "adj" or "adj_self"
	OpParam       Kind = "param"        // weight with concrete shape and init (learnable, or a Buffer)
	OpAggregate   Kind = "aggregate"    // (g, x[N,C]) reducer sum|mean|max|gcn -> [N,C]
	OpSpMMEdge    Kind = "spmm_edge"    // (g, w[E,H], x[N,H*C]) -> [N,H*C]
	OpMatMul      Kind = "matmul"       // (a[R,K], b[K,M]) -> [R,M]
	OpBias        Kind = "bias"         // (x[R,C], b[C]) -> [R,C]
	OpAdd         Kind = "add"          // (a, b) b same shape, [C] or [1]
	OpSub         Kind = "sub"          // (a, b)
	OpMul         Kind = "mul"          // (a, b)
	OpScale       Kind = "scale"        // (x) * Alpha
	OpReLU        Kind = "relu"         // (x)
	OpLeakyReLU   Kind = "leaky_relu"   // (x), slope Alpha
	OpELU         Kind = "elu"          // (x), scale Alpha
	OpSigmoid     Kind = "sigmoid"      // (x)
	OpTanh        Kind = "tanh"         // (x)
	OpConcat      Kind = "concat"       // (a[R,C1], b[R,C2]) -> [R,C1+C2]
	OpDropout     Kind = "dropout"      // (x), drop probability Alpha, training only
	OpBatchNorm   Kind = "batchnorm"    // (x[R,C], gamma[C], beta[C]) eps Alpha
	OpLayerNorm   Kind = "layernorm"    // (x[R,C], gamma[C], beta[C]) eps Alpha, per row
	OpHeadDot     Kind = "head_dot"     // (x[R,H*C], a[H,C]) -> [R,H]
	OpUAddV       Kind = "u_add_v"      // (g, u[N,H], v[N,H]) -> [E,H]
	OpUDotV       Kind = "u_dot_v"      // (g, x[N,H*C], y[N,H*C]) -> [E,H], <x[dst], y[src]>
	OpEdgeSoftmax Kind = "edge_softmax" // (g, s[E,H]) -> [E,H] over each destination
	OpHeadMean    Kind = "head_mean"    // (x[R,H*C]) Heads -> [R,C]
	// (g, x[N,C], w_ih[C,4H], w_hh[H,4H], b[4H]) -> [N,H]: an LSTM over
	// each destination's sources in CSR order; the last hidden state.
	OpLSTMAggregate Kind = "lstm_aggregate"
)

// Reducers accepted by OpAggregate.
var Reducers = []string{"sum", "mean", "max", "gcn"}

// Inits accepted by OpParam.
var Inits = []string{"zeros", "ones", "glorot", "normal", "uniform"}

// Op is one recorded operation. Its value is referred to by its index.
type Op struct {
	Kind    Kind
	Args    []int32
	Shape   []int64 // inferred output shape; graphs have shape [N,N]
	Name    string  // input, graph and param name
	Init    string  // param init
	Reducer string  // aggregate reducer
	Alpha   float64 // slope, scale, dropout p or eps
	Heads   int64   // head_mean head count
	Layer   int32   // the model layer the op belongs to (set by Link)
	// Buffer marks a param op as non-learnable (Builder.Buffer): no
	// gradient, no optimizer update, checkpointed as model state.
	Buffer bool
	// Stream names a dropout's random stream in the model: its layer and
	// its index in the layer's own graph, set by Link (0 in a graph that
	// was never linked). The engine draws masks from it, never from the
	// op's position in a program, so a layer split off the model
	// (SplitLayers) draws the masks the whole model draws.
	Stream uint64
}

// Graph is a checked op list. Outputs name the values the layer returns.
type Graph struct {
	Ops     []Op
	Outputs []int32
}

// String renders the graph one op per line, as in error reports.
func (g *Graph) String() string {
	var b strings.Builder
	for i, op := range g.Ops {
		fmt.Fprintf(&b, "%%%d = %s", i, op.Kind)
		if op.Name != "" {
			fmt.Fprintf(&b, " %q", op.Name)
		}
		if len(op.Args) > 0 {
			args := make([]string, len(op.Args))
			for j, a := range op.Args {
				args[j] = fmt.Sprintf("%%%d", a)
			}
			fmt.Fprintf(&b, "(%s)", strings.Join(args, ", "))
		}
		fmt.Fprintf(&b, " %s\n", ShapeString(op.Shape))
	}
	fmt.Fprintf(&b, "outputs %v\n", g.Outputs)
	return b.String()
}

// ShapeString renders a shape with symbolic dims by name.
func ShapeString(s []int64) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = DimString(d)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// DimString renders one dimension.
func DimString(d int64) string {
	switch d {
	case N:
		return "N"
	case EAdj:
		return "E_adj"
	case EAdjSelf:
		return "E_adj_self"
	}
	return fmt.Sprint(d)
}

// Params returns the indices of the learnable param ops (not buffers), in
// order.
func (g *Graph) Params() []int32 {
	var ps []int32
	for i, op := range g.Ops {
		if op.Kind == OpParam && !op.Buffer {
			ps = append(ps, int32(i))
		}
	}
	return ps
}

// NumParams returns the number of learnable scalars, saturating at
// math.MaxInt64.
func (g *Graph) NumParams() int64 {
	var n int64
	for _, i := range g.Params() {
		k := Numel(g.Ops[i].Shape)
		if k < 0 || n > math.MaxInt64-k {
			return math.MaxInt64
		}
		n += k
	}
	return n
}

// Numel returns the element count of a concrete shape, saturating at
// math.MaxInt64 where the product overflows (so an absurd shape can never
// wrap around to a small or zero count).
func Numel(s []int64) int64 {
	n := int64(1)
	for _, d := range s {
		if d == 0 {
			return 0
		}
		hi, lo := bits.Mul64(absU(n), absU(d))
		if hi != 0 || lo > math.MaxInt64 {
			if (n < 0) != (d < 0) {
				return math.MinInt64
			}
			return math.MaxInt64
		}
		n *= d
	}
	return n
}

func absU(x int64) uint64 {
	if x < 0 {
		return uint64(-x)
	}
	return uint64(x)
}
