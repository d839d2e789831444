package layers

import (
	"context"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"strata/core/backend"
	"strata/core/backend/cpu"
	"strata/core/backend/sim"
	"strata/core/engine"
	"strata/core/graph"
	"strata/core/ir"
	"strata/core/modhost"
	"strata/core/tensor"
	"strata/core/topology"
	"strata/core/train"
	"strata/internal/floattol"
	"strata/plugins/wasm"
)

// The shipped aggregators (aggregator.*), each recorded alone by the wasm
// host, run on a small graph (an isolated node, degrees 1 to 4): their
// forward against a dense Go reference of the PyG aggregation, their
// backward against central finite differences in float64, and the sim
// backend against cpu.

const (
	aggrNodes = 7
	aggrIn    = 3
)

func aggrTestCSR() *graph.CSR {
	edges := [][2]int64{{0, 1}, {1, 0}, {1, 2}, {2, 1}, {2, 3}, {3, 2}, {0, 3}, {3, 0}, {4, 0}, {0, 4}, {4, 2}, {2, 4}, {1, 3}, {5, 3}, {3, 5}}
	return graph.Symmetrize(graph.FromEdges(aggrNodes, edges)) // node 6 has no neighbours
}

// aggrCase is one aggregator with its options and, when it has one, its
// dense reference: a row of the output from the node's neighbour rows (in
// CSR order) and its degree.
type aggrCase struct {
	name string
	cfg  map[string]string
	num  map[string]float64
	ref  func(nbrs [][]float64) []float64
	// pref is the reference of an aggregator with parameters: it also
	// reads their values (by name, row-major).
	pref func(nbrs [][]float64, w params) []float64
}

func colwise(f func(v []float64) float64) func([][]float64) []float64 {
	return func(nbrs [][]float64) []float64 {
		out := make([]float64, aggrIn)
		if len(nbrs) == 0 {
			return out
		}
		for c := range aggrIn {
			v := make([]float64, len(nbrs))
			for j, r := range nbrs {
				v[j] = r[c]
			}
			out[c] = f(v)
		}
		return out
	}
}

func sum(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}

func mean(v []float64) float64 { return sum(v) / float64(len(v)) }

func variance(v []float64) float64 {
	m, m2 := mean(v), 0.0
	for _, x := range v {
		m2 += x * x
	}
	return m2/float64(len(v)) - m*m
}

func lowerQuantile(q float64) func([]float64) float64 {
	return func(v []float64) float64 {
		s := slices.Clone(v)
		sort.Float64s(s)
		return s[int(math.Floor(q*float64(len(s)-1)))]
	}
}

func aggrCases() []aggrCase {
	return []aggrCase{
		{name: "sum", ref: colwise(sum)},
		{name: "mean", ref: colwise(mean)},
		{name: "max", ref: colwise(slices.Max[[]float64])},
		{name: "min", ref: colwise(slices.Min[[]float64])},
		{name: "mul", ref: func(n [][]float64) []float64 {
			out := colwise(func(v []float64) float64 {
				p := 1.0
				for _, x := range v {
					p *= x
				}
				return p
			})(n)
			if len(n) == 0 {
				for c := range out {
					out[c] = 1
				}
			}
			return out
		}},
		{name: "var", ref: colwise(variance)},
		{name: "logsumexp", ref: colwise(func(v []float64) float64 { // ln Σ exp, 0 without neighbours
			s := 0.0
			for _, x := range v {
				s += math.Exp(x)
			}
			if len(v) == 0 {
				return 0
			}
			return math.Log(s)
		})},
		{name: "std", ref: colwise(func(v []float64) float64 {
			if s := variance(v); s > 1e-5 {
				return math.Sqrt(s)
			}
			return 0
		})},
		{name: "softmax", num: map[string]float64{"t": 0.7}, ref: colwise(func(v []float64) float64 {
			z, s := 0.0, 0.0
			for _, x := range v {
				z += math.Exp(0.7 * x)
			}
			for _, x := range v {
				s += math.Exp(0.7*x) / z * x
			}
			return s
		})},
		{name: "powermean", num: map[string]float64{"p": 2}, ref: colwise(func(v []float64) float64 {
			s := 0.0
			for _, x := range v {
				s += math.Pow(min(max(x, 1e-6), 100), 2)
			}
			return math.Sqrt(min(max(s/float64(len(v)), 1e-6), 100))
		})},
		{name: "median", ref: colwise(lowerQuantile(0.5))},
		{name: "quantile", num: map[string]float64{"q": 0.8}, ref: colwise(lowerQuantile(0.8))},
		{name: "variance-preserving", ref: func(n [][]float64) []float64 {
			out := colwise(sum)(n)
			for c := range out {
				out[c] /= math.Sqrt(math.Max(float64(len(n)), 1))
			}
			return out
		}},
		{name: "multi", cfg: map[string]string{"aggrs": "mean,max"}, ref: func(n [][]float64) []float64 {
			return append(colwise(mean)(n), colwise(slices.Max[[]float64])(n)...)
		}},
		{name: "degree-scaler", cfg: map[string]string{"scaled": "sum", "scalers": "identity,amplification,attenuation,linear,inverse_linear"},
			num: map[string]float64{"delta": 1.3, "delta_lin": 2.5}, ref: func(n [][]float64) []float64 {
				s, d := colwise(sum)(n), float64(len(n))
				var out []float64
				for _, f := range []float64{1, math.Log(d+1) / 1.3, 1.3 / math.Log(math.Max(d, 1)+1), d / 2.5, 2.5 / math.Max(d, 1)} {
					for _, v := range s {
						out = append(out, v*f)
					}
				}
				return out
			}},
		{name: "lstm", pref: lstmRef},
		{name: "attentional", pref: attentionalRef},
		{name: "mlp", num: map[string]float64{"max_num": 3}, pref: mlpRef(3)},
		{name: "deepsets", pref: deepsetsRef},
		{name: "gru", num: map[string]float64{"max_num": 4, "gru_hidden": 2}, pref: gruRef(4)},
		{name: "lcm", num: map[string]float64{"max_num": 5}, pref: lcmRef(5)},
	}
}

