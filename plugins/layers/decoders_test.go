package layers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"strata/core/backend"
	"strata/core/backend/sim"
	"strata/core/engine"
	"strata/core/graph"
	"strata/core/ir"
	"strata/core/modhost"
	"strata/core/tensor"
	"strata/core/train"
	"strata/internal/floattol"
	"strata/plugins/wasm"
)

// The helpers of the decoder.* suite (decsuite_test.go): a small pair
// graph with a repeated pair and a self pair, programs over it, and the
// dense Go references of the shipped decoders, keyed by name.

const (
	decNodes = 6
	decIn    = 4
)

// decPairs are the scored pairs (u, v): (0,1) twice, the self pair (3,3),
// and node 3 in no other pair.
var decPairs = [][2]int64{{0, 1}, {2, 1}, {0, 1}, {3, 3}, {5, 0}, {1, 4}, {4, 2}, {0, 4}, {2, 5}}

// decTestCSR is the pair graph: row v lists u for every pair (u, v).
func decTestCSR() *graph.CSR { return graph.FromEdges(decNodes, decPairs) }

// decInput is the embeddings H [decNodes, decIn], of both signs.
func decInput() []float64 {
	x := make([]float64, decNodes*decIn)
	for i := range x {
		x[i] = 1.3 * math.Sin(float64(i)*0.9+0.4)
	}
	return x
}

// decCase is a shipped decoder's test options and its dense reference:
// the score of (u, v) from their rows and the parameters (by name without
// the "decoder." prefix).
type decCase struct {
	num map[string]float64
	ref func(hu, hv []float64, w params) float64
}

