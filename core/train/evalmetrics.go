package train

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"strata/core/config"
	"strata/core/graph"
	"strata/core/metrics"
	"strata/core/registry"
)

// Scorer is a Stepper whose evaluation also gives logits: PredictScores
// writes the predicted class of every node into pred, as Predict does,
// and from the same forward pass (dropout off) the logits of the nodes
// of rows into logits (len(rows) × classes, row-major, in rows' order).
// The loop computes valid_loss and the metrics that read logits
// (train.metrics) from them.
type Scorer interface {
	PredictScores(ctx context.Context, pred []int32, rows []int32, logits []float64) error
}

// validAcc is the early-stopping figure of train.early_stop_metric = "".
const validAcc = "valid_acc"

// checkMetrics checks train.metrics against core/metrics and
// train.early_stop_metric against the validation figures the run reports.
func checkMetrics(cfg *config.Config) error {
	for _, name := range cfg.Train.Metrics {
		m, ok := metrics.Lookup(name)
		if !ok {
			return cfg.KeyError(fmt.Sprintf("train.metrics: unknown metric %q%s; choose from %s", name, didYouMean(name, metrics.Names()), registry.QuoteList(metrics.Names())), "train", "metrics")
		}
		if !taskMetric(cfg, m) {
			return cfg.KeyError(fmt.Sprintf("train.metrics: %q does not apply to train.task = %q; choose from %s", name, taskName(cfg), registry.QuoteList(taskMetrics(cfg))), "train", "metrics")
		}
	}
	if key := cfg.Train.EarlyStopMetric; key != "" && !slices.Contains(stopChoices(cfg), key) {
		return cfg.KeyError(fmt.Sprintf("train.early_stop_metric = %q is not a validation figure this run reports%s; choose from %s (add a metric to train.metrics to watch it)", key, didYouMean(key, stopChoices(cfg)), registry.QuoteList(stopChoices(cfg))), "train", "early_stop_metric")
	}
	return nil
}

// taskName is train.task with its default spelled out.
func taskName(cfg *config.Config) string {
	if cfg.Train.Task == "" {
		return config.TaskNode
	}
	return cfg.Train.Task
}

// taskMetric reports whether m applies to cfg's train.task: regression's
// metrics, or for node targets those of classes or multi-label labels
// (the dataset says which).
func taskMetric(cfg *config.Config, m metrics.Metric) bool {
	switch cfg.Train.Task {
	case config.TaskRegression:
		return m.Applies(metrics.TaskRegression)
	case config.TaskLink:
		return m.Applies(metrics.TaskLink)
	}
	return m.Applies(metrics.TaskClasses) || m.Applies(metrics.TaskMultiLabel)
}

// taskMetrics are the metrics that apply to cfg's train.task.
func taskMetrics(cfg *config.Config) []string {
	var out []string
	for _, name := range metrics.Names() {
		if m, _ := metrics.Lookup(name); taskMetric(cfg, m) {
			out = append(out, name)
		}
	}
	return out
}

