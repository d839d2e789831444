package micro

import (
	"context"
	"fmt"
	"math"
	"strata/plugins/strategy/internal/memest"
	"strata/plugins/strategy/internal/testkit"
	"strings"
	"testing"
)

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
	for _, model := range testkit.BettyModels() {
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
			sets := append(testkit.ModelSets(c.model), `train.backend="sim"`, fmt.Sprintf("train.micro_batches=%d", max(c.k, 2)), `partition.name="betty-reg"`)
			e := testkit.TestEnv(t, sets...)
			cfg := testkit.MustParse(t, testkit.CoraBase, append(sets, `train.mode="micro"`)...)
			cfg.Strategy.Module.(*Micro).MicroBatches = c.k // K = 1: the whole batch over blocks
			mb, err := newMicroBatches(ctx, cfg, e)
			if err != nil {
				t.Fatal(err)
			}
			defer mb.Release()
			testkit.StepWithState(t, ctx, mb, e.Be)
			peak := e.Be.Stats().Peak[e.Tier]
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

// TestBettyMemoryModel checks costmodel.betty-memory's formula term by
// term, and its errors.
func TestBettyMemoryModel(t *testing.T) {
	ctx := context.Background()
	est, err := memest.New(ctx, testkit.TestEnv(t), "adam", 0, true)
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
			out, err := est.Cm.Predict(c.op, c.in)
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
				sets := append(testkit.ModelSets(model), `train.backend="sim"`, "train.micro_batches=4", `partition.name="betty-reg"`, `data.feature_dtype="`+fd+`"`)
				e := testkit.TestEnv(t, sets...)
				mb, err := newMicroBatches(ctx, testkit.MustParse(t, testkit.CoraBase, sets...), e)
				if err != nil {
					t.Fatal(err)
				}
				defer mb.Release()
				testkit.StepWithState(t, ctx, mb, e.Be)
				peaks[i] = e.Be.Stats().Peak[e.Tier]
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
