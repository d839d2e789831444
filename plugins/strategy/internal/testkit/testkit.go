// Package testkit holds the helpers the strategies' tests share: configs
// of the embedded Cora graph, the module host, step records and their
// comparison, the tolerances of the exactness tests. Only test files
// import it; a test package's TestMain is
// os.Exit(testkit.Main(m, host)).
package testkit

import (
	"context"
	"math"
	"strata/core/backend"
	"strata/core/config"
	"strata/core/engine"
	"strata/core/modhost"
	"strata/core/optim"
	"strata/core/train"
	"strata/core/train/strategytest"
	"strata/internal/floattol"
	"strata/internal/testcache"
	"strata/plugins/strategy/internal/options"
	"strata/plugins/strategy/internal/steprun"
	"testing"
)

const CoraBase = strategytest.CoraBase

func MustParse(t testing.TB, text string, sets ...string) *config.Config {
	t.Helper()
	return strategytest.MustParse(t, text, sets...)
}

// wasmCache is the compiled-module cache every test binary shares
// (internal/testcache), so each layer module compiles once per machine;
// newHost makes the module host over it (set by Main).
var (
	wasmCache string
	newHost   func(cacheDir string) modhost.Host
)

// Main runs a test package's tests with a module host made by host over
// the tests' shared compiled-module cache: a test package's TestMain is
// os.Exit(testkit.Main(m, host)).
func Main(m *testing.M, host func(cacheDir string) modhost.Host) int {
	wasmCache, newHost = testcache.MustWasmDir(), host
	return m.Run()
}

// TestHost returns the tests' module host.
func TestHost(t testing.TB) modhost.Host {
	return newHost(wasmCache)
}

// splitTol is the relative difference allowed between float64 runs that
// split the same steps differently (TestSplitsMatchFullGraph derives it).
const SplitTol = 1e-12

// SplitDropouts turn every dropout of model on: the input's, the hidden
// rows' and GAT's attention coefficients'.
func SplitDropouts(model string) []string {
	sets := []string{"model.dropout=0.5", "model.input_dropout=0.3"}
	if model == "gat" {
		sets = append(sets, "model.options.attn_dropout=0.4")
	}
	return sets
}

// StepsIn is runSteps in ctx (which may carry a communicator), returning
// its error.
func StepsIn(ctx context.Context, t *testing.T, steps int, cfg *config.Config) ([]StepRecord, error) {
	return StepsWith(ctx, t, steps, cfg, nil)
}

