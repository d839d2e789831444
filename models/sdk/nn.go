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
