package layers

import "math"

// Dense references of the aggregators with parameters: each reads the
// parameter values the test set (by name, row-major as the engine holds
// them) and recomputes one node's output from its neighbour rows in CSR
// order, as PyTorch would.

type param struct {
	v     []float64
	shape []int
}

type params map[string]param

// lin is x·W (+ b) for the parameters "<name>.weight" [in,out] and
// "<name>.bias".
func (w params) lin(name string, x []float64) []float64 {
	wt := w[name+".weight"]
	out := make([]float64, wt.shape[1])
	if b, ok := w[name+".bias"]; ok {
		copy(out, b.v)
	}
	matAdd(out, x, wt)
	return out
}

// matAdd adds x·W to out (W [len(x), len(out)]).
func matAdd(out, x []float64, wt param) {
	for i, xv := range x {
		for j := range out {
			out[j] += xv * wt.v[i*wt.shape[1]+j]
		}
	}
}

func relu(v []float64) []float64 {
	for i := range v {
		v[i] = math.Max(v[i], 0)
	}
	return v
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// lstmRef: gates i, f, g, o from x W_ih + h W_hh + b; the last hidden
// state over the neighbours (zeros without).
func lstmRef(nbrs [][]float64, w params) []float64 {
	whh := w["lstm.weight_hh"]
	hid := whh.shape[0]
	h, c := make([]float64, hid), make([]float64, hid)
	for _, x := range nbrs {
		g := make([]float64, 4*hid)
		copy(g, w["lstm.bias"].v)
		matAdd(g, x, w["lstm.weight_ih"])
		matAdd(g, h, whh)
		for j := range hid {
			i, f, gg, o := sigmoid(g[j]), sigmoid(g[hid+j]), math.Tanh(g[2*hid+j]), sigmoid(g[3*hid+j])
			c[j] = f*c[j] + i*gg
			h[j] = o * math.Tanh(c[j])
		}
	}
	return h
}

// attentionalRef: Σ_j softmax_j(gate(x_j)) ⊙ ReLU(nn(x_j)), per column.
func attentionalRef(nbrs [][]float64, w params) []float64 {
	out := make([]float64, aggrIn)
	if len(nbrs) == 0 {
		return out
	}
	for c := range aggrIn {
		m, gates, vals := math.Inf(-1), make([]float64, len(nbrs)), make([]float64, len(nbrs))
		for j, x := range nbrs {
			gates[j], vals[j] = w.lin("gate", x)[c], relu(w.lin("nn", x))[c]
			m = math.Max(m, gates[j])
		}
		z := 0.0
		for j := range gates {
			z += math.Exp(gates[j] - m)
		}
		for j := range gates {
			out[c] += math.Exp(gates[j]-m) / z * vals[j]
		}
	}
	return out
}

// mlpRef: the first k neighbours, zero-padded and concatenated, through
// Linear, ReLU, Linear.
func mlpRef(k int) func([][]float64, params) []float64 {
	return func(nbrs [][]float64, w params) []float64 {
		x := make([]float64, k*aggrIn)
		for j := 0; j < k && j < len(nbrs); j++ {
			copy(x[j*aggrIn:], nbrs[j])
		}
		return w.lin("mlp.1", relu(w.lin("mlp.0", x)))
	}
}

// deepsetsRef: global(Σ_j ReLU(local(x_j))).
func deepsetsRef(nbrs [][]float64, w params) []float64 {
	s := make([]float64, aggrIn)
	for _, x := range nbrs {
		for c, v := range relu(w.lin("local", x)) {
			s[c] += v
		}
	}
	return w.lin("global", s)
}

// gruCell is torch.nn.GRUCell with the SDK's parameter names (prefix).
func gruCell(w params, prefix string, x, h []float64) []float64 {
	hid := len(h)
	gate := func(in, hh, bias string) []float64 {
		v := make([]float64, hid)
		copy(v, w[prefix+".bias_"+bias].v)
		matAdd(v, x, w[prefix+".weight_"+in])
		if hh != "" {
			matAdd(v, h, w[prefix+".weight_"+hh])
		}
		return v
	}
	r, z := gate("ir", "hr", "r"), gate("iz", "hz", "z")
	hn := make([]float64, hid)
	copy(hn, w[prefix+".bias_hn"].v)
	matAdd(hn, h, w[prefix+".weight_hn"])
	n := gate("in", "", "in")
	out := make([]float64, hid)
	for j := range hid {
		nj := math.Tanh(n[j] + sigmoid(r[j])*hn[j])
		zj := sigmoid(z[j])
		out[j] = (1-zj)*nj + zj*h[j]
	}
	return out
}

// padded returns the first k neighbour rows, zero rows after the last.
func padded(nbrs [][]float64, k int) [][]float64 {
	out := make([][]float64, k)
	for j := range out {
		out[j] = make([]float64, aggrIn)
		if j < len(nbrs) {
			copy(out[j], nbrs[j])
		}
	}
	return out
}

// gruRef: PyG's GRUAggregation with max_num_elements = k: a GRU over the
// k padded rows, its last hidden state.
func gruRef(k int) func([][]float64, params) []float64 {
	return func(nbrs [][]float64, w params) []float64 {
		h := make([]float64, w["gru.bias_r"].shape[0])
		for _, x := range padded(nbrs, k) {
			h = gruCell(w, "gru", x, h)
		}
		return h
	}
}

// lcmRef: PyG's LCMAggregation with max_num_elements = k (project on):
// ReLU(lin(x)) rows, padded, reduced pairwise (GRU(l,r)+GRU(r,l))/2 level
// by level, an odd last element carried up.
func lcmRef(k int) func([][]float64, params) []float64 {
	return func(nbrs [][]float64, w params) []float64 {
		level := padded(nil, k) // zero rows stay zero: padding comes after the projection
		for j := 0; j < k && j < len(nbrs); j++ {
			level[j] = relu(w.lin("lcm.lin", nbrs[j]))
		}
		for len(level) > 1 {
			var next [][]float64
			for i := 0; i+1 < len(level); i += 2 {
				a, b := gruCell(w, "lcm.gru", level[i], level[i+1]), gruCell(w, "lcm.gru", level[i+1], level[i])
				m := make([]float64, len(a))
				for j := range m {
					m[j] = (a[j] + b[j]) / 2
				}
				next = append(next, m)
			}
			if len(level)%2 == 1 {
				next = append(next, level[len(level)-1])
			}
			level = next
		}
		return level[0]
	}
}
