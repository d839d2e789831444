//go:build wasip1

package sdk

import "strata/models/sdk/abi"

// Value is a handle to a recorded value (tensor or graph). Negative values
// are poison.
type Value int32

// Ok reports whether v is a real value rather than poison.
func (v Value) Ok() bool { return v >= 0 }

// Init names a parameter initialiser.
type Init string

// Initialisers (fans as PyTorch computes them).
const (
	Zeros   Init = "zeros"
	Ones    Init = "ones"
	Glorot  Init = "glorot"  // xavier_uniform_: U(±sqrt(6/(fan_in+fan_out)))
	Normal  Init = "normal"  // N(0, 2/(fan_in+fan_out))
	Uniform Init = "uniform" // U(±1/sqrt(fan_in))
)

// Reducer names an aggregation.
type Reducer string

// Reducers for Aggregate.
const (
	Sum  Reducer = "sum"
	Mean Reducer = "mean" // D^-1 A
	Max  Reducer = "max"
	GCN  Reducer = "gcn" // D^-1/2 A D^-1/2 (use with AdjSelf for Kipf & Welling)
)

// Graphs the host provides.
const (
	Adj     = "adj"      // the dataset's edges
	AdjSelf = "adj_self" // with one self loop per node
)

var layer func() Value

// Register sets the function strata_layer_spec runs. Call it from init.
func Register(f func() Value) { layer = f }

//go:wasmexport strata_layer_spec
func layerSpec() int32 {
	if layer == nil {
		Fail("the module registered no layer: call sdk.Register(layer) in func init")
		return 1
	}
	Output(layer())
	return 0
}

// Cfg returns the integer option key (in_dim, out_dim, layer, layers, last,
// heads, ...), or def when it is not set.
func Cfg(key string, def int64) int64 { return abi.CfgI64(key, def) }

// CfgFloat returns the float option key (dropout, ...), or def.
func CfgFloat(key string, def float64) float64 { return abi.CfgF64(key, def) }

// CfgBool returns whether the integer option key is non-zero, or def.
func CfgBool(key string, def bool) bool {
	d := int64(0)
	if def {
		d = 1
	}
	return abi.CfgI64(key, d) != 0
}

// Dims returns the layer's in_dim and out_dim options.
func Dims() (in, out int64) { return Cfg("in_dim", 0), Cfg("out_dim", 0) }

// Last reports whether this is the model's last layer (option last).
func Last() bool { return CfgBool("last", false) }

// Input declares the layer input x: [N, cols].
func Input(cols int64) Value { return Value(abi.Input("x", cols)) }

// Graph requests an adjacency (Adj or AdjSelf).
func Graph(name string) Value { return Value(abi.Graph(name)) }

// Param declares a learnable weight with a concrete shape.
func Param(name string, shape []int64, init Init) Value {
	return Value(abi.Param(name, shape, string(init)))
}

// Buffer declares a non-learnable parameter (torch's register_buffer):
// held and checkpointed with the model, read like a Param, but never given
// a gradient or updated by the optimizer (nor weight decay, nor clipping).
func Buffer(name string, shape []int64, init Init) Value {
	return Value(abi.Buffer(name, shape, string(init)))
}

func unary(kind string, x Value, alpha float64) Value {
	return Value(abi.Unary(kind, int32(x), alpha))
}

// table records a gather, segment or degree op of the op table.
func table(kind string, g, v Value, alpha float64) Value {
	return Value(abi.Table(kind, int32(g), int32(v), alpha))
}

// LeakyReLU is x for x > 0, slope*x otherwise.
func LeakyReLU(x Value, slope float64) Value { return unary("leaky_relu", x, slope) }

// ELU is x for x > 0, exp(x)-1 otherwise (alpha 1).
func ELU(x Value) Value { return unary("elu", x, 1) }

// Dropout zeroes elements with probability p in training and scales the rest
// by 1/(1-p). p == 0 records nothing.
func Dropout(x Value, p float64) Value {
	if p == 0 {
		return x
	}
	return unary("dropout", x, p)
}

// Output marks h as the layer's result. Layers given to Register return
// their result instead; Output is for modules that export
// strata_layer_spec themselves.
func Output(h Value) Value { return Value(abi.Output(int32(h))) }

// Shape returns the inferred shape of v (nil for poison). Symbolic dims are
// negative: -1 is N.
func Shape(v Value) []int64 { return abi.Shape(int32(v)) }

// Cols returns the column count of a matrix value, or 0 for poison.
func Cols(v Value) int64 {
	if s := Shape(v); len(s) == 2 {
		return s[1]
	}
	return 0
}

// Fail makes the layer spec fail with msg (unless an op failed earlier).
func Fail(msg string) { abi.Fail(msg) }

// Log sends a line to the host's log for this spec.
func Log(msg string) { abi.Log(msg) }