func aggrRuntime(t *testing.T) *wasm.Runtime {
	t.Helper()
	rt, err := wasm.NewRuntime(context.Background(), testHost.Options)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	return rt
}

func (c aggrCase) config() modhost.LayerConfig {
	var cfg modhost.LayerConfig
	for k, v := range c.cfg {
		cfg.SetString(k, v)
	}
	for k, v := range c.num {
		cfg.SetFloat(k, v)
	}
	return cfg
}

// aggrProgram compiles an aggregator's graph on be with a random input.
func aggrProgram(t *testing.T, be backend.Backend, tier tensor.Tier, g *ir.Graph) *engine.Program {
	t.Helper()
	return programOn(t, be, tier, g, aggrTestCSR())
}

// programOn compiles a graph on be over csr ("adj", and "adj_self" with
// one self loop per node, bound as training binds them) with aggrInput as
// its input.
func programOn(t *testing.T, be backend.Backend, tier tensor.Tier, g *ir.Graph, csr *graph.CSR) *engine.Program {
	t.Helper()
	p, _ := bindProgram(t, be, tier, g, &train.Adjacencies{Adj: csr, AdjSelf: graph.AddSelfLoops(csr)}, progInput{aggrIn, aggrInput(), false}, 3)
	return p
}

// progInput is a program's input: its width, its values (row-major) and
// whether the program computes its gradient.
type progInput struct {
	cols int
	x    []float64
	grad bool
}

// bindProgram compiles g on be over the adjacencies a with the input in,
// its parameters initialised from seed; it returns the program and its
// input tensor.
func bindProgram(t *testing.T, be backend.Backend, tier tensor.Tier, g *ir.Graph, a *train.Adjacencies, in progInput, seed uint64) (*engine.Program, *tensor.Tensor) {
	t.Helper()
	graphs, err := train.BindGraphs(g, a, be, tensor.Float64, tier)
	if err != nil {
		t.Fatal(err)
	}
	x, err := be.Alloc(tensor.Float64, []int{len(in.x) / in.cols, in.cols}, tier)
	if err != nil {
		t.Fatal(err)
	}
	if err := be.Upload(x, in.x); err != nil {
		t.Fatal(err)
	}
	p, err := engine.Compile(g, engine.Env{Backend: be, DType: tensor.Float64, Tier: tier, Graphs: graphs, Input: x, InputGrad: in.grad}, seed)
	if err != nil {
		t.Fatal(err)
	}
	return p, x
}

// aggrInput is positive and spread (distinct values: no ties for the
// selections, away from the clamps).
func aggrInput() []float64 {
	x := make([]float64, aggrNodes*aggrIn)
	for i := range x {
		x[i] = 0.3 + 1.7*math.Mod(float64(i)*0.618034, 1)
	}
	return x
}

