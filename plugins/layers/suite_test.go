package layers_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"strata/core/backend/cpu"
	"strata/core/engine"
	"strata/core/graph"
	"strata/core/ir"
	"strata/core/modhost"
	"strata/core/registry"
	"strata/core/tensor"
	"strata/models"
	"strata/plugins/layers"
)

// The aggregator.* suite runs every shipped aggregator (the
// registry's namespace, filled from models/wasm) and every fixture under
// testdata/<kind>/ (built by scripts/build-models.sh, directives and all):
// a module is checked as soon as it exists, with no list to edit. With
// STRATA_MUTANT=1 they run the deliberately broken modules of
// testdata/mutants/<kind>/ instead, and TestSuiteFailsOnMutants requires
// them to fail there. The model.* suite is in layersuite_test.go; both
// suites' learning checks train on the narrowed Cora of cora_test.go.

// mutantEnv makes a child test process run the suites on the mutants.
const mutantEnv = "STRATA_MUTANT"

// module is one module the suite checks: its name (a registered one's, or
// "<dir>.wasm" for a fixture), its bytes and its declarations.
type module struct {
	name string
	file string // the fixture's .wasm, "" for a shipped module
	code []byte
	meta map[string]string
}

// modules returns the modules of namespace ns ("model", "aggregator")
// that the suite runs, from testdata directory kind.
func modules(t *testing.T, ns, kind string) []module {
	t.Helper()
	if os.Getenv(mutantEnv) != "" {
		return fixtures(t, filepath.Join("testdata", "mutants", kind))
	}
	var out []module
	for _, m := range registry.Namespace(ns) {
		b, err := modhost.Lookup(m.ID)
		if err != nil {
			t.Fatal(err)
		}
		meta, err := models.Meta(b)
		if err != nil {
			t.Fatalf("%s: %v", m.ID, err)
		}
		out = append(out, module{name: m.Name(), code: b, meta: meta})
	}
	if len(out) == 0 {
		t.Fatalf("no %s modules are registered: run `make models`", ns)
	}
	return append(out, fixtures(t, filepath.Join("testdata", kind))...)
}

// fixtures builds every module directory under dir with the script that
// builds the shipped ones.
func fixtures(t *testing.T, dir string) []module {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	var out []module
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		file := filepath.Join(t.TempDir(), e.Name()+".wasm")
		cmd := exec.Command(filepath.Join(root, "scripts", "build-models.sh"), "./"+filepath.Join("plugins", "layers", dir, e.Name()), file)
		cmd.Dir = root
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", e.Name(), err, msg)
		}
		b, err := os.ReadFile(file)
		if err == nil {
			err = models.CheckFile(file, b)
		}
		if err != nil {
			t.Fatal(err)
		}
		meta, err := models.Meta(b)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		out = append(out, module{name: e.Name() + ".wasm", file: file, code: b, meta: meta})
	}
	return out
}

// reversedCSR is the test graph with every node's neighbours in reverse
// order: the same messages, permuted.
func reversedCSR() *graph.CSR {
	c := layers.AggrTestCSR()
	cols := make([]int32, 0, c.NNZ())
	for i := range c.NumRows {
		for k := c.Indptr[i+1] - 1; k >= c.Indptr[i]; k-- {
			cols = append(cols, int32(c.Col(k)))
		}
	}
	out := *c
	out.Idx32, out.Idx64, out.Values = cols, nil, nil
	return &out
}

// forwardOn runs g on the cpu backend over csr and returns its output.
func forwardOn(t *testing.T, g *ir.Graph, csr *graph.CSR) []float64 {
	t.Helper()
	be := cpu.New(cpu.Options{Threads: 2})
	p := layers.ProgramOn(t, be, tensor.Host, g, csr)
	if err := p.Forward(context.Background(), engine.Mode{}); err != nil {
		t.Fatal(err)
	}
	return layers.Download(t, be, p.Output())
}

