package strategy

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"strata/core/backend"
	"strata/core/train"
)

// testEnv builds what Run builds before its stepper: dataset, backend,
// model and adjacencies.
func testEnv(t *testing.T, sets ...string) stepEnv {
	t.Helper()
	cfg := mustParse(t, coraBase, sets...)
	env, _, closeEnv, err := train.NewEnv(context.Background(), cfg, testHost(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeEnv)
	e := envOf(env)
	e.seed = 1
	return e
}

// TestMemEstimateCalibration trains micro-batches on a simulated device
// and compares the measured peak of the device tier with the estimate of
// the largest micro-batch (within 10%; strata's estimate is exact by
// construction, so the test would catch any drift from the engine), and
// checks that the peak falls as K grows.
func TestMemEstimateCalibration(t *testing.T) {
	ctx := context.Background()
	type row struct {
		model string
		k     int
	}
	var rows []row
	for _, model := range bettyModels() {
		ks := []int{4}
		if model == "sage" || model == "sage-lstm" { // mean and LSTM aggregators
			ks = []int{1, 2, 4, 8, 16}
		}
		for _, k := range ks {
			rows = append(rows, row{model, k})
		}
	}
	peaks := map[string][]int64{}
	for _, c := range rows {
		t.Run(fmt.Sprintf("%s/k=%d", c.model, c.k), func(t *testing.T) {
			sets := append(modelSets(c.model), `train.backend="sim"`, fmt.Sprintf("train.micro_batches=%d", max(c.k, 2)), `partition.name="betty-reg"`)
			e := testEnv(t, sets...)
			cfg := mustParse(t, coraBase, sets...)
			cfg.Train.MicroBatches = c.k // K = 1: the whole batch over blocks
			mb, err := newMicroBatches(ctx, cfg, e)
			if err != nil {
				t.Fatal(err)
			}
			defer mb.release()
			stepWithState(t, ctx, mb, e.be)
			peak := e.be.Stats().Peak[e.tier]
			rel := float64(mb.estPeak-peak) / float64(peak)
			t.Logf("%s K=%d: measured peak %d, estimated %d (%+.2f%%)", c.model, c.k, peak, mb.estPeak, 100*rel)
			if math.Abs(rel) > 0.10 {
				t.Errorf("estimate %d off the measured peak %d by %.1f%%", mb.estPeak, peak, 100*rel)
			}
			peaks[c.model] = append(peaks[c.model], peak)
		})
	}
	for model, p := range peaks {
		for i := 1; i < len(p); i++ {
			if p[i] >= p[i-1] {
				t.Errorf("%s: peak %d with K=%d is not below %d with K=%d", model, p[i], 1<<i, p[i-1], 1<<(i-1))
			}
		}
	}
}

// TestMemEstimateInferenceAndSampled compares the estimate with the
// measured peak of an evaluation forward in chunks and of micro-batches of
// a sampled mini-batch.
func TestMemEstimateInferenceAndSampled(t *testing.T) {
	ctx := context.Background()
	models := []string{"sage", "gat"}
	if slices.Contains(bettyModels(), "sage-lstm") {
		models = append(models, "sage-lstm")
	}
	for _, model := range models {
		opts := modelSets(model)
		t.Run(model+"/inference", func(t *testing.T) {
			e := testEnv(t, append(opts, `train.backend="sim"`)...)
			r, err := newBlockRunner(e, 4)
			if err != nil {
				t.Fatal(err)
			}
			defer r.release()
			est, err := newMemEstimator(ctx, e, "sgd", 0, false)
			if err != nil {
				t.Fatal(err)
			}
			defer est.Close()
			var worst int64
			for _, nodes := range r.eval {
				blocks, err := r.full.Sample(ctx, e.adjs.Adj, nodes, 0)
				if err != nil {
					t.Fatal(err)
				}
				m, err := est.infer(blocks)
				if err != nil {
					t.Fatal(err)
				}
				worst = max(worst, m.Peak)
			}
			if err := r.predict(ctx, make([]int32, e.ds.NumNodes)); err != nil {
				t.Fatal(err)
			}
			peak := e.be.Stats().Peak[e.tier]
			t.Logf("inference: measured %d, estimated %d (%+.2f%%)", peak, worst, 100*float64(worst-peak)/float64(peak))
			if math.Abs(float64(worst-peak)) > 0.1*float64(peak) {
				t.Errorf("estimate %d, measured %d", worst, peak)
			}
		})
		t.Run(model+"/sampled", func(t *testing.T) {
			sets := append(slices.Clone(opts), `train.backend="sim"`, `train.mode="minibatch"`, `sampler.name="uniform"`, "sampler.fanouts=[5, 10]",
				"train.batch_size=140", "train.micro_batches=4", `partition.name="betty-reg"`)
			e := testEnv(t, sets...)
			mb, err := newMiniBatches(ctx, mustParse(t, coraBase, sets...), e)
			if err != nil {
				t.Fatal(err)
			}
			defer mb.release()
			stepWithState(t, ctx, mb, e.be)
			peak := e.be.Stats().Peak[e.tier]
			est := mb.micro.estPeak
			t.Logf("sampled: measured %d, estimated %d (%+.2f%%)", peak, est, 100*float64(est-peak)/float64(peak))
			if math.Abs(float64(est-peak)) > 0.1*float64(peak) {
				t.Errorf("estimate %d, measured %d", est, peak)
			}
		})
	}
}

// modelSets selects a model for the tests: sage-lstm with a narrow LSTM
// (its default hidden size, in_dim = 1433 on Cora, needs ~500 MB).
func modelSets(model string) []string {
	sets := []string{`model.name="` + model + `"`}
	if model == "sage-lstm" {
		sets = append(sets, "model.options.lstm_hidden=32")
	}
	return sets
}

// stepWithState runs one epoch of st with Adam on be, its state already
// allocated (a first step on zero gradients allocates it), so the peak
// holds every term of the estimate.
func stepWithState(t *testing.T, ctx context.Context, st train.Stepper, be backend.Backend) {
	t.Helper()
	opt, err := train.NewOptimizer("adam", be, 0.01, 0, 0)
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

// TestBettyMemoryModel checks costmodel.betty-memory's formula term by
// term, and its errors.
func TestBettyMemoryModel(t *testing.T) {
	ctx := context.Background()
	est, err := newMemEstimator(ctx, testEnv(t), "adam", 0, true)
	if err != nil {
		t.Fatal(err)
	}
	defer est.Close()
	in := func(set map[int]float64) []float64 {
		v := make([]float64, 16)
		for i, x := range set {
			v[i] = x
		}
		return v
	}
	cases := []struct {
		name string
		op   int32
		in   []float64
		want [4]float64 // peak, resident, data, activations
		err  string
	}{
		{"parameters, gradients, Adam", 0, in(map[int]float64{1: 100, 2: 2}), [4]float64{1600, 1600, 0, 0}, ""},
		{"float64, SGD", 0, in(map[int]float64{0: 8, 1: 100}), [4]float64{1600, 1600, 0, 0}, ""},
		{"state and a cache", 0, in(map[int]float64{14: 1040}), [4]float64{1040, 1040, 0, 0}, ""},
		{"gathered from a cache: the step", 0, in(map[int]float64{3: 100, 4: 1, 5: 100, 15: 10}), [4]float64{400 + 8 + 2400, 0, 2808, 0}, ""},
		{"gathered from a cache: the gather", 0, in(map[int]float64{3: 1000, 15: 100}), [4]float64{8000 + 800, 0, 4000, 0}, ""},
		{"features and labels", 0, in(map[int]float64{3: 1000, 4: 10}), [4]float64{4080, 0, 4080, 0}, ""},
		{"blocks", 0, in(map[int]float64{5: 100, 6: 30}), [4]float64{100*24 + 240, 0, 100*24 + 240, 0}, ""},
		{"activations", 0, in(map[int]float64{7: 10, 8: 20, 9: 30, 10: 40, 11: 50}), [4]float64{600, 0, 0, 600}, ""},
		{"LSTM intermediates", 0, in(map[int]float64{12: 100, 13: 6}), [4]float64{2400, 0, 0, 2400}, ""},
		{"inference drops gradients, masks, scratch", 1, in(map[int]float64{4: 10, 7: 10, 8: 20, 9: 30, 10: 40}), [4]float64{80, 0, 40, 40}, ""},
		{"negative", 0, in(map[int]float64{3: -1}), [4]float64{}, "invalid inputs"},
		{"unknown op", 7, in(nil), [4]float64{}, "unknown op 7"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := est.cm.Predict(c.op, c.in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out != c.want {
				t.Errorf("got %v, want %v", out, c.want)
			}
		})
	}
}

// TestMemEstimateHalfFeatures: with 16-bit feature rows
// (data.feature_dtype) the estimate still follows the measured peak of
// the device tier (within 10%, as TestMemEstimateCalibration), and the
// peak falls below the float32 run's: the input rows take half the bytes
// (gcn reads them directly; sage widens them into a planned value).
func TestMemEstimateHalfFeatures(t *testing.T) {
	ctx := context.Background()
	for _, model := range []string{"gcn", "sage"} {
		var peaks [2]int64
		for i, fd := range []string{"float32", "float16"} {
			t.Run(model+"/"+fd, func(t *testing.T) {
				sets := append(modelSets(model), `train.backend="sim"`, "train.micro_batches=4", `partition.name="betty-reg"`, `data.feature_dtype="`+fd+`"`)
				e := testEnv(t, sets...)
				mb, err := newMicroBatches(ctx, mustParse(t, coraBase, sets...), e)
				if err != nil {
					t.Fatal(err)
				}
				defer mb.release()
				stepWithState(t, ctx, mb, e.be)
				peaks[i] = e.be.Stats().Peak[e.tier]
				rel := float64(mb.estPeak-peaks[i]) / float64(peaks[i])
				t.Logf("%s %s: measured peak %d, estimated %d (%+.2f%%)", model, fd, peaks[i], mb.estPeak, 100*rel)
				if math.Abs(rel) > 0.001 { // exact but for Betty's constant terms, as in float32
					t.Errorf("estimate %d off the measured peak %d by %.1f%%", mb.estPeak, peaks[i], 100*rel)
				}
			})
		}
		if peaks[1] >= peaks[0] {
			t.Errorf("%s: float16 features peak at %d bytes, float32 at %d", model, peaks[1], peaks[0])
		}
	}
}
