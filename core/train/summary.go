package train

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"strata/core/config"
)

// finished reports whether the checkpoint is of a run of cfg that had
// finished: every epoch ran, or train.patience had run out.
func (c *checkpoint) finished(cfg *config.Config) bool {
	m := c.meta
	return m.NextEpoch >= cfg.Train.Epochs || cfg.Train.Patience > 0 && m.SinceBest >= cfg.Train.Patience
}

// SummaryLine is the run's result for people, one line that strata train
// prints on stderr after the result line: how many of the planned epochs
// ran and how the run ended, the wall time, the best epoch (numbered from
// 0, as best_epoch) with its validation and test accuracy and the
// figures of train.metrics (R² or the element-wise accuracy for
// regression and multi-label targets). For example:
//
//	strata: 200 epochs in 12.3 s, best valid 0.792 at epoch 87, test 0.811
func (r *Result) SummaryLine(planned int, elapsed time.Duration) string {
	var b strings.Builder
	b.WriteString("strata: ")
	switch {
	case r.Status != "":
		fmt.Fprintf(&b, "%s after %d of %d epochs", r.Status, r.Epochs, planned)
	case r.Epochs < planned:
		fmt.Fprintf(&b, "%d of %d epochs (early stopping)", r.Epochs, planned)
	default:
		fmt.Fprintf(&b, "%d epochs", r.Epochs)
	}
	fmt.Fprintf(&b, " in %.1f s", elapsed.Seconds())
	if r.BestEpoch < 0 {
		b.WriteString(", no evaluation")
		return b.String()
	}
	figure := map[string]string{"regression": " R²", "multi-label": " label accuracy", "link": " ROC-AUC"}[r.Targets]
	if r.noValid {
		fmt.Fprintf(&b, ", best epoch %d", r.BestEpoch)
	} else {
		fmt.Fprintf(&b, ", best valid%s %.3f at epoch %d", figure, r.BestValidAcc, r.BestEpoch)
	}
	if !r.noTest {
		fmt.Fprintf(&b, ", test%s %.3f", figure, r.TestAcc)
	}
	for _, k := range slices.Sorted(maps.Keys(r.Metrics)) {
		fmt.Fprintf(&b, ", %s %.3f", k, r.Metrics[k])
	}
	return b.String()
}