// aggrGamma is the float64 rounding bound of an aggregator program of
// ops ops on the test graph: every value passes through at most the
// program's ops, each summing at most every node or feature.
func aggrGamma(ops int) float64 {
	return floattol.Gamma(ops*(aggrNodes+aggrIn+2), floattol.UFloat64)
}

func download(t *testing.T, be backend.Backend, tt *tensor.Tensor) []float64 {
	t.Helper()
	v := make([]float64, tt.Numel())
	if err := be.Download(tt, v); err != nil {
		t.Fatal(err)
	}
	return v
}

// aggrPrefix matches the prefix the host gives an aggregator's parameter
// names (aggr<k>.<module>.).
var aggrPrefix = regexp.MustCompile(`^(aggr[0-9]+\.[^.]+\.)+`)

func TestAggregatorForward(t *testing.T) {
	rt := aggrRuntime(t)
	csr := aggrTestCSR()
	x := aggrInput()
	for _, c := range aggrCases() {
		t.Run(c.name, func(t *testing.T) {
			g, err := rt.AggregatorGraph(context.Background(), c.name, c.config(), aggrIn, false)
			if err != nil {
				t.Fatal(err)
			}
			be := cpu.New(cpu.Options{Threads: 2})
			p := aggrProgram(t, be, tensor.Host, g)
			if err := p.Forward(context.Background(), engine.Mode{}); err != nil {
				t.Fatal(err)
			}
			var w params
			if c.pref != nil { // move the parameters off their init (zero biases) and read them
				w = moveParams(t, be, p, func(name string) string { return strings.TrimPrefix(name, aggrPrefix.FindString(name)) })
				if err := p.Forward(context.Background(), engine.Mode{}); err != nil {
					t.Fatal(err)
				}
				c.ref = func(n [][]float64) []float64 { return c.pref(n, w) }
			}
			got := download(t, be, p.Output())
			// Terms no larger than the inputs' square (≤ 4: aggrInput is
			// in [0.3, 2]) or the value itself.
			gam := aggrGamma(len(g.Ops))
			if c.ref != nil {
				cols := len(got) / aggrNodes
				for i := range aggrNodes {
					var nbrs [][]float64
					for k := csr.Indptr[i]; k < csr.Indptr[i+1]; k++ {
						j := int(csr.Col(k))
						nbrs = append(nbrs, x[j*aggrIn:(j+1)*aggrIn])
					}
					want := c.ref(nbrs)
					if len(want) != cols {
						t.Fatalf("node %d: %d columns, reference has %d", i, cols, len(want))
					}
					for k, w := range want {
						if d := got[i*cols+k] - w; math.Abs(d) > gam*math.Max(4, math.Abs(w)) {
							t.Fatalf("node %d column %d: got %.12g, want %.12g (bound %.2g)", i, k, got[i*cols+k], w, gam*math.Max(4, math.Abs(w)))
						}
					}
				}
			}
			simMatchesCPU(t, g, func(name string) []float64 { return w[strings.TrimPrefix(name, aggrPrefix.FindString(name))].v }, got)
		})
	}
}

// moveParams moves p's parameters off their initial values (zero biases
// would put ReLUs on their kink) and returns them by the names key gives.
func moveParams(t *testing.T, be backend.Backend, p *engine.Program, key func(string) string) params {
	t.Helper()
	w := params{}
	for k, prm := range p.Params() {
		v := download(t, be, prm.Value)
		for i := range v {
			v[i] += 0.3 * math.Sin(float64(i*7+k)+1)
		}
		if err := be.Upload(prm.Value, v); err != nil {
			t.Fatal(err)
		}
		w[key(prm.Name)] = param{v, prm.Value.Shape()}
	}
	return w
}