// stopChoices are the values train.early_stop_metric takes: valid_acc,
// valid_loss and valid_<name> of each metric in train.metrics.
func stopChoices(cfg *config.Config) []string {
	out := []string{validAcc, "valid_loss"}
	for _, name := range cfg.Train.Metrics {
		if k := "valid_" + name; name != "accuracy" && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// didYouMean is " (did you mean "x"?)" for a likely typo of a choice, or "".
func didYouMean(s string, choices []string) string {
	if m := registry.Suggest(s, choices); m != "" {
		return fmt.Sprintf(" (did you mean %q?)", m)
	}
	return ""
}

// classMetrics are the metrics that read the predicted classes only.
func classMetrics() []string {
	var out []string
	for _, name := range metrics.Names() {
		if m, _ := metrics.Lookup(name); !m.Logits {
			out = append(out, name)
		}
	}
	return out
}

// watched is the figure that picks the best epoch (train.early_stop_metric).
type watched struct {
	key   string // "" (valid_acc), valid_loss, valid_<metric>
	lower bool   // smaller is better
}

func newWatched(cfg *config.Config) watched {
	key := cfg.Train.EarlyStopMetric
	if key == validAcc {
		key = ""
	}
	m, _ := metrics.Lookup(strings.TrimPrefix(key, "valid_"))
	return watched{key: key, lower: m.Lower}
}

// value is the watched figure of an evaluated record (NaN when absent).
func (w watched) value(rec *EpochRecord) float64 {
	if w.key == "" {
		return rec.ValidAcc
	}
	if v, ok := rec.Metrics[w.key]; ok {
		return v
	}
	return math.NaN()
}

// better reports whether v improves on best: NaN never does, and any
// other value improves on NaN (a ROC-AUC of a split without positives).
func (w watched) better(v, best float64) bool {
	if math.IsNaN(best) {
		return !math.IsNaN(v)
	}
	if w.lower {
		return v < best
	}
	return v > best
}

// evalPlan is what each evaluation computes beyond the accuracies: the
// logits of the validation (and, for a metric that reads them, test)
// nodes when the stepper gives them and something reads them, and the
// metrics of train.metrics on both splits.
type evalPlan struct {
	scorer   Scorer // nil: no logits
	rows     []int32
	logits   []float64
	metrics  []metrics.Metric // train.metrics but accuracy
	nValid   int              // rows[:nValid] are the validation nodes
	withTest bool             // rows[nValid:] are the test nodes
	link     *linkEval        // a link task's pairs; nil for node tasks
	// nTrain, for float targets, is the training nodes' count: rows
	// then are the training, validation and test nodes, in that order,
	// and the accuracies come from their logits (targetAccuracies).
	nTrain int
}

// newEvalPlan plans the evaluations of a run of cfg on ds with st;
// outputs says whether output.csv or output.log records valid_loss.
func newEvalPlan(cfg *config.Config, st Stepper, ds *graph.Dataset, outputs bool, link *LinkTask) (*evalPlan, error) {
	p := &evalPlan{}
	if link != nil {
		var err error
		p.metrics = linkMetrics(cfg)
		p.link, err = newLinkEval(cfg, st, link)
		return p, err
	}
	w, _ := metrics.Lookup(strings.TrimPrefix(newWatched(cfg).key, "valid_"))
	logitsNeeded, testLogits := w.Logits, false
	for _, name := range cfg.Train.Metrics {
		m, ok := metrics.Lookup(name)
		if !ok || name == "accuracy" || slices.ContainsFunc(p.metrics, func(x metrics.Metric) bool { return x.Name == name }) {
			continue
		}
		p.metrics = append(p.metrics, m)
		testLogits = testLogits || m.Logits
		logitsNeeded = logitsNeeded || m.Logits
	}
	sc, ok := st.(Scorer)
	if ds.HasTargets() {
		return newTargetsPlan(cfg, p, sc, ok, ds)
	}
	if logitsNeeded && !ok {
		key := "early_stop_metric"
		if testLogits {
			key = "metrics"
		}
		return nil, cfg.KeyError(fmt.Sprintf("train.%s needs the model's logits at evaluation, and train.mode = %q does not give them (its stepper is no train.Scorer); use valid_acc or the metrics that read the predicted classes only: %s", key, cfg.Train.Mode, registry.QuoteList(classMetrics())), "train", key)
	}
	if !ok || !(logitsNeeded || outputs) {
		return p, nil
	}
	p.scorer, p.nValid, p.withTest = sc, len(ds.Valid), testLogits
	p.rows = append(p.rows, ds.Valid...)
	if testLogits {
		p.rows = append(p.rows, ds.Test...)
	}
	p.logits = make([]float64, len(p.rows)*ds.NumClasses)
	return p, nil
}

// predict writes every node's predicted class, and the planned logits.
func (p *evalPlan) predict(ctx context.Context, st Stepper, pred []int32) error {
	if p.scorer == nil {
		return st.Predict(ctx, pred)
	}
	return p.scorer.PredictScores(ctx, pred, p.rows, p.logits)
}

// figures returns the evaluation's figures beyond the accuracies:
// valid_loss (with logits) and valid_<m>, test_<m> of each metric; nil
// when there are none. A split without nodes has none.
func (p *evalPlan) figures(pred []int32, ds *graph.Dataset) map[string]float64 {
	out := map[string]float64{}
	c := ds.NumClasses
	valid := metrics.Split{Pred: pred, Labels: ds.Labels, Idx: ds.Valid, Classes: c, Task: ds.Kind, Targets: ds.Targets}
	test := metrics.Split{Pred: pred, Labels: ds.Labels, Idx: ds.Test, Classes: c, Task: ds.Kind, Targets: ds.Targets}
	if p.scorer != nil {
		o := p.nTrain * c // the training rows' logits come first (float targets)
		valid.Logits = p.logits[o : o+p.nValid*c]
		if p.withTest {
			test.Logits = p.logits[o+p.nValid*c:]
		}
		if len(ds.Valid) > 0 {
			loss, _ := metrics.Lookup("loss")
			out["valid_loss"] = loss.Compute(valid)
		}
	}
	for _, m := range p.metrics {
		for _, s := range []struct {
			prefix string
			split  metrics.Split
		}{{"valid_", valid}, {"test_", test}} {
			if len(s.split.Idx) > 0 && (!m.Logits || s.split.Logits != nil) {
				out[s.prefix+m.Name] = m.Compute(s.split)
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// columns are output.csv's columns of the figures, after the others:
// valid_loss, then valid_<m> and test_<m> of each metric.
func (p *evalPlan) columns() []string {
	cols := []string{"valid_loss"}
	for _, m := range p.metrics {
		for _, k := range []string{"valid_" + m.Name, "test_" + m.Name} {
			if !slices.Contains(cols, k) {
				cols = append(cols, k)
			}
		}
	}
	return cols
}

// reported are the figures the result line carries: train.metrics' only
// (none without a plan).
func (p *evalPlan) reported(figs map[string]float64) map[string]float64 {
	if p == nil {
		return nil
	}
	out := map[string]float64{}
	for _, m := range p.metrics {
		for _, k := range []string{"valid_" + m.Name, "test_" + m.Name} {
			if v, ok := figs[k]; ok {
				out[k] = v
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// CopyScoreRows is a Scorer's helper: out holds the logits of the nodes
// first, first+1, ... (classes per row, at least n rows); each of rows
// within [first, first+n) gets its row copied into logits, at its place
// in rows.
func CopyScoreRows(out []float64, first, n, classes int, rows []int32, logits []float64) {
	for k, node := range rows {
		if i := int(node) - first; i >= 0 && i < n {
			copy(logits[k*classes:(k+1)*classes], out[i*classes:(i+1)*classes])
		}
	}
}