// TestAggregatorSuite runs every aggregator through the aggregator.*
// suite: cpu against sim, permutation invariance (or declared order
// dependence), finite-difference gradients, and Learns: GraphSAGE with
// the aggregator over its 16-wide projection (option project, so an
// LSTM-style aggregator stays narrow) must learn the narrowed Cora.
func TestAggregatorSuite(t *testing.T) {
	rt := layers.AggrRuntime(t)
	mods := modules(t, "aggregator", "aggregators")
	c := narrowCora(t, t.TempDir())
	for _, m := range mods {
		t.Run(m.name, func(t *testing.T) {
			var cfg modhost.LayerConfig
			if m.file != "" {
				cfg.Modules = map[string][]byte{m.name: m.code}
			}
			g, err := rt.AggregatorGraph(context.Background(), m.name, cfg, layers.AggrIn, false)
			if err != nil {
				t.Fatal(err)
			}
			got := forwardOn(t, g, layers.AggrTestCSR())
			t.Run("Backends", func(t *testing.T) { layers.SimMatchesCPU(t, g, func(string) []float64 { return nil }, got) })
			t.Run("Permutation", func(t *testing.T) { checkPermutation(t, m, g, got) })
			t.Run("Gradients", func(t *testing.T) {
				gp, err := rt.AggregatorGraph(context.Background(), m.name, cfg, layers.AggrIn, true)
				if err != nil {
					t.Fatal(err)
				}
				layers.CheckAggrGradients(t, gp)
			})
			t.Run("Learns", func(t *testing.T) { c.checkLearns(t, c.run(t, `name = "sage"`, aggrSets(m)...)) })
		})
	}
}

// aggrSets select m as GraphSAGE's aggregator over its projection, the
// hidden width: the aggregator reads 16 columns, whatever the input's
// width.
func aggrSets(m module) []string {
	aggr := m.name
	if m.file != "" {
		aggr = m.file
	}
	return []string{fmt.Sprintf("model.options.aggr=%q", aggr), "model.options.project=true"}
}

// checkPermutation: permuting every node's incoming messages leaves an
// aggregator's output as it was, up to the rounding of its reordered
// sums (TestAggregatorForward's bound); one that declares itself
// order-dependent must instead give the same output on the same order.
func checkPermutation(t *testing.T, m module, g *ir.Graph, got []float64) {
	if m.meta[models.MetaOrderDependent] != "" {
		if again := forwardOn(t, g, layers.AggrTestCSR()); !slices.Equal(again, got) {
			t.Fatalf("order-dependent aggregator: two runs on the same order differ: %v, %v", got, again)
		}
		return
	}
	perm := forwardOn(t, g, reversedCSR())
	gam := 2 * layers.AggrGamma(len(g.Ops)) // each side's rounding
	for i, w := range got {
		if d := math.Abs(perm[i] - w); d > gam*math.Max(4, math.Abs(w)) {
			t.Fatalf("element %d: %.12g with the neighbours reversed, %.12g in order (bound %.2g): "+
				"the result depends on the neighbours' order; declare //strata:order-dependent if it must", i, perm[i], w, gam*math.Max(4, math.Abs(w)))
		}
	}
}

// TestSuiteFailsOnMutants runs the suites in a child process on the
// broken modules of testdata/mutants (STRATA_MUTANT=1) and requires the
// subtest meant to catch each to fail and the others to pass: an
// aggregator that depends on its neighbours' order without declaring it
// fails Permutation; a layer blind to its input (testdata/mutants/layers/
// blind) fails Learns; a decoder named dot that is not the dot product
// (testdata/mutants/decoders/dot) fails Reference.
func TestSuiteFailsOnMutants(t *testing.T) {
	if os.Getenv(mutantEnv) != "" {
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^(TestAggregatorSuite|TestLayerSuite|TestDecoderSuite)$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), mutantEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the suites passed on the mutants:\n%s", out)
	}
	cases := []struct {
		suite, mutant, fails, why string
		passes                    []string // the mutant is broken only where it fails
	}{
		{"TestAggregatorSuite", "first.wasm", "Permutation", "depends on the neighbours' order", []string{"Gradients", "Backends", "Learns"}},
		{"TestLayerSuite", "blind.wasm", "Learns", "not below 1.9459, the training labels' entropy", []string{"Gradients", "Backends", "Blocks"}},
		{"TestDecoderSuite", "dot.wasm", "Reference", ", reference ", []string{"Gradients", "Backends", "Seeds"}},
	}
	for _, c := range cases {
		for _, want := range []string{"--- FAIL: " + c.suite + "/" + c.mutant + "/" + c.fails + " ", c.why} {
			if !strings.Contains(string(out), want) {
				t.Errorf("the child's output lacks %q:\n%s", want, out)
			}
		}
		for _, sub := range c.passes {
			if pass := "--- PASS: " + c.suite + "/" + c.mutant + "/" + sub + " "; !strings.Contains(string(out), pass) {
				t.Errorf("the child's output lacks %q:\n%s", pass, out)
			}
		}
	}
}
