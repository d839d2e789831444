package layers_test

import (
	"context"
	"math"
	"testing"

	"strata/core/backend/cpu"
	"strata/core/config"
	"strata/core/engine"
	"strata/core/graph"
	"strata/core/tensor"
	"strata/core/train"
	"strata/internal/floattol"
	"strata/plugins/layers"
)

// Dense references of the shipped layer modules: each case links a whole
// model of the module (hidden 4, options as given, dropout off) on the
// aggregator suite's 7-node graph in float64, moves every parameter off
// its initial value, and recomputes the model's output with plain loops
// over the neighbour lists, in floattol's running-error arithmetic
// (Checked64): every element must be within the bound that arithmetic
// derives for any correct implementation of the same computation. The
// gcn and mean normalisations' weights are held in float32 by the host,
// which the reference allows for (normWeight, meanAggr).

// vec is a row of Vals; mat is a row-major [rows][cols] matrix of them.
type (
	vec []floattol.Val
	mat []vec
)

var ar = floattol.Checked64

// refModel reads a linked model's parameters ("l<i>.<name>") and the
// graph's neighbour lists (in-neighbours, CSR order).
type refModel struct {
	w    map[string][]float64
	dims map[string][]int
	nbr  [][]int // adj
	self [][]int // adj_self: adj plus i
	// nbrW and selfW are the edge weights of nbr and self (the graph's
	// Values, ones without them; the self loop's is 1).
	nbrW, selfW [][]float64
}

func (m *refModel) row(l int, name string) vec {
	return floattol.Ins(m.w["l"+itoa(l)+"."+name])
}

func (m *refModel) mat(l int, name string) mat {
	k := "l" + itoa(l) + "." + name
	v, d := m.w[k], m.dims[k]
	out := make(mat, d[0])
	for i := range out {
		out[i] = floattol.Ins(v[i*d[1] : (i+1)*d[1]])
	}
	return out
}

func itoa(i int) string { return string(rune('0' + i)) }

func mm(x, w mat) mat {
	out := make(mat, len(x))
	for i, r := range x {
		out[i] = make(vec, len(w[0]))
		for j := range out[i] {
			col := make(vec, len(w))
			for k := range w {
				col[k] = w[k][j]
			}
			out[i][j] = ar.Dot(r, col)
		}
	}
	return out
}

// each applies f to every element of x (and y's, when y is not nil).
func each(x, y mat, f func(a, b floattol.Val) floattol.Val) mat {
	out := make(mat, len(x))
	for i := range x {
		out[i] = make(vec, len(x[i]))
		for j := range x[i] {
			var b floattol.Val
			if y != nil {
				b = y[i][j]
			}
			out[i][j] = f(x[i][j], b)
		}
	}
	return out
}

func add(x, y mat) mat { return each(x, y, ar.Add) }

func scale(x mat, s float64) mat {
	return each(x, nil, func(a, _ floattol.Val) floattol.Val { return ar.Mul(a, floattol.In(s)) })
}

func addRow(x mat, b vec) mat {
	return each(x, nil, func(a, _ floattol.Val) floattol.Val { return a }).apply(func(_, j int, a floattol.Val) floattol.Val { return ar.Add(a, b[j]) })
}

func (x mat) apply(f func(i, j int, a floattol.Val) floattol.Val) mat {
	for i := range x {
		for j := range x[i] {
			x[i][j] = f(i, j, x[i][j])
		}
	}
	return x
}

func reluV(a, _ floattol.Val) floattol.Val { return floattol.Val{V: math.Max(a.V, 0), E: a.E} }

// eluV is e^x - 1 below 0 (Exp then a subtraction, which bounds expm1 too).
func eluV(a, _ floattol.Val) floattol.Val {
	if a.V > 0 {
		return a
	}
	return ar.Sub(ar.Exp(a), floattol.In(1))
}

func leaky(slope float64) func(a, _ floattol.Val) floattol.Val {
	return func(a, _ floattol.Val) floattol.Val {
		if a.V > 0 {
			return a
		}
		return ar.Mul(a, floattol.In(slope))
	}
}

