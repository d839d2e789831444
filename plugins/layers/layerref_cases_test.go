package layers_test

import (
	"math"

	"strata/internal/floattol"
)

// layerRefCases are the modules' dense references (see layerref_test.go),
// each in the order of the module's own recorded ops.
func layerRefCases() []layerRefCase {
	return []layerRefCase{
		{"gatv2", "gatv2", 2, "heads = 2\nout_heads = 2\nnegative_slope = 0.1\n", gatv2Ref(false)},
		{"gatv2-shared", "gatv2", 2, "heads = 2\nshare_weights = true\n", gatv2Ref(true)},
		{"transformer", "transformer", 2, "heads = 2\nout_heads = 2\n", transformerRef},
		{"sgc", "sgc", 2, "k = 3\n", sgcRef(3)},
		{"appnp", "appnp", 2, "k = 3\nalpha = 0.2\n", appnpRef(3, 0.2)},
		{"cheb", "cheb", 2, "k = 3\n", chebRef(3)},
		{"cheb-k1", "cheb", 2, "k = 1\n", chebRef(1)},
		{"graphconv-sum", "graphconv", 2, "", graphconvRef(false)},
		{"graphconv-mean", "graphconv", 2, "aggr = \"mean\"\n", graphconvRef(true)},
		{"gcnii", "gcnii", 3, "alpha = 0.2\nlambda = 0.7\n", gcniiRef(0.2, 0.7)},
	}
}

// narrowFirst is the modules' rule for a linear map around an
// aggregation: multiply first when W narrows the features.
func narrowFirst(x mat, w mat, agg func(mat) mat) mat {
	if len(w) > len(w[0]) {
		return agg(mm(x, w))
	}
	return mm(agg(x), w)
}

func gatv2Ref(share bool) refLayer {
	return func(m *refModel, l, n int, x mat) mat {
		lin := mm(x, m.mat(l, "lin_l.weight"))
		r := lin
		if !share {
			r = mm(x, m.mat(l, "lin_r.weight"))
		}
		att := m.mat(l, "att")
		heads, d := len(att), len(att[0])
		score := func(i, j, h int) floattol.Val {
			e := make(vec, d)
			for c := range d {
				e[c] = leaky(optSlope(share))(ar.Add(lin[j][h*d+c], r[i][h*d+c]), floattol.Val{})
			}
			return ar.Dot(att[h], e)
		}
		out := addRow(attend(lin, m.self, heads, score, l == n-1), m.row(l, "bias"))
		return hiddenAct(out, l, n, eluV)
	}
}

// optSlope is the cases' negative_slope: 0.1 set, 0.2 by default.
func optSlope(share bool) float64 {
	if share {
		return 0.2
	}
	return 0.1
}

func linear(m *refModel, l int, name string, x mat) mat {
	return addRow(mm(x, m.mat(l, name+".weight")), m.row(l, name+".bias"))
}

func transformerRef(m *refModel, l, n int, x mat) mat {
	q, k, v := linear(m, l, "lin_query", x), linear(m, l, "lin_key", x), linear(m, l, "lin_value", x)
	heads := 2
	d := len(q[0]) / heads
	score := func(i, j, h int) floattol.Val {
		return ar.Mul(ar.Dot(q[i][h*d:(h+1)*d], k[j][h*d:(h+1)*d]), floattol.In(1/math.Sqrt(float64(d))))
	}
	out := add(attend(v, m.nbr, heads, score, l == n-1), linear(m, l, "lin_skip", x))
	return hiddenAct(out, l, n, eluV)
}

func sgcRef(k int) refLayer {
	return func(m *refModel, l, n int, x mat) mat {
		prop := func(v mat) mat {
			for range k {
				v = gcnAggr(v, m.self)
			}
			return v
		}
		out := addRow(narrowFirst(x, m.mat(l, "lin.weight"), prop), m.row(l, "lin.bias"))
		return hiddenAct(out, l, n, reluV)
	}
}

func appnpRef(k int, alpha float64) refLayer {
	return func(m *refModel, l, n int, x mat) mat {
		h := linear(m, l, "lin", x)
		if l < n-1 {
			return each(h, nil, reluV)
		}
		z := h
		for range k {
			z = add(scale(gcnAggr(z, m.self), 1-alpha), scale(h, alpha))
		}
		return z
	}
}

func chebRef(k int) refLayer {
	return func(m *refModel, l, n int, x mat) mat {
		lap := func(v mat) mat { return scale(gcnAggr(v, m.nbr), -1) }
		w := func(t int) mat { return m.mat(l, "lins."+itoa(t)+".weight") }
		prev, cur := mat(nil), x
		h := mm(x, w(0))
		for t := 1; t < k; t++ {
			next := lap(cur)
			if t > 1 {
				next = each(scale(next, 2), prev, ar.Sub)
			}
			prev, cur = cur, next
			h = add(h, mm(cur, w(t)))
		}
		return hiddenAct(addRow(h, m.row(l, "bias")), l, n, reluV)
	}
}

func graphconvRef(mean bool) refLayer {
	return func(m *refModel, l, n int, x mat) mat {
		agg := func(v mat) mat { return aggr(v, m.nbr, nil) }
		if mean {
			agg = func(v mat) mat { return meanAggr(v, m.nbr) }
		}
		root := mm(x, m.mat(l, "lin_root.weight"))
		h := addRow(add(root, narrowFirst(x, m.mat(l, "lin_rel.weight"), agg)), m.row(l, "lin_rel.bias"))
		return hiddenAct(h, l, n, reluV)
	}
}

func gcniiRef(alpha, lambda float64) refLayer {
	return func(m *refModel, l, n int, x mat) mat {
		var h, h0 mat
		if l == 0 {
			h0 = each(linear(m, l, "lin_in", x), nil, reluV)
			h = h0
		} else {
			for _, r := range x {
				c := len(r) / 2
				h, h0 = append(h, r[:c]), append(h0, r[c:])
			}
		}
		beta := math.Log(lambda/float64(l+1) + 1)
		s := add(scale(gcnAggr(h, m.self), 1-alpha), scale(h0, alpha))
		out := each(add(scale(s, 1-beta), scale(mm(s, m.mat(l, "weight")), beta)), nil, reluV)
		if l == n-1 {
			return linear(m, l, "lin_out", out)
		}
		for i := range out {
			out[i] = append(append(vec(nil), out[i]...), h0[i]...)
		}
		return out
	}
}
