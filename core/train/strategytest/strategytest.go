// Package strategytest is the conformance suite of training strategies
// (registry namespace "strategy"): it trains a small model on the
// embedded Cora graph with the strategy and checks the Stepper contract
// and the loop's promises (finite losses, valid predictions, learning,
// determinism on the CPU).
package strategytest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"strata/core/config"
	"strata/core/graph"
	"strata/core/graph/numpy"
	"strata/core/modhost"
	"strata/core/registry"
	"strata/core/train"
)

// base is the run every strategy gets: GCN on the embedded Cora graph, on
// the CPU, a few epochs.
const base = `
[data]
dataset = "embedded:cora"

[model]
name = "gcn"
hidden = 16

[train]
epochs = 12
eval_every = 4
seed = 7

[output]
progress = "off"
`

// Config returns the suite's config for the strategy with the given
// registry ID (train.mode and the strategy's ExampleConfig applied).
func Config(t *testing.T, id string, sets ...string) *config.Config {
	t.Helper()
	info, err := registry.Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	all := []string{"train.mode=" + info.Name()}
	if ex, ok := info.New().(train.Exampler); ok {
		all = append(all, ex.ExampleConfig()...)
	}
	cfg, err := config.Parse("strategytest.toml", []byte(base), append(all, sets...)...)
	if err != nil {
		t.Fatalf("%s: config: %v", id, err)
	}
	return cfg
}

// Test runs the strategy with the registry ID id through the suite; host
// runs the model's layer module.
func Test(t *testing.T, id string, host modhost.Host) {
	ctx := context.Background()
	t.Run("Stepper", func(t *testing.T) {
		cfg := Config(t, id)
		strat, err := train.StrategyFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if strat.StrataModule().ID != id {
			t.Fatalf("train.mode = %q selects %s, want %s", cfg.Train.Mode, strat.StrataModule().ID, id)
		}
		// As train.Run: the config's modules provisioned before use,
		// cleaned up at the end.
		release, err := cfg.Provision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := release(); err != nil {
				t.Errorf("Cleanup: %v", err)
			}
		}()
		env, _, closeEnv, err := train.NewEnv(ctx, cfg, host)
		if err != nil {
			t.Fatal(err)
		}
		defer closeEnv()
		before := env.Backend.Stats().InUse
		st, err := strat.NewStepper(ctx, env)
		if err != nil {
			t.Fatal(err)
		}
		if st.Params() == nil || len(st.Params().List()) == 0 {
			t.Fatal("Params() has no parameters")
		}
		updates := 0
		loss, err := st.Epoch(ctx, 1, func() error { updates++; return nil })
		if err != nil {
			t.Fatal(err)
		}
		if math.IsNaN(loss) || math.IsInf(loss, 0) || loss <= 0 {
			t.Errorf("epoch loss %v, want a finite positive cross-entropy", loss)
		}
		if updates < 1 {
			t.Errorf("Epoch called update %d times, want at least once", updates)
		}
		pred := make([]int32, env.Dataset.NumNodes)
		for i := range pred {
			pred[i] = -1
		}
		if err := st.Predict(ctx, pred); err != nil {
			t.Fatal(err)
		}
		for i, p := range pred {
			if p < 0 || int(p) >= env.Dataset.NumClasses {
				t.Fatalf("prediction of node %d is %d, want a class in [0,%d)", i, p, env.Dataset.NumClasses)
			}
		}
		if sc, ok := st.(train.Scorer); ok {
			checkScorer(ctx, t, sc, pred, env.Dataset.NumClasses)
		}
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := st.Epoch(cancelled, 2, func() error { return nil }); err == nil {
			t.Error("Epoch with a cancelled context returned no error")
		}
		st.Release()
		for tier, n := range env.Backend.Stats().InUse {
			if n != before[tier] {
				t.Errorf("after Release, %s holds %d bytes, %d before NewStepper", tier, n, before[tier])
			}
		}
	})
	t.Run("Learns", func(t *testing.T) {
		res, err := train.Run(ctx, Config(t, id), train.Options{Host: host})
		if err != nil {
			t.Fatal(err)
		}
		if res.Mode != Config(t, id).Train.Mode || res.Epochs != 12 {
			t.Errorf("result mode %q after %d epochs", res.Mode, res.Epochs)
		}
		for name, acc := range map[string]float64{"train": res.TrainAcc, "valid": res.BestValidAcc, "test": res.TestAcc} {
			if !(acc >= 0 && acc <= 1) {
				t.Errorf("%s accuracy %v", name, acc)
			}
		}
		// Cora has 7 classes: twice chance after 12 epochs of GCN.
		if chance := 1 / float64(res.Classes); res.TrainAcc < 2*chance {
			t.Errorf("train accuracy %.3f after %d epochs: the model does not learn (chance %.3f)", res.TrainAcc, res.Epochs, chance)
		}
		if math.IsNaN(res.FinalLoss) || math.IsInf(res.FinalLoss, 0) {
			t.Errorf("final loss %v", res.FinalLoss)
		}
	})
	t.Run("Capabilities", func(t *testing.T) { testCapabilities(t, id, host) })
	t.Run("Deterministic", func(t *testing.T) {
		var r [2]*train.Result
		for i := range r {
			var err error
			if r[i], err = train.Run(ctx, Config(t, id, "train.epochs=3", "train.eval_every=3"), train.Options{Host: host}); err != nil {
				t.Fatal(err)
			}
		}
		if r[0].FinalLoss != r[1].FinalLoss || r[0].BestValidAcc != r[1].BestValidAcc || r[0].TestAcc != r[1].TestAcc {
			t.Errorf("same seed and config, different results: loss %v vs %v, valid %v vs %v, test %v vs %v",
				r[0].FinalLoss, r[1].FinalLoss, r[0].BestValidAcc, r[1].BestValidAcc, r[0].TestAcc, r[1].TestAcc)
		}
	})
}