// normWeight is 1/sqrt(d_i·d_j), stored in float32 by the host.
func normWeight(di, dj int) floattol.Val {
	v := 1 / math.Sqrt(float64(di)*float64(dj))
	return floattol.Val{V: v, E: floattol.UFloat32 * v}
}

// aggr is Σ_j w(i, k)·x_j over nbrs[i], j = nbrs[i][k] (w nil: the
// plain sum).
func aggr(x mat, nbrs [][]int, w func(i, k int) floattol.Val) mat {
	out := make(mat, len(x))
	for i := range x {
		out[i] = make(vec, len(x[0]))
		for c := range out[i] {
			terms := make(vec, len(nbrs[i]))
			for k, j := range nbrs[i] {
				terms[k] = x[j][c]
				if w != nil {
					terms[k] = ar.Mul(w(i, k), x[j][c])
				}
			}
			out[i][c] = ar.Sum(terms...)
		}
	}
	return out
}

// gcnAggr is D^-1/2 A D^-1/2 x over nbrs (degrees: the lists' lengths).
func gcnAggr(x mat, nbrs [][]int) mat {
	return aggr(x, nbrs, func(i, k int) floattol.Val { return normWeight(len(nbrs[i]), len(nbrs[nbrs[i][k]])) })
}

// meanAggr is D^-1 A x over nbrs, the weights 1/d held in float32.
func meanAggr(x mat, nbrs [][]int) mat {
	return aggr(x, nbrs, func(i, _ int) floattol.Val {
		v := 1 / float64(len(nbrs[i]))
		return floattol.Val{V: v, E: floattol.UFloat32 * v}
	})
}

// softmax is the softmax of s over the entries of one node's in-edges.
func softmax(s vec) vec {
	m := s[0]
	for _, v := range s {
		m = floattol.Max(m, v)
	}
	e := make(vec, len(s))
	for k, v := range s {
		e[k] = ar.Exp(ar.Sub(v, m))
	}
	z := ar.Sum(e...)
	for k := range e {
		e[k] = ar.Div(e[k], z)
	}
	return e
}

// attend is, for every node i and head h of D columns, Σ_j α_ij v_j over
// nbrs[i] with α = softmax_j(score(i, j, h)); then the heads' mean when
// mean is set.
func attend(v mat, nbrs [][]int, heads int, score func(i, j, h int) floattol.Val, mean bool) mat {
	d := len(v[0]) / heads
	out := make(mat, len(v))
	for i := range v {
		out[i] = make(vec, len(v[0]))
		for h := range heads {
			s := make(vec, len(nbrs[i]))
			for k, j := range nbrs[i] {
				s[k] = score(i, j, h)
			}
			if len(s) == 0 {
				for c := range d {
					out[i][h*d+c] = floattol.In(0)
				}
				continue
			}
			a := softmax(s)
			for c := range d {
				terms := make(vec, len(a))
				for k, j := range nbrs[i] {
					terms[k] = ar.Mul(a[k], v[j][h*d+c])
				}
				out[i][h*d+c] = ar.Sum(terms...)
			}
		}
		if mean && heads > 1 {
			r := make(vec, d)
			for c := range d {
				col := make(vec, heads)
				for h := range heads {
					col[h] = out[i][h*d+c]
				}
				r[c] = ar.Mul(ar.Sum(col...), floattol.In(1/float64(heads)))
			}
			out[i] = r
		}
	}
	return out
}

// refLayer is one layer of a module: layer l of n on input x.
type refLayer func(m *refModel, l, n int, x mat) mat

// layerRefCase is one model of a module with its options and reference.
type layerRefCase struct {
	name, module string
	layers       int
	options      string // TOML lines of [model.options]
	ref          refLayer
}

func TestLayerReference(t *testing.T) {
	for _, c := range layerRefCases() {
		t.Run(c.name, func(t *testing.T) { checkLayerReference(t, c) })
	}
}

