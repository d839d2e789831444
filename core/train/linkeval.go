package train

import (
	"context"
	"fmt"
	"math"
	"slices"

	"strata/core/config"
	"strata/core/graph"
	"strata/core/metrics"
)

// linkEval is what an evaluation of a link task scores, in one call of
// the stepper's ScorePairs: the training sample, validation and test
// pairs, each split's positives then its negatives.
type linkEval struct {
	scorer LinkScorer
	pairs  graph.Pairs
	// cuts[2s], cuts[2s+1], cuts[2s+2] bound split s's positives and
	// negatives in pairs (s = 0 train, 1 valid, 2 test).
	cuts   [7]int
	scores []float64
	// margin is link.margin when the loss is the margin loss (0: BCE),
	// for valid_loss.
	margin float64
}

// newLinkEval plans the evaluations of task's split with st.
func newLinkEval(cfg *config.Config, st Stepper, task *LinkTask) (*linkEval, error) {
	sc, ok := st.(LinkScorer)
	if !ok {
		return nil, cfg.KeyError(fmt.Sprintf("train.task = \"link\": train.mode = %q gives no pair scores (its stepper is no train.LinkScorer); use train.mode = %s", cfg.Train.Mode, modesUsing(func(u Uses) bool { return u.Link })), "train", "task")
	}
	s := task.Split
	e := &linkEval{scorer: sc}
	for i, p := range []graph.Pairs{s.TrainEval, s.TrainEvalNeg, s.Valid, s.ValidNeg, s.Test, s.TestNeg} {
		e.pairs = e.pairs.Append(p)
		e.cuts[i+1] = e.pairs.Len()
	}
	e.scores = make([]float64, e.pairs.Len())
	if task.Loss == "margin" {
		e.margin = task.Margin
	}
	return e, nil
}

// split returns the positive and negative scores of split s.
func (e *linkEval) split(s int) (pos, neg []float64) {
	return e.scores[e.cuts[2*s]:e.cuts[2*s+1]], e.scores[e.cuts[2*s+1]:e.cuts[2*s+2]]
}

// evaluate scores every pair and returns the ROC-AUC of the training
// sample, validation and test, and the figures: valid_loss and
// valid_<m>, test_<m> of each link metric of ms.
func (e *linkEval) evaluate(ctx context.Context, ms []metrics.Metric) (tr, va, te float64, figs map[string]float64, err error) {
	if err := e.scorer.ScorePairs(ctx, e.pairs, e.scores); err != nil {
		return 0, 0, 0, nil, err
	}
	auc := func(s int) float64 { pos, neg := e.split(s); return metrics.LinkAUC(pos, neg) }
	figs = map[string]float64{}
	if pos, neg := e.split(1); len(pos) > 0 {
		figs["valid_loss"] = pairLoss(pos, neg, e.margin)
	}
	for _, m := range ms {
		for s, prefix := range map[int]string{1: "valid_", 2: "test_"} {
			pos, neg := e.split(s)
			if len(pos) > 0 {
				figs[prefix+m.Name] = m.Compute(metrics.Split{Task: metrics.TaskLink, Pos: pos, Neg: neg})
			}
		}
	}
	return auc(0), auc(1), auc(2), figs, nil
}

// pairLoss is the training loss of scores: the mean binary cross-entropy
// of the positives (target 1) and negatives (target 0), or with margin >
// 0 the mean margin loss of every positive against every negative (the
// held-out negatives belong to no positive).
func pairLoss(pos, neg []float64, margin float64) float64 {
	if margin > 0 {
		var sum float64
		for _, p := range pos {
			for _, n := range neg {
				sum += max(0, margin-p+n)
			}
		}
		return sum / float64(len(pos)*len(neg))
	}
	// log(1+e^-x) for a positive, log(1+e^x) for a negative, stably.
	softplus := func(x float64) float64 { return max(x, 0) + math.Log1p(math.Exp(-math.Abs(x))) }
	var sum float64
	for _, p := range pos {
		sum += softplus(-p)
	}
	for _, n := range neg {
		sum += softplus(n)
	}
	return sum / float64(len(pos)+len(neg))
}

// linkMetrics are the metrics a link task reports: train.metrics, or
// when it names none, every registered link metric but ROC-AUC (the
// *_acc fields).
func linkMetrics(cfg *config.Config) []metrics.Metric {
	names := cfg.Train.Metrics
	if len(names) == 0 {
		for _, n := range metrics.Names() {
			if m, _ := metrics.Lookup(n); m.Applies(metrics.TaskLink) && n != "roc_auc" {
				names = append(names, n)
			}
		}
	}
	var out []metrics.Metric
	for _, n := range names {
		if m, ok := metrics.Lookup(n); ok && m.Applies(metrics.TaskLink) && !slices.ContainsFunc(out, func(x metrics.Metric) bool { return x.Name == n }) {
			out = append(out, m)
		}
	}
	return out
}