// StepsWith is StepsIn, calling prepare (when not nil) on the stepper
// before the first step.
func StepsWith(ctx context.Context, t *testing.T, steps int, cfg *config.Config, prepare func(train.Stepper)) ([]StepRecord, error) {
	env, _, closeEnv, err := train.NewEnv(ctx, cfg, TestHost(t))
	if err != nil {
		return nil, err
	}
	defer closeEnv()
	strat, err := train.StrategyFor(cfg)
	if err != nil {
		return nil, err
	}
	st, err := strat.NewStepper(ctx, env)
	if err != nil {
		return nil, err
	}
	defer st.Release()
	if prepare != nil {
		prepare(st)
	}
	opt, err := env.NewOptimizer(env.Backend)
	if err != nil {
		return nil, err
	}
	e := steprun.EnvOf(env)
	var out []StepRecord
	for s := range steps {
		var rec StepRecord
		loss, err := st.Epoch(ctx, uint64(s+1), func() error {
			rec.grads = map[string][]float64{}
			for _, p := range st.Params().List() {
				v, err := engine.DownloadFloats(e.Be, p.Grad)
				if err != nil {
					return err
				}
				rec.grads[p.Name] = v
			}
			return opt.Step(st.Params().List())
		})
		if err != nil {
			return nil, err
		}
		rec.Loss = loss
		if rec.Params, err = st.Params().Snapshot(); err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

// StepRecord is what one optimizer step leaves: the loss, the gradients
// it stepped with and the parameters after it.
type StepRecord struct {
	Loss          float64
	grads, Params map[string][]float64
}

// RunSteps builds the stepper of cfg's strategy and runs steps optimizer
// steps, recording each.
func RunSteps(t *testing.T, steps int, text string, sets ...string) []StepRecord {
	t.Helper()
	out, err := StepsIn(context.Background(), t, steps, MustParse(t, text, sets...))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// RelDiff is the largest difference between a and b relative to b's
// largest magnitude.
func RelDiff(a, b map[string][]float64) float64 {
	worst := 0.0
	for name, w := range b {
		scale := 0.0
		for _, x := range w {
			scale = max(scale, math.Abs(x))
		}
		g := a[name]
		if len(g) != len(w) {
			return math.Inf(1)
		}
		for i := range w {
			if d := math.Abs(g[i] - w[i]); d > 0 {
				worst = max(worst, d/max(scale, 1e-300))
			}
		}
	}
	return worst
}

// CompareSteps checks chunked steps against full-graph ones: the loss and
// the gradients to tol, the parameters after the step to ptol.
func CompareSteps(t *testing.T, got, want []StepRecord, tol, ptol float64) {
	t.Helper()
	worst := 0.0
	defer func() { t.Logf("largest relative difference %.3g", worst) }()
	for s := range want {
		worst = max(worst, math.Abs(got[s].Loss-want[s].Loss)/math.Abs(want[s].Loss), RelDiff(got[s].grads, want[s].grads), RelDiff(got[s].Params, want[s].Params))
		if d := math.Abs(got[s].Loss-want[s].Loss) / math.Abs(want[s].Loss); d > tol || math.IsNaN(d) {
			t.Errorf("step %d: loss %.17g, full graph %.17g (relative %.2g)", s, got[s].Loss, want[s].Loss, d)
		}
		if d := RelDiff(got[s].grads, want[s].grads); d > tol {
			t.Errorf("step %d: gradients differ by %.2g relative", s, d)
		}
		if d := RelDiff(got[s].Params, want[s].Params); d > ptol {
			t.Errorf("step %d: parameters differ by %.2g relative", s, d)
		}
	}
}

// CompareFloat32Step compares the first step of two float32 runs that
// differ only in the order of their sums: the loss and every gradient to
// 2γ_K (u = 2^-24) of a magnitude taken as 100 times the largest value (a
// loss, or a gradient tensor's largest element; order-one inputs, glorot
// parameters and normalised aggregations cancel by far less), K the
// longest sum (sumLength). Later steps are not compared: Adam's first
// update, lr·g/(|g|+ε), moves a parameter whose gradient is rounding
// noise by anything up to ±lr in either run, so float32 parameters after
// Adam have no bound below 2·lr per step; float64 runs carry the
// exactness (splitTol).
func CompareFloat32Step(t *testing.T, got, want StepRecord, k int) {
	t.Helper()
	tol := Float32StepTol(k)
	if d := math.Abs(got.Loss-want.Loss) / math.Abs(want.Loss); d > tol || math.IsNaN(d) {
		t.Errorf("loss %.9g, full graph %.9g (relative %.2g, bound %.2g)", got.Loss, want.Loss, d, tol)
	}
	if d := RelDiff(got.grads, want.grads); d > tol {
		t.Errorf("gradients differ by %.2g relative, bound %.2g", d, tol)
	}
}

// Float32StepTol is compareFloat32Step's relative bound for sums of at
// most k terms: 2γ_k (u = 2^-24) times 100.
func Float32StepTol(k int) float64 {
	return floattol.Orders(floattol.Gamma(k, floattol.UFloat32)) * 100
}

// ChunkedSumLength is the longest sum of a training step of the config
// sets select (the K of compareFloat32Step): a weight gradient's over the
// graph's rows, a GEMM's over the input features, or an aggregation's
// over a node's in-edges, plus the loss's mean over the training nodes.
func ChunkedSumLength(t *testing.T, text string, sets []string) int {
	t.Helper()
	env, _, closeEnv, err := train.NewEnv(context.Background(), MustParse(t, text, sets...), TestHost(t))
	if err != nil {
		t.Fatal(err)
	}
	defer closeEnv()
	e := steprun.EnvOf(env)
	deg := int64(0)
	for r := range e.Adjs.Adj.NumRows { // adj_self's rows: adj's and the loop
		deg = max(deg, e.Adjs.Adj.Indptr[r+1]-e.Adjs.Adj.Indptr[r]+1)
	}
	return max(e.DS.NumNodes, e.Dim, int(deg)) + len(e.DS.Train)
}

// TestEnv builds what Run builds before its stepper: dataset, backend,
// model and adjacencies.
func TestEnv(t *testing.T, sets ...string) steprun.Env {
	t.Helper()
	cfg := MustParse(t, CoraBase, sets...)
	env, _, closeEnv, err := train.NewEnv(context.Background(), cfg, TestHost(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeEnv)
	e := steprun.EnvOf(env)
	e.Seed = 1
	return e
}

// ModelSets selects a model for the tests: sage-lstm with a narrow LSTM
// (its default hidden size, in_dim = 1433 on Cora, needs ~500 MB).
func ModelSets(model string) []string {
	sets := []string{`model.name="` + model + `"`}
	if model == "sage-lstm" {
		sets = append(sets, "model.options.lstm_hidden=32")
	}
	return sets
}

// models lists the shipped models to check, with sage-lstm when it is
// registered.
func BettyModels() []string {
	out := []string{"gcn", "sage", "gat", "gin"}
	if _, err := modhost.Lookup("model.sage-lstm"); err == nil {
		out = append(out, "sage-lstm")
	}
	return out
}

// MaxRelDiff is the largest difference between two runs' parameters,
// relative to the largest magnitude of the parameter tensor it is in.
func MaxRelDiff(t *testing.T, a, b map[string][]float64) float64 {
	t.Helper()
	worst := 0.0
	for k, vb := range b {
		va, ok := a[k]
		if !ok || len(va) != len(vb) {
			t.Fatalf("parameter %s missing or of another size", k)
		}
		scale, diff := 1e-12, 0.0
		for i := range vb {
			scale, diff = max(scale, math.Abs(vb[i])), max(diff, math.Abs(va[i]-vb[i]))
		}
		worst = max(worst, diff/scale)
	}
	return worst
}

// NewTestStepper builds the environment and the stepper of cfg, released
// when the test ends.
func NewTestStepper(t *testing.T, cfg *config.Config) (*train.Env, train.Stepper) {
	t.Helper()
	ctx := context.Background()
	strat, err := train.StrategyFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	env, _, closeEnv, err := train.NewEnv(ctx, cfg, TestHost(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeEnv)
	st, err := strat.NewStepper(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Release)
	return env, st
}

// StepWithState runs one epoch of st with Adam on be, its state already
// allocated (a first step on zero gradients allocates it), so the peak
// holds every term of the estimate.
func StepWithState(t *testing.T, ctx context.Context, st train.Stepper, be backend.Backend) {
	t.Helper()
	opt, err := optim.New("adam", be, optim.Hyper{LR: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Params().ZeroGrads(); err != nil {
		t.Fatal(err)
	}
	if err := opt.Step(st.Params().List()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Epoch(ctx, 1, func() error { return opt.Step(st.Params().List()) }); err != nil {
		t.Fatal(err)
	}
}

// Splits returns the micro-batching figures of a result, under whichever
// strategy reported them (strategy.micro's, or embedded in
// strategy.minibatch's), or zero figures (K = 1) when none did.
func Splits(r *train.Result) options.SplitFigures {
	for _, f := range r.Figures {
		if s, ok := f.(interface{ Splits() *options.SplitFigures }); ok {
			return *s.Splits()
		}
	}
	return options.SplitFigures{MicroBatches: 1}
}