// checkLayerReference builds c's model, runs it on the test graph and
// compares with c.ref.
func checkLayerReference(t *testing.T, c layerRefCase) {
	checkLayerReferenceOn(t, c, layers.AggrTestCSR())
}

// checkLayerReferenceOn is checkLayerReference on the graph csr (with
// edge weights as its Values, or none).
func checkLayerReferenceOn(t *testing.T, c layerRefCase, csr *graph.CSR) {
	text := "[data]\ndataset = \"embedded:cora\"\n[model]\nname = \"" + c.module + "\"\nlayers = " + itoa(c.layers) +
		"\nhidden = 4\ndropout = 0.0\ninput_dropout = 0.0\n[model.options]\n" + c.options + "[output]\nprogress = \"off\"\n"
	cfg, err := config.Parse(t.TempDir()+"/ref.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	model, err := train.BuildModel(context.Background(), cfg, testHost, layers.AggrIn, layers.AggrIn)
	if err != nil {
		t.Fatal(err)
	}
	be := cpu.New(cpu.Options{Threads: 2})
	p := layers.ProgramOn(t, be, tensor.Host, model.Graph, csr)
	m := &refModel{w: map[string][]float64{}, dims: map[string][]int{}}
	for k, prm := range p.Params() {
		v := layers.Download(t, be, prm.Value)
		for i := range v { // off the initial values: zero biases, ones
			v[i] += 0.3 * math.Sin(float64(i*7+k)+1)
		}
		if err := be.Upload(prm.Value, v); err != nil {
			t.Fatal(err)
		}
		m.w[prm.Name], m.dims[prm.Name] = v, prm.Value.Shape()
	}
	if err := p.Forward(context.Background(), engine.Mode{}); err != nil {
		t.Fatal(err)
	}
	got := layers.Download(t, be, p.Output())
	m.nbr, m.self = neighbours(csr)
	m.nbrW, m.selfW = edgeWeights(csr)
	in := layers.AggrInput()
	x := make(mat, layers.AggrNodes)
	for i := range x {
		x[i] = floattol.Ins(in[i*layers.AggrIn : (i+1)*layers.AggrIn])
	}
	for l := range c.layers {
		x = c.ref(m, l, c.layers, x)
	}
	var want vec
	for _, r := range x {
		want = append(want, r...)
	}
	bound := floattol.Errors(want)
	if i, q := floattol.Exceeds(got, floattol.Values(want), bound); i >= 0 {
		t.Fatalf("output element %d (node %d): got %.15g, reference %.15g: off by %.3g times the bound %.3g",
			i, i/len(x[0]), got[i], want[i].V, q, bound[i])
	}
}

// neighbours returns csr's in-neighbour lists, and the same with the node
// itself added (adj_self).
func neighbours(csr *graph.CSR) (adj, self [][]int) {
	for i := range csr.NumRows {
		var r []int
		for k := csr.Indptr[i]; k < csr.Indptr[i+1]; k++ {
			r = append(r, int(csr.Col(k)))
		}
		adj = append(adj, r)
		self = append(self, append(append([]int(nil), r...), i))
	}
	return adj, self
}

// edgeWeights returns the weights of csr's in-neighbour lists (ones
// when it has no Values), and the same with the self loop's 1 added.
func edgeWeights(csr *graph.CSR) (adj, self [][]float64) {
	for i := range csr.NumRows {
		var r []float64
		for k := csr.Indptr[i]; k < csr.Indptr[i+1]; k++ {
			w := 1.0
			if csr.Values != nil {
				w = float64(csr.Values[k])
			}
			r = append(r, w)
		}
		adj = append(adj, r)
		self = append(self, append(append([]float64(nil), r...), 1))
	}
	return adj, self
}

// hiddenAct is act on every layer but the last.
func hiddenAct(x mat, l, n int, act func(a, b floattol.Val) floattol.Val) mat {
	if l == n-1 {
		return x
	}
	return each(x, nil, act)
}