// decCases are the references, keyed by the decoder's name. A decoder
// without one still gets the suite's other checks.
var decCases = map[string]decCase{
	"dot": {ref: func(hu, hv []float64, _ params) float64 { return dot(hu, hv) }},
	"distmult": {ref: func(hu, hv []float64, w params) float64 {
		s := 0.0
		for c, r := range w["relation"].v {
			s += hu[c] * r * hv[c]
		}
		return s
	}},
	"hadamard-mlp": {num: map[string]float64{"hidden": 3, "layers": 3}, ref: func(hu, hv []float64, w params) float64 {
		z := make([]float64, len(hu))
		for c := range z {
			z[c] = hu[c] * hv[c]
		}
		z = relu(w.lin("mlp.1", relu(w.lin("mlp.0", z))))
		return w.lin("mlp.2", z)[0]
	}},
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// decConfig is the options of decoder name (its reference's, if any) with
// the embedding width.
func decConfig(name string) modhost.LayerConfig {
	var cfg modhost.LayerConfig
	cfg.SetInt("in_dim", decIn)
	for k, v := range decCases[strings.TrimSuffix(name, ".wasm")].num {
		cfg.SetFloat(k, v)
	}
	return cfg
}

// decoderGraph records a decoder module through modhost (wasm.Host).
func decoderGraph(t *testing.T, name string, code []byte) (*ir.Graph, error) {
	t.Helper()
	ctx := context.Background()
	d, release, err := testHost.LoadDecoder(ctx, name, code)
	if err != nil {
		return nil, err
	}
	defer release()
	s, err := d.DecoderSpec(ctx, decConfig(name))
	if err != nil {
		return nil, err
	}
	return s.Graph, nil
}

// decProgram compiles a decoder's graph on be over the pair graph with
// decInput as its input (its gradient computed) and parameters from
// seed; it returns the program and its input.
func decProgram(t *testing.T, be backend.Backend, tier tensor.Tier, g *ir.Graph, seed uint64) (*engine.Program, *tensor.Tensor) {
	t.Helper()
	csr := decTestCSR()
	return bindProgram(t, be, tier, g, &train.Adjacencies{Adj: csr, AdjSelf: csr}, progInput{decIn, decInput(), true}, seed)
}

// decGamma is the float64 rounding bound of a decoder program of ops ops:
// every value passes through at most the program's ops, each summing at
// most every feature (or hidden unit) and pair.
func decGamma(ops int) float64 {
	return floattol.Gamma(ops*(decIn+len(decPairs)+2), floattol.UFloat64)
}

// decReference returns the reference scores of the pairs in CSR order,
// and their magnitudes: the reference on the absolute values of the rows
// and parameters, which bounds every term of its sums (ReLU keeps them).
func decReference(ref func(hu, hv []float64, w params) float64, w params) (want, mag []float64) {
	csr, x := decTestCSR(), decInput()
	abs := func(v []float64) []float64 {
		out := make([]float64, len(v))
		for i, e := range v {
			out[i] = math.Abs(e)
		}
		return out
	}
	wa := params{}
	for k, p := range w {
		wa[k] = param{abs(p.v), p.shape}
	}
	for v := range decNodes {
		for e := csr.Indptr[v]; e < csr.Indptr[v+1]; e++ {
			u := int(csr.Col(e))
			hu, hv := x[u*decIn:(u+1)*decIn], x[v*decIn:(v+1)*decIn]
			want = append(want, ref(hu, hv, w))
			mag = append(mag, ref(abs(hu), abs(hv), wa))
		}
	}
	return want, mag
}

// decKey is a decoder parameter's name without "decoder.".
func decKey(name string) string { return strings.TrimPrefix(name, wasm.DecoderPrefix) }

// decForward runs g on be with moved parameters (moveParams) and returns
// them and the scores.
func decForward(t *testing.T, be backend.Backend, g *ir.Graph) (params, []float64) {
	t.Helper()
	p, _ := decProgram(t, be, tensor.Host, g, 3)
	w := moveParams(t, be, p, decKey) // a ones-initialised relation would be the dot product
	if err := p.Forward(context.Background(), engine.Mode{}); err != nil {
		t.Fatal(err)
	}
	got := download(t, be, p.Output())
	if len(got) != len(decPairs) {
		t.Fatalf("%d scores for %d pairs", len(got), len(decPairs))
	}
	return w, got
}

// errNoReference says that a decoder has no dense reference.
var errNoReference = errors.New("no dense reference in plugins/layers/decoders_test.go: its forward is not checked against one")

// decReferenceCheck compares the scores got of decoder name, with
// parameters w, to its reference (errNoReference without one), within
// the roundings of both sides for a program of ops ops. It returns the
// scores' magnitudes: the reference's, or max(1, Σ|score|) (the
// gradient check's loss scale) without one.
func decReferenceCheck(name string, got []float64, w params, ops int) ([]float64, error) {
	c, ok := decCases[strings.TrimSuffix(name, ".wasm")]
	if !ok {
		s := 0.0
		for _, v := range got {
			s += math.Abs(v)
		}
		mag := make([]float64, len(got))
		for i := range mag {
			mag[i] = max(1, s)
		}
		return mag, errNoReference
	}
	want, mag := decReference(c.ref, w)
	if i, q := floattol.Exceeds(got, want, decBound(ops, mag)); i >= 0 {
		return mag, fmt.Errorf("pair %d: score %.12g, reference %.12g: off by %.3g times the bound", i, got[i], want[i], q)
	}
	return mag, nil
}

// decBound is the difference two float64 computations of scores of
// magnitudes mag by programs of ops ops may show (floattol.Orders).
func decBound(ops int, mag []float64) []float64 {
	gam := decGamma(ops)
	bound := make([]float64, len(mag))
	for i, m := range mag {
		bound[i] = floattol.Orders(gam * m)
	}
	return bound
}

// checkDecoderGradients checks the parameters' and the input's gradients
// of a decoder program against central finite differences.
func checkDecoderGradients(t *testing.T, be backend.Backend, g *ir.Graph) {
	t.Helper()
	p, x := decProgram(t, be, tensor.Host, g, 3)
	checkGradients(t, be, p, decGamma(len(g.Ops)), x)
}

// decSimAgrees runs g on the sim backend with the parameters w and
// requires its scores to equal got within the rounding of two orders of
// the same sums (floattol.Orders) of magnitude mag.
func decSimAgrees(t *testing.T, g *ir.Graph, w params, got, mag []float64) {
	t.Helper()
	sb := simBackend(t)
	p, _ := decProgram(t, sb, sim.DeviceTier(0), g, 3)
	for _, prm := range p.Params() {
		if err := sb.Upload(prm.Value, w[decKey(prm.Name)].v); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Forward(context.Background(), engine.Mode{}); err != nil {
		t.Fatal(err)
	}
	simOut := download(t, sb, p.Output())
	if i, q := floattol.Exceeds(simOut, got, decBound(len(g.Ops), mag)); i >= 0 {
		t.Fatalf("pair %d: sim %.12g, cpu %.12g: off by %.3g times the bound", i, simOut[i], got[i], q)
	}
}

// checkDecoderSeeds requires the same seed to give the same initial
// parameters, and another seed to change every randomly initialised one.
func checkDecoderSeeds(t *testing.T, be backend.Backend, g *ir.Graph) {
	t.Helper()
	init := func(seed uint64) map[string][]float64 {
		p, _ := decProgram(t, be, tensor.Host, g, seed)
		out := map[string][]float64{}
		for _, prm := range p.Params() {
			out[prm.Name] = download(t, be, prm.Value)
		}
		return out
	}
	a, b, c := init(3), init(3), init(4)
	for _, op := range g.Ops {
		if op.Kind != ir.OpParam {
			continue
		}
		name := op.Name
		if !slices.Equal(a[name], b[name]) {
			t.Errorf("param %s: two programs of seed 3 initialise it differently", name)
		}
		random := op.Init != "zeros" && op.Init != "ones"
		if same := slices.Equal(a[name], c[name]); random && same {
			t.Errorf("param %s (init %s): seeds 3 and 4 give the same values", name, op.Init)
		} else if !random && !same {
			t.Errorf("param %s (init %s): seeds 3 and 4 give different values", name, op.Init)
		}
	}
}