// capability is one thing a strategy may declare in its Uses: the --set
// assignments that ask for it, and what the result of a run that used it
// shows.
type capability struct {
	name     string
	declared func(train.Uses) bool
	sets     []string
	// base, when set, are the assignments of a run without the
	// capability, whose result used compares with (nil: no such run).
	base []string
	used func(res, base *train.Result) string // "" when the result shows the capability at work
	// check, when set, replaces the run of sets and used.
	check func(t *testing.T, id string, host modhost.Host)
	// setup, when set, prepares what the capability runs on (files) and
	// returns the assignments it adds to sets and to base.
	setup func(t *testing.T) (sets, base []string)
	// refusal, when set, is what the refusal of an undeclared capability
	// says (any error otherwise).
	refusal string
}

var capabilities = []capability{
	{name: "Float64", declared: func(u train.Uses) bool { return u.Float64 }, sets: []string{"train.dtype=float64"}, base: []string{},
		used: func(res, base *train.Result) string {
			// The same run in float32 rounds differently: an equal loss
			// means float64 was not used. How far apart they may be
			// depends on the model and the epoch, so no bound is set.
			if res.FinalLoss == base.FinalLoss || math.IsNaN(res.FinalLoss) || math.IsInf(res.FinalLoss, 0) {
				return fmt.Sprintf("final loss %.17g against float32's %.17g: want a finite loss that float64 rounds differently", res.FinalLoss, base.FinalLoss)
			}
			return ""
		}},
	{name: "Checkpoints", declared: func(u train.Uses) bool { return u.Checkpoints }, sets: []string{"train.checkpoint_every=1", "output.checkpoint=run.ckpt"},
		check: testResume},
	{name: "HalfFeatures", declared: func(u train.Uses) bool { return u.HalfFeatures }, sets: []string{"data.feature_dtype=bfloat16"},
		used: func(res, _ *train.Result) string {
			if res.FeatureDType != "bfloat16" || res.FeatureBytes <= 0 {
				return fmt.Sprintf("features stored as %q in %d bytes, want bfloat16", res.FeatureDType, res.FeatureBytes)
			}
			return ""
		}},
	{name: "Devices", declared: func(u train.Uses) bool { return u.Devices }, sets: []string{"train.backend=sim", "devices.count=2"},
		used: func(res, _ *train.Result) string {
			if res.PeakTierBytes["device1"] <= 0 {
				return fmt.Sprintf("the second simulated device held nothing (peaks %v)", res.PeakTierBytes)
			}
			return ""
		}},
	{name: "EdgeWeights", declared: func(u train.Uses) bool { return u.EdgeWeights }, base: []string{}, refusal: "does not carry edge weights",
		setup: func(t *testing.T) ([]string, []string) {
			return []string{"data.dataset=" + strconv.Quote(WeightedCora(t, "varied"))}, []string{"data.dataset=" + strconv.Quote(WeightedCora(t, "none"))}
		},
		used: func(res, base *train.Result) string {
			// The same graph unweighted trains otherwise: an equal loss
			// means the weights were dropped.
			if res.FinalLoss == base.FinalLoss || math.IsNaN(res.FinalLoss) || math.IsInf(res.FinalLoss, 0) {
				return fmt.Sprintf("final loss %.17g against the unweighted graph's %.17g: want a finite loss that the weights change", res.FinalLoss, base.FinalLoss)
			}
			return ""
		}},
	{name: "Link", declared: func(u train.Uses) bool { return u.Link }, sets: []string{"train.task=link"}, refusal: "cannot train link prediction",
		used: func(res, _ *train.Result) string {
			// The task is link prediction: its split and figures are
			// reported, and the held-out ROC-AUC is a probability.
			if res.Targets != "link" || res.Link == nil || res.Link.TrainEdges == 0 || !(res.TestAcc >= 0 && res.TestAcc <= 1) {
				return fmt.Sprintf("targets %q, link figures %+v, test ROC-AUC %v: want a link run's", res.Targets, res.Link, res.TestAcc)
			}
			return ""
		}},
}