// simMatchesCPU runs g on the sim backend's device, with the parameter
// values vals returns by name (nil: their initial values), and requires
// the cpu output got bit for bit.
func simMatchesCPU(t *testing.T, g *ir.Graph, vals func(name string) []float64, got []float64) {
	t.Helper()
	sb := simBackend(t)
	ps := aggrProgram(t, sb, sim.DeviceTier(0), g)
	for _, prm := range ps.Params() {
		if v := vals(prm.Name); v != nil {
			if err := sb.Upload(prm.Value, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := ps.Forward(context.Background(), engine.Mode{}); err != nil {
		t.Fatal(err)
	}
	if simOut := download(t, sb, ps.Output()); !slices.Equal(simOut, got) {
		t.Fatalf("sim output %v differs from cpu %v", simOut, got)
	}
}

// simBackend is a sim backend of one simulated device (on two threads).
func simBackend(t *testing.T) *sim.Backend {
	t.Helper()
	topo, err := topology.Preset("pcie-only", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := sim.New(topo, 2)
	if err != nil {
		t.Fatal(err)
	}
	return sb
}

// TestAggregatorGradients checks d(Σ r·out)/d(params) of every aggregator
// (with a learnable projection in front, so the input's gradient is
// checked too) against central finite differences.
func TestAggregatorGradients(t *testing.T) {
	rt := aggrRuntime(t)
	for _, c := range aggrCases() {
		t.Run(c.name, func(t *testing.T) {
			g, err := rt.AggregatorGraph(context.Background(), c.name, c.config(), aggrIn, true)
			if err != nil {
				t.Fatal(err)
			}
			checkAggrGradients(t, g)
		})
	}
}

// checkAggrGradients compares the backward of d(Σ r·out)/d(params) with
// central finite differences (checkGradients).
func checkAggrGradients(t *testing.T, g *ir.Graph) {
	t.Helper()
	be := cpu.New(cpu.Options{Threads: 2})
	checkGradients(t, be, aggrProgram(t, be, tensor.Host, g), aggrGamma(len(g.Ops)), nil)
}

// gradTarget is a tensor whose gradient checkGradients checks: a
// parameter, or the program's input.
type gradTarget struct {
	name        string
	value, grad *tensor.Tensor
}

// checkGradients compares the backward of d(Σ r·out)/d(params) of p
// (and d/d(input) when input is set: the program's input, bound with
// Env.InputGrad) with central finite differences, element by element,
// after moving every parameter off its initial value (zero biases would
// put ReLUs on their kink). The step and the bound follow from the loss's
// scale Σ|r·out|, the program's relative rounding gam and its roundings
// (floattol.Slope, which widens the bound next to the kink of a clamp or
// a selection).
func checkGradients(t *testing.T, be backend.Backend, p *engine.Program, gam float64, input *tensor.Tensor) {
	t.Helper()
	ctx := context.Background()
	r := make([]float64, p.Output().Numel())
	for i := range r {
		r[i] = math.Sin(float64(i)*1.3) + 0.1
	}
	loss := func() float64 {
		if err := p.Forward(ctx, engine.Mode{Train: true}); err != nil {
			t.Fatal(err)
		}
		l := 0.0
		for i, v := range download(t, be, p.Output()) {
			l += r[i] * v
		}
		return l
	}
	var targets []gradTarget
	for _, prm := range p.Params() {
		v := download(t, be, prm.Value)
		for i := range v {
			v[i] += 0.05 * math.Sin(float64(i)+1)
		}
		if err := be.Upload(prm.Value, v); err != nil {
			t.Fatal(err)
		}
		targets = append(targets, gradTarget{prm.Name, prm.Value, prm.Grad})
	}
	loss()
	if err := be.Upload(p.OutputGrad(), r); err != nil {
		t.Fatal(err)
	}
	if err := p.Backward(ctx); err != nil {
		t.Fatal(err)
	}
	if input != nil {
		grad, err := p.InputGrad()
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, gradTarget{"input", input, grad})
	}
	anas := make([][]float64, len(targets)) // before the differences' forwards
	for k, tg := range targets {
		anas[k] = download(t, be, tg.grad)
	}
	scale := 0.0
	for i, v := range download(t, be, p.Output()) {
		scale += math.Abs(r[i] * v)
	}
	scale = math.Max(1, scale)
	eps := gam * scale
	for k, tg := range targets {
		ana := anas[k]
		vals := download(t, be, tg.value)
		num, bound := floattol.Gradient(len(vals), func(i int, d float64) float64 {
			orig := vals[i]
			set := func(v float64) {
				vals[i] = v
				if err := be.Upload(tg.value, vals); err != nil {
					t.Fatal(err)
				}
			}
			set(orig + d)
			l := loss()
			set(orig)
			return l
		}, floattol.CentralStep(eps, scale), eps)
		if slices.Max(ana) == 0 && slices.Min(ana) == 0 {
			// A softmax's per-channel shift (the gate's bias)
			// has no effect; the input's gradient must not vanish.
			if tg.name == "proj.weight" || tg.name == "input" {
				t.Fatalf("%s: zero gradient", tg.name)
			}
		}
		for i, a := range ana {
			bound[i] += gam * (math.Abs(a) + scale) // the backward's own rounding
		}
		if i, q := floattol.Exceeds(ana, num, bound); i >= 0 {
			t.Errorf("%s[%d]: backward %g, central difference %g: off by %.3g times the bound %.3g", tg.name, i, ana[i], num[i], q, bound[i])
		}
	}
}
