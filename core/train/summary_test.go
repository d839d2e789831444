package train

import (
	"strings"
	"testing"
	"time"
)

// TestProgressStatus: the bar names the epoch by its index from 0, as
// output.csv does, and shows no best figure before an evaluation has
// picked a best epoch.
func TestProgressStatus(t *testing.T) {
	res := &Result{BestEpoch: -1}
	b := &bestModel{res: res}
	rec := &EpochRecord{Epoch: 0, Loss: 1.5, TimeS: 0.25}
	if got, want := progressStatus(rec, res, b), "epoch 0 loss 1.5000 0.25s/epoch"; got != want {
		t.Errorf("before an evaluation: %q, want %q", got, want)
	}
	res.BestEpoch, res.BestValidAcc = 3, 0.792
	rec.Epoch = 4
	if got, want := progressStatus(rec, res, b), "epoch 4 loss 1.5000 best valid 0.792 at epoch 3 0.25s/epoch"; got != want {
		t.Errorf("after: %q, want %q", got, want)
	}
	b.watch, b.score = watched{key: "valid_loss", lower: true}, 0.4312
	if got := progressStatus(rec, res, b); !strings.Contains(got, "best valid_loss 0.4312 at epoch 3") {
		t.Errorf("watching valid_loss: %q", got)
	}
}

// TestSummaryLine: the summary for people says how the run ended and
// numbers the best epoch as best_epoch does.
func TestSummaryLine(t *testing.T) {
	for _, c := range []struct {
		res  Result
		want string
	}{
		{Result{Epochs: 200, BestEpoch: 87, BestValidAcc: 0.7921, TestAcc: 0.8109},
			"strata: 200 epochs in 12.3 s, best valid 0.792 at epoch 87, test 0.811"},
		{Result{Epochs: 120, BestEpoch: 20, BestValidAcc: 0.5, TestAcc: 0.25, Metrics: map[string]float64{"valid_macro_f1": 0.5, "test_macro_f1": 0.25}},
			"strata: 120 of 200 epochs (early stopping) in 12.3 s, best valid 0.500 at epoch 20, test 0.250, test_macro_f1 0.250, valid_macro_f1 0.500"},
		{Result{Status: StatusInterrupted, Epochs: 3, BestEpoch: -1},
			"strata: interrupted after 3 of 200 epochs in 12.3 s, no evaluation"},
		{Result{Epochs: 200, BestEpoch: 5, TestAcc: 0.5, noValid: true},
			"strata: 200 epochs in 12.3 s, best epoch 5, test 0.500"},
		{Result{Targets: "regression", Epochs: 200, BestEpoch: 9, BestValidAcc: -0.25, TestAcc: 0.5},
			"strata: 200 epochs in 12.3 s, best valid R² -0.250 at epoch 9, test R² 0.500"},
		{Result{Targets: "multi-label", Epochs: 200, BestEpoch: 9, BestValidAcc: 0.75, TestAcc: 0.5},
			"strata: 200 epochs in 12.3 s, best valid label accuracy 0.750 at epoch 9, test label accuracy 0.500"},
	} {
		if got := c.res.SummaryLine(200, 12300*time.Millisecond); got != c.want {
			t.Errorf("summary\n got %q\nwant %q", got, c.want)
		}
	}
}
