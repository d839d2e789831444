//go:build wasip1

package sdk

// Linear is x·W (+ b) with W [in,out] glorot-initialised ("<name>.weight")
// and b [out] zero-initialised ("<name>.bias"), as torch.nn.Linear after
// xavier_uniform_ and zeros_.
func Linear(name string, x Value, in, out int64, bias bool) Value {
	y := MatMul(x, Param(name+".weight", []int64{in, out}, Glorot))
	if bias {
		y = Bias(y, Param(name+".bias", []int64{out}, Zeros))
	}
	return y
}

// NarrowAggregate computes Aggregate(g, x, r)·W on the narrow side, as DGL
// does: when W [in,out] shrinks the features (in > out) it multiplies first
// and aggregates the narrower rows, Aggregate(g, x·W, r); otherwise it
// aggregates first. Both orders are equal for the linear reducers (sum,
// mean, gcn); Max always aggregates first.
func NarrowAggregate(g, x, w Value, r Reducer) Value {
	s := Shape(w)
	if len(s) == 2 && s[0] > s[1] && r != Max {
		return Aggregate(g, MatMul(x, w), r)
	}
	return MatMul(Aggregate(g, x, r), w)
}

// LSTMAggregation is DGL's and PyG's LSTM neighbour aggregator:
// LSTMAggregate(g, x, ...) with input size in and hidden size hidden, the
// weights "<name>.weight_ih" [in,4·hidden] and "<name>.weight_hh"
// [hidden,4·hidden] (PyTorch's, transposed) and one bias "<name>.bias"
// [4·hidden] (b_ih + b_hh). The weights are U(±1/sqrt(rows)), which is
// PyTorch's U(±1/sqrt(hidden)) for weight_hh, and for weight_ih when
// in = hidden (DGL's choice); the bias starts at zero (a vector's uniform
// init has bound 1 here, PyTorch draws U(±1/sqrt(hidden))).
func LSTMAggregation(name string, g, x Value, in, hidden int64) Value {
	wih := Param(name+".weight_ih", []int64{in, 4 * hidden}, Uniform)
	whh := Param(name+".weight_hh", []int64{hidden, 4 * hidden}, Uniform)
	b := Param(name+".bias", []int64{4 * hidden}, Zeros)
	return LSTMAggregate(g, x, wih, whh, b)
}

// BatchNorm1d normalises x's cols columns with learnable "<name>.weight"
// (ones) and "<name>.bias" (zeros) and eps 1e-5, as torch.nn.BatchNorm1d.
func BatchNorm1d(name string, x Value, cols int64) Value {
	gamma := Param(name+".weight", []int64{cols}, Ones)
	beta := Param(name+".bias", []int64{cols}, Zeros)
	return BatchNorm(x, gamma, beta, 1e-5)
}

// LayerNorm1d normalises every row of x (cols columns) with eps 1e-5, as
// torch.nn.LayerNorm(cols): with affine, learnable "<name>.weight" (ones)
// and "<name>.bias" (zeros); without (elementwise_affine=False), the same
// values as buffers, which the optimizer never changes.
func LayerNorm1d(name string, x Value, cols int64, affine bool) Value {
	declare := Param
	if !affine {
		declare = Buffer
	}
	gamma := declare(name+".weight", []int64{cols}, Ones)
	beta := declare(name+".bias", []int64{cols}, Zeros)
	return LayerNorm(x, gamma, beta, 1e-5)
}

// Post is what a model does between layers: unless this is the last layer
// (option last), batch-normalise when the option batchnorm is set, then
// apply act. On the last layer it returns h unchanged.
func Post(h Value, act func(Value) Value) Value {
	bn := CfgBool("batchnorm", false) // read on every layer, so the host sees the key
	if Last() {
		return h
	}
	if bn {
		h = BatchNorm1d("bn", h, Cols(h))
	}
	return act(h)
}

// GRUCell is torch.nn.GRUCell's weights: "<name>.weight_ir", "weight_iz",
// "weight_in" [in,hidden], "weight_hr", "weight_hz", "weight_hn"
// [hidden,hidden] (PyTorch's, transposed and split by gate, U(±1/sqrt(rows)))
// and the biases "<name>.bias_r", "bias_z" (b_i + b_h of the gate),
// "bias_in" and "bias_hn" [hidden] (zeros). Step applies it.
type GRUCell struct {
	wir, wiz, win, whr, whz, whn Value
	br, bz, bin, bhn             Value
}

// NewGRUCell declares a GRU cell's parameters.
func NewGRUCell(name string, in, hidden int64) *GRUCell {
	w := func(s string, rows int64) Value { return Param(name+".weight_"+s, []int64{rows, hidden}, Uniform) }
	b := func(s string) Value { return Param(name+".bias_"+s, []int64{hidden}, Zeros) }
	return &GRUCell{
		wir: w("ir", in), wiz: w("iz", in), win: w("in", in),
		whr: w("hr", hidden), whz: w("hz", hidden), whn: w("hn", hidden),
		br: b("r"), bz: b("z"), bin: b("in"), bhn: b("hn"),
	}
}

// Step is one GRU step from input x [R,in] and hidden state h
// [R,hidden], as PyTorch: r = σ(x W_ir + h W_hr + b_r), z = σ(x W_iz +
// h W_hz + b_z), n = tanh(x W_in + b_in + r ⊙ (h W_hn + b_hn)), h' =
// n + z ⊙ (h - n). A negative h (NoState) is the zero state.
func (c *GRUCell) Step(x, h Value) Value {
	if h == NoState {
		r := Sigmoid(Bias(MatMul(x, c.wir), c.br))
		z := Sigmoid(Bias(MatMul(x, c.wiz), c.bz))
		n := Tanh(Add(Bias(MatMul(x, c.win), c.bin), Mul(r, c.bhn)))
		return Sub(n, Mul(z, n))
	}
	r := Sigmoid(Bias(Add(MatMul(x, c.wir), MatMul(h, c.whr)), c.br))
	z := Sigmoid(Bias(Add(MatMul(x, c.wiz), MatMul(h, c.whz)), c.bz))
	n := Tanh(Add(Bias(MatMul(x, c.win), c.bin), Mul(r, Bias(MatMul(h, c.whn), c.bhn))))
	return Add(n, Mul(z, Sub(h, n)))
}

// NoState is the zero hidden state of GRUCell.Step.
const NoState Value = -1 << 30
