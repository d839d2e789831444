package strategytests

import (
	"context"
	"math"
	"reflect"
	"strata/core/train"
	"strata/internal/floattol"
	"strata/plugins/strategy/internal/testkit"
	"strata/plugins/strategy/minibatch"
	"strings"
	"testing"
)

// simMiniBatch trains 2 epochs of mini-batch SAGE on a simulated device
// with a feature cache.
func simMiniBatch(t *testing.T, sets ...string) *train.Result {
	t.Helper()
	base := []string{`model.name="sage"`, `train.mode="minibatch"`, `sampler.name="uniform"`, "sampler.fanouts=[5, 10]",
		"train.batch_size=70", "train.epochs=2", `train.backend="sim"`, `cache.name="degree"`, "cache.capacity=0.1"}
	r, err := train.Run(context.Background(), testkit.MustParse(t, testkit.CoraBase, append(base, sets...)...), train.Options{Host: testkit.TestHost(t)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestPredictedTimes checks that the kernel times come from the cost model:
// with no launch overhead the roofline is inversely proportional to the
// device's throughput and bandwidth, so doubling both halves every
// device's predicted compute time exactly.
func TestPredictedTimes(t *testing.T) {
	base := simMiniBatch(t, "devices.launch_us=0")
	fast := simMiniBatch(t, "devices.launch_us=0", "devices.peak_gflops=31400", "devices.mem_gbps=1800")
	none := simMiniBatch(t, `devices.cost_model="none"`)
	if base.PredictedEpochS <= 0 || len(base.PredictedComputeS) != 1 || base.PredictedComputeS["device0"] <= 0 {
		t.Fatalf("no prediction: epoch %v, compute %v", base.PredictedEpochS, base.PredictedComputeS)
	}
	if r := base.PredictedComputeS["device0"] / fast.PredictedComputeS["device0"]; math.Abs(r-2) > 1e-9 {
		t.Errorf("twice the device: compute time ratio %v, want 2", r)
	}
	if len(none.PredictedComputeS) != 0 || none.PredictedEpochS <= 0 || none.PredictedEpochS >= base.PredictedEpochS {
		t.Errorf("cost_model none: epoch %v (with kernels %v), compute %v", none.PredictedEpochS, base.PredictedEpochS, none.PredictedComputeS)
	}
	again := simMiniBatch(t, "devices.launch_us=0")
	if again.PredictedEpochS != base.PredictedEpochS || !reflect.DeepEqual(again.PredictedComputeS, base.PredictedComputeS) {
		t.Errorf("predictions differ between identical runs: %v %v vs %v %v", again.PredictedEpochS, again.PredictedComputeS, base.PredictedEpochS, base.PredictedComputeS)
	}
}

func TestPredictionErrors(t *testing.T) {
	cases := []struct {
		sets []string
		err  string
	}{
		{[]string{`train.backend="sim"`, `devices.cost_model="tpu"`}, `devices.cost_model = "tpu" is not a registered cost model`},
		{[]string{`train.backend="sim"`, `devices.cost_model="betty-memory"`}, `is strategy.micro's own model, which estimates something other than a kernel's time`},
		{[]string{`devices.peak_gflops=100`}, "devices.peak_gflops describes simulated devices"},
	}
	for _, c := range cases {
		_, err := train.Run(context.Background(), testkit.MustParse(t, testkit.CoraBase, c.sets...), train.Options{Host: testkit.TestHost(t)})
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%v: error %v, want %q", c.sets, err, c.err)
		}
	}
}

// TestOverlap trains with the transfer stage on its own goroutine and
// inline: the same losses, accuracies and bytes, and a predicted epoch no
// longer than the sequential one.
func TestOverlap(t *testing.T) {
	for _, devices := range [][]string{nil, {`devices.preset="nvlink-clique-4"`}} {
		seq := simMiniBatch(t, devices...)
		ovl := simMiniBatch(t, append([]string{"minibatch.overlap=true"}, devices...)...)
		if ovl.FinalLoss != seq.FinalLoss || ovl.TestAcc != seq.TestAcc || !reflect.DeepEqual(ovl.TrafficByPurpose, seq.TrafficByPurpose) {
			t.Errorf("%v: overlap changed the run: loss %v vs %v, acc %v vs %v, bytes %v vs %v", devices,
				ovl.FinalLoss, seq.FinalLoss, ovl.TestAcc, seq.TestAcc, ovl.TrafficByPurpose, seq.TrafficByPurpose)
		}
		if !(ovl.PredictedEpochS < seq.PredictedEpochS) || ovl.StageTimeS <= 0 {
			t.Errorf("%v: predicted epoch %v with overlap, %v without; stage %v s", devices, ovl.PredictedEpochS, seq.PredictedEpochS, ovl.StageTimeS)
		}
		h := ovl.Figures["minibatch"].(*minibatch.Figures).TierHitRates // three ratios, each rounded, then added: within 3γ_3 of 1
		if math.Abs(h["local"]+h["peer"]+h["host"]-1) > 3*floattol.Gamma(3, floattol.UFloat64) || h["local"] != ovl.Figures["minibatch"].(*minibatch.Figures).CacheHitRate || (len(devices) > 0) != (h["peer"] > 0) {
			t.Errorf("%v: hit rates per tier %v, cache hit rate %v", devices, h, ovl.Figures["minibatch"].(*minibatch.Figures).CacheHitRate)
		}
		if !reflect.DeepEqual(ovl.PredictedComputeS, seq.PredictedComputeS) {
			t.Errorf("%v: kernel times differ: %v vs %v", devices, ovl.PredictedComputeS, seq.PredictedComputeS)
		}
	}
}

// TestPhasePeaks checks the peaks of the loop's phases: the training
// steps' falls with the number of micro-batches while the evaluation's
// does not depend on it, and the run's covers both.
func TestPhasePeaks(t *testing.T) {
	var prev *train.Result
	for _, k := range []int{1, 2, 4} {
		sets := []string{`train.backend="sim"`, "train.epochs=2"}
		if k > 1 {
			sets = append(sets, "train.micro_batches="+string(rune('0'+k)), `partition.name="betty-reg"`)
		}
		r, err := train.Run(context.Background(), testkit.MustParse(t, testkit.CoraBase, sets...), train.Options{Host: testkit.TestHost(t)})
		if err != nil {
			t.Fatal(err)
		}
		tr, ev, all := r.TrainPeakTierBytes["device0"], r.EvalPeakTierBytes["device0"], r.PeakTierBytes["device0"]
		if tr <= 0 || ev <= 0 || all < max(tr, ev) {
			t.Errorf("K=%d: train peak %d, eval peak %d, run peak %d", k, tr, ev, all)
		}
		if prev != nil && tr >= prev.TrainPeakTierBytes["device0"] {
			t.Errorf("K=%d: train peak %d, not below %d", k, tr, prev.TrainPeakTierBytes["device0"])
		}
		prev = r
	}
}

// TestPredictOutputsAgree: every block-based strategy gives, for the same
// (initial) parameters, the logits and last hidden layer of full-graph
// inference, node for node (float64, to summation-order rounding).
func TestPredictOutputsAgree(t *testing.T) {
	outputs := func(t *testing.T, sets ...string) (logits, hidden []float64, width int) {
		t.Helper()
		_, st := testkit.NewTestStepper(t, testkit.MustParse(t, testkit.CoraBase, append([]string{`train.dtype="float64"`, `model.name="sage"`}, sets...)...))
		op, ok := st.(train.OutputPredictor)
		if !ok {
			t.Fatalf("%v: the stepper gives no outputs", sets)
		}
		var err error
		if logits, hidden, width, err = op.PredictOutputs(context.Background()); err != nil {
			t.Fatal(err)
		}
		return logits, hidden, width
	}
	wantL, wantH, wantW := outputs(t)
	if wantW == 0 || len(wantH) == 0 {
		t.Fatalf("full graph: no hidden layer (width %d)", wantW)
	}
	for _, sets := range [][]string{
		{"train.micro_batches=2", `partition.name="range"`},
		{`train.mode="minibatch"`, `sampler.name="uniform"`, "sampler.fanouts=[5, 5]", "train.batch_size=140"},
	} {
		l, h, w := outputs(t, sets...)
		if w != wantW || len(l) != len(wantL) || len(h) != len(wantH) {
			t.Fatalf("%v: width %d, %d logits, %d hidden; full graph %d, %d, %d", sets, w, len(l), len(h), wantW, len(wantL), len(wantH))
		}
		for _, c := range []struct {
			name      string
			got, want []float64
		}{{"logits", l, wantL}, {"hidden", h, wantH}} {
			for i := range c.want {
				if d := math.Abs(c.got[i] - c.want[i]); d > testkit.SplitTol*(1+math.Abs(c.want[i])) { // float64 sums in another order
					t.Errorf("%v: %s[%d] = %v, full graph %v", sets, c.name, i, c.got[i], c.want[i])
					break
				}
			}
		}
	}
}