// WeightedCora writes Cora as PyG's arrays (both directions of every
// edge) into a new directory of the test: with weights "none", all 1
// ("unit"), or ones that differ between an edge's two directions
// ("varied", 0.25 .. 2.25, exact in float32).
func WeightedCora(t *testing.T, weights string) string {
	t.Helper()
	d, err := graph.Open("embedded:cora")
	if err != nil {
		t.Fatal(err)
	}
	g, _ := numpy.BothDirections(d.Graph)
	switch weights {
	case "unit", "varied":
		g.Values = make([]float32, g.NNZ())
		for e := range g.Values {
			g.Values[e] = 1
			if weights == "varied" {
				g.Values[e] = 0.25 + 0.5*float32(e%5)
			}
		}
	}
	d.Graph = g
	dir := filepath.Join(t.TempDir(), "cora-"+weights)
	if _, err := numpy.WriteNPYDir(dir, d); err != nil {
		t.Fatal(err)
	}
	return dir
}

// testCapabilities trains one epoch with each capability the strategy
// declares and checks that the result shows it at work, and checks that
// a capability it does not declare is refused before training, not
// silently ignored.
func testCapabilities(t *testing.T, id string, host modhost.Host) {
	ctx := context.Background()
	info, err := registry.Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	uses := info.New().(train.Strategy).Uses()
	for _, c := range capabilities {
		t.Run(c.name, func(t *testing.T) {
			sets, baseSets := c.sets, c.base
			if c.setup != nil {
				more, moreBase := c.setup(t)
				sets, baseSets = append(slices.Clone(sets), more...), append(slices.Clone(baseSets), moreBase...)
			}
			cfg := Config(t, id, append([]string{"train.epochs=1", "train.eval_every=1"}, sets...)...)
			if !c.declared(uses) {
				// Set-up only, unless the refusal needs the data.
				if err := train.Check(ctx, cfg, host, c.setup == nil); err == nil || !strings.Contains(err.Error(), c.refusal) {
					t.Errorf("%v: error %v, but %s does not declare %s (want a refusal saying %q)", sets, err, id, c.name, c.refusal)
				}
				return
			}
			if c.check != nil {
				c.check(t, id, host)
				return
			}
			res, err := train.Run(ctx, cfg, train.Options{Host: host})
			if err != nil {
				t.Fatalf("%s declares %s, but %v fails: %v", id, c.name, sets, err)
			}
			var base *train.Result
			if baseSets != nil {
				if base, err = train.Run(ctx, Config(t, id, append([]string{"train.epochs=1", "train.eval_every=1"}, baseSets...)...), train.Options{Host: host}); err != nil {
					t.Fatalf("%v: %v", baseSets, err)
				}
			}
			if why := c.used(res, base); why != "" {
				t.Errorf("%s declares %s, but with %v %s", id, c.name, sets, why)
			}
		})
	}
}

