package train

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"strata/core/config"
)

// scoringStepper is fakeStepper with logits: after epoch ep every node's
// logits are (0, z[ep]), so each predicts class 1 while z > 0 and each
// validation node (class 1) has the loss ln(1 + e^-z).
type scoringStepper struct {
	fakeStepper
	z []float64
}

func (s *scoringStepper) PredictScores(_ context.Context, pred, rows []int32, logits []float64) error {
	z := s.z[s.ep]
	for i := range pred {
		pred[i] = 0
		if z > 0 {
			pred[i] = 1
		}
	}
	for k := range rows {
		logits[2*k], logits[2*k+1] = 0, z
	}
	return nil
}

// softplusNeg is the hand formula of a class-1 node's loss: ln(1 + e^-z).
func softplusNeg(z float64) float64 { return math.Log1p(math.Exp(-z)) }

// TestEarlyStopOnValidLoss: with train.early_stop_metric = "valid_loss"
// the best epoch is the one of the smallest loss and patience counts from
// it; by hand, z = 1, 2, 3, 2.5, 2.9, 2.8, ... gives the smallest loss
// at epoch 2 and, with patience 3, a stop after epoch 5. Watching
// valid_acc (1 at every epoch), the first epoch stays the best and the
// run stops after epoch 3. output.csv's valid_loss is ln(1 + e^-z).
func TestEarlyStopOnValidLoss(t *testing.T) {
	z := []float64{1, 2, 3, 2.5, 2.9, 2.8, 5, 6, 7, 8}
	for _, c := range []struct {
		key             string
		best, lastEpoch int
	}{
		{`early_stop_metric = "valid_loss"`, 2, 5},
		{"", 0, 3},
		{`early_stop_metric = "valid_acc"`, 0, 3},
	} {
		t.Run(c.key, func(t *testing.T) {
			cfg := testConfig(t, "epochs = 10", "patience = 3", c.key)
			l := testLoop(t, cfg, &scoringStepper{z: z})
			if err := l.run(context.Background(), Options{}); err != nil {
				t.Fatal(err)
			}
			if l.res.BestEpoch != c.best || l.res.Epochs != c.lastEpoch+1 {
				t.Errorf("best epoch %d, %d epochs; want %d, %d", l.res.BestEpoch, l.res.Epochs, c.best, c.lastEpoch+1)
			}
			rows := csvRowsOf(t, cfg.CSVPath())
			col := slices.Index(rows[0], "valid_loss")
			if col != len(rows[0])-1 {
				t.Fatalf("valid_loss is column %d of %q, want the last", col, rows[0])
			}
			for _, r := range rows[1:] {
				ep, _ := strconv.Atoi(r[0])
				got, err := strconv.ParseFloat(r[col], 64)
				// the CSV keeps 6 digits
				if want := softplusNeg(z[ep]); err != nil || math.Abs(got-want) > 1e-6*want {
					t.Errorf("epoch %d: valid_loss %q, want %.6g", ep, r[col], want)
				}
			}
		})
	}
}

// TestReportedMetrics: train.metrics puts valid_<m> and test_<m> of the
// best epoch into the result and output.csv; accuracy alone adds nothing.
func TestReportedMetrics(t *testing.T) {
	cfg := testConfig(t, "epochs = 3", `metrics = ["accuracy", "macro_f1", "loss"]`)
	l := testLoop(t, cfg, &scoringStepper{z: []float64{1, 3, 2}})
	if err := l.run(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	// every node is predicted class 1 and is of class 1: F1 1 on both splits
	want := map[string]float64{"valid_macro_f1": 1, "test_macro_f1": 1, "valid_loss": softplusNeg(1), "test_loss": softplusNeg(1)}
	for k, v := range want {
		if got, ok := l.res.Metrics[k]; !ok || math.Abs(got-v) > 1e-15 {
			t.Errorf("result %s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	if len(l.res.Metrics) != len(want) {
		t.Errorf("result metrics %v, want the keys of %v", l.res.Metrics, want)
	}
	header := csvRowsOf(t, cfg.CSVPath())[0]
	if got := header[len(header)-4:]; !slices.Equal(got, []string{"valid_loss", "valid_macro_f1", "test_macro_f1", "test_loss"}) {
		t.Errorf("last columns %q", got)
	}
	b, _ := resultJSON(l.res)
	if !strings.Contains(b, `"metrics":{`) {
		t.Errorf("result line without metrics: %s", b)
	}
	plain := testConfig(t, "epochs = 3")
	l = testLoop(t, plain, &scoringStepper{z: []float64{1, 3, 2}})
	if err := l.run(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := resultJSON(l.res); strings.Contains(b, "metrics") {
		t.Errorf("a run without train.metrics reports metrics: %s", b)
	}
}

func resultJSON(r *Result) (string, error) {
	b, err := r.MarshalJSON()
	return string(b), err
}

// TestMetricsConfigErrors: an unknown metric, a watched figure the run
// does not report, and one that needs logits from a stepper without them
// are refused, naming the key and the choices.
func TestMetricsConfigErrors(t *testing.T) {
	for _, c := range []struct {
		lines []string
		want  []string
	}{
		{[]string{`metrics = ["f1"]`}, []string{"train.metrics", `"f1"`, `"macro_f1"`, `"roc_auc"`}},
		{[]string{`early_stop_metric = "valid_macro_f1"`}, []string{"train.early_stop_metric", `"valid_acc", "valid_loss"`}},
		{[]string{`metrics = ["roc_auc"]`, `early_stop_metric = "valid_f1"`}, []string{`"valid_acc", "valid_loss", "valid_roc_auc"`}},
	} {
		cfg := testConfig(t, c.lines...)
		err := checkMetrics(cfg)
		var ce *config.Error
		if err == nil || !errors.As(err, &ce) {
			t.Errorf("%v: error %v, want a *config.Error", c.lines, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %q does not name %s", c.lines, err, w)
			}
		}
	}
	for _, lines := range [][]string{{`early_stop_metric = "valid_loss"`}, {`metrics = ["roc_auc"]`}} {
		cfg := testConfig(t, lines...)
		l := testLoop(t, cfg, &fakeStepper{valid: []int{4}})
		err := l.run(context.Background(), Options{})
		if err == nil || !strings.Contains(err.Error(), "logits") || !strings.Contains(err.Error(), "train.") {
			t.Errorf("%v without logits: %v", lines, err)
		}
	}
}

// TestWatchedBetter: the direction of each figure, and NaN (a figure a
// split could not give) never better, always beaten.
func TestWatchedBetter(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		lower   bool
		v, best float64
		want    bool
	}{
		{false, 0.8, 0.7, true}, {false, 0.7, 0.7, false}, {false, 0.6, 0.7, false},
		{true, 0.6, 0.7, true}, {true, 0.7, 0.7, false}, {true, 0.8, 0.7, false},
		{false, 0.1, nan, true}, {true, 5, nan, true}, {false, nan, 0.5, false}, {true, nan, nan, false},
	} {
		if got := (watched{key: "valid_x", lower: c.lower}).better(c.v, c.best); got != c.want {
			t.Errorf("lower %v: better(%v, %v) = %v, want %v", c.lower, c.v, c.best, got, c.want)
		}
	}
}
