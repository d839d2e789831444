package layers_test

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"strata/core/backend"
	"strata/core/backend/cpu"
	"strata/core/backend/sim"
	"strata/core/config"
	"strata/core/engine"
	"strata/core/ir"
	"strata/core/tensor"
	"strata/core/train"
	_ "strata/plugins/all"
	"strata/plugins/layers"
)

// The model.* suite runs every shipped layer module and every fixture
// under testdata/layers/ (with STRATA_MUTANT=1, testdata/mutants/layers/)
// as a two-layer model with the module's default options, dropout off:
//
//   - Gradients: on the aggregator suite's 7-node graph in float64, the
//     backward of every parameter against central finite differences; the
//     second layer's input gradient is checked through the first layer's
//     parameters.
//   - Backends: the sim backend's forward and parameter gradients equal
//     the cpu backend's bit for bit.
//   - Learns: learnEpochs full-graph epochs on the narrowed Cora (see
//     cora.checkLearns) beat every predictor blind to its input.
//   - Blocks: when the linked model's Needs says every layer runs on one
//     sampled block, one mini-batch epoch binds and trains; when it says
//     one cannot, validate refuses the model at model.name (model.module
//     for a file).

// suiteModel is the model section of the gradient and binding checks.
const suiteModel = "\nlayers = 2\nhidden = 4\ndropout = 0.0\ninput_dropout = 0.0\n"

// layerConfig parses a config for m (the model section suiteModel) with
// the sets.
func layerConfig(t *testing.T, dir string, m module, sets ...string) *config.Config {
	t.Helper()
	text := "[data]\ndataset = \"embedded:cora\"\n[model]\n" + moduleModel(m) + suiteModel + "[output]\nprogress = \"off\"\n"
	cfg, err := config.Parse(dir+"/layer.toml", []byte(text), sets...)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestLayerSuite runs every layer module through the model.* suite.
func TestLayerSuite(t *testing.T) {
	mods := modules(t, "model", "layers")
	c := narrowCora(t, t.TempDir())
	ctx := context.Background()
	for _, m := range mods {
		t.Run(m.name, func(t *testing.T) {
			dir := t.TempDir()
			// The aggregator test graph's width in, as many classes out.
			model, err := train.BuildModel(ctx, layerConfig(t, dir, m), testHost, layers.AggrIn, layers.AggrIn)
			if err != nil {
				t.Fatal(err)
			}
			g := model.Graph
			t.Run("Gradients", func(t *testing.T) { layers.CheckAggrGradients(t, g) })
			t.Run("Backends", func(t *testing.T) {
				layers.SimMatchesCPU(t, g, func(string) []float64 { return nil }, forwardOn(t, g, layers.AggrTestCSR()))
				simGradientsMatchCPU(t, g)
			})
			t.Run("Learns", func(t *testing.T) { c.checkLearns(t, c.run(t, moduleModel(m))) })
			t.Run("Blocks", func(t *testing.T) { checkBlocks(t, c, m, g) })
		})
	}
}

// simGradientsMatchCPU runs one training step's forward and backward of
// g on the cpu and the sim backend (the same initial parameters: the
// same seed) and requires every parameter's gradient bit for bit.
func simGradientsMatchCPU(t *testing.T, g *ir.Graph) {
	t.Helper()
	grads := func(be backend.Backend, tier tensor.Tier) [][]float64 {
		p := layers.AggrProgram(t, be, tier, g)
		ctx := context.Background()
		if err := p.Forward(ctx, engine.Mode{Train: true}); err != nil {
			t.Fatal(err)
		}
		r := make([]float64, p.Output().Numel())
		for i := range r {
			r[i] = math.Sin(float64(i)*1.3) + 0.1
		}
		if err := be.Upload(p.OutputGrad(), r); err != nil {
			t.Fatal(err)
		}
		if err := p.Backward(ctx); err != nil {
			t.Fatal(err)
		}
		var out [][]float64
		for _, prm := range p.Params() {
			out = append(out, layers.Download(t, be, prm.Grad))
		}
		return out
	}
	want := grads(cpu.New(cpu.Options{Threads: 2}), tensor.Host)
	got := grads(layers.SimBackend(t), sim.DeviceTier(0))
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("parameter %d: sim gradient %v differs from cpu %v", i, got[i], want[i])
		}
	}
}

// checkBlocks checks mini-batch binding against what g's Needs declares.
func checkBlocks(t *testing.T, c cora, m module, g *ir.Graph) {
	blocks := true
	for _, n := range g.Needs() {
		blocks = blocks && n.Blocks()
	}
	if blocks {
		res := c.run(t, moduleModel(m), minibatchSets(t)...)
		if res.Epochs != 1 || !(res.FinalLoss > 0) || math.IsInf(res.FinalLoss, 0) {
			t.Fatalf("mini-batch run: %d epochs, loss %v; want one epoch with a finite positive loss", res.Epochs, res.FinalLoss)
		}
		return
	}
	cfg := layerConfig(t, t.TempDir(), m, minibatchSets(t)...)
	err := train.Check(context.Background(), cfg, testHost, true)
	key := `model.name = "` + m.name + `"`
	if m.file != "" {
		key = "model.module: "
	}
	if err == nil || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "binds one sampled block") {
		t.Fatalf("validate in mini-batch mode of a layer that cannot bind blocks (Needs %+v): error %v, want one at %s", g.Needs(), err, key)
	}
}