// testResume interrupts a run after its second epoch, resumes it from its
// checkpoint and compares it with the uninterrupted run: the same final
// loss and accuracies, to the bit; once with the defaults, once with AdamW,
// gradient clipping and a schedule that changes the rate every epoch
// after a warm-up (the resumed run must take its epoch's rate and the
// optimizer's moments from the checkpoint).
func testResume(t *testing.T, id string, host modhost.Host) {
	toolbox := []string{"train.optimizer=adamw", "train.grad_clip=0.05", "train.lr_schedule.name=step",
		"train.lr_schedule.step_size=1", "train.lr_schedule.gamma=0.5", "train.lr_schedule.warmup_epochs=1"}
	for name, extra := range map[string][]string{"defaults": nil, "toolbox": toolbox} {
		t.Run(name, func(t *testing.T) { resumeEqual(t, id, host, extra) })
	}
}

func resumeEqual(t *testing.T, id string, host modhost.Host, extra []string) {
	ResumeEqual(t, func(sets ...string) *config.Config { return Config(t, id, append(sets, extra...)...) }, host)
}

// ResumeEqual checks that a run of cfg interrupted after epoch 2 of 3
// and resumed from its checkpoint ends as the uninterrupted run does
// (loss, test and best validation accuracy), and returns the
// uninterrupted run's result. cfg builds the config with the given
// --set assignments.
func ResumeEqual(t *testing.T, cfg func(sets ...string) *config.Config, host modhost.Host) *train.Result {
	t.Helper()
	ckpt := filepath.Join(t.TempDir(), "run.ckpt")
	sets := []string{"train.epochs=3", "train.eval_every=1", "train.checkpoint_every=1", "output.checkpoint=" + ckpt}
	whole, err := train.Run(context.Background(), cfg(sets[:2]...), train.Options{Host: host})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := func(epoch int) {
		if epoch == 2 {
			cancel()
		}
	}
	if _, err := train.Run(ctx, cfg(sets...), train.Options{Host: host, AfterEpoch: stop}); !errors.Is(err, context.Canceled) {
		t.Fatalf("the run interrupted after epoch 2 returned %v", err)
	}
	resumed, err := train.Run(context.Background(), cfg(sets...), train.Options{Host: host, Resume: true})
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if resumed.FinalLoss != whole.FinalLoss || resumed.TestAcc != whole.TestAcc || resumed.BestValidAcc != whole.BestValidAcc {
		t.Errorf("resumed after epoch 2: loss %.17g, test %v, valid %v; uninterrupted: %.17g, %v, %v",
			resumed.FinalLoss, resumed.TestAcc, resumed.BestValidAcc, whole.FinalLoss, whole.TestAcc, whole.BestValidAcc)
	}
	return whole
}

// CoraBase is a small run that tests share: GCN on the embedded Cora
// graph, 5 epochs, on the CPU.
const CoraBase = `
[data]
dataset = "embedded:cora"

[model]
name = "gcn"
hidden = 16

[train]
epochs = 5
`

// LinkBase is Cora link prediction that tests share: GAE's encoder (GCN
// 32-16, no dropout) and the dot decoder, as ../shared/peers/linkpred.py
// trains it, 5 epochs, on the CPU.
const LinkBase = `
[data]
dataset = "embedded:cora"

[model]
name = "gcn"
hidden = 32
dropout = 0
input_dropout = 0

[train]
task = "link"
epochs = 5
weight_decay = 0

[link]
embedding = 16
`

// MustParse parses text with the --set assignments sets, with progress
// off, and fails the test on an error.
func MustParse(t testing.TB, text string, sets ...string) *config.Config {
	t.Helper()
	cfg, err := config.Parse("test.toml", []byte(text), sets...)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Output.Progress = "off"
	return cfg
}

// checkScorer checks a train.Scorer against the stepper's Predict (pred):
// the same classes, and logits of the rows asked for (some nodes, in
// reverse order) whose largest entry is the predicted class's.
func checkScorer(ctx context.Context, t *testing.T, sc train.Scorer, pred []int32, classes int) {
	t.Helper()
	var rows []int32
	for i := len(pred) - 1; i >= 0; i -= max(1, len(pred)/50) {
		rows = append(rows, int32(i))
	}
	got := make([]int32, len(pred))
	logits := make([]float64, len(rows)*classes)
	for i := range logits {
		logits[i] = math.NaN()
	}
	if err := sc.PredictScores(ctx, got, rows, logits); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, pred) {
		t.Errorf("PredictScores predicts other classes than Predict")
	}
	for k, node := range rows {
		row := logits[k*classes : (k+1)*classes]
		if slices.ContainsFunc(row, math.IsNaN) || slices.Max(row) != row[pred[node]] {
			t.Errorf("node %d: logits %v, but Predict gives class %d", node, row, pred[node])
			return
		}
	}
}
