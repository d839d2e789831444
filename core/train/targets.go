package train

import (
	"fmt"
	"slices"

	"strata/core/backend"
	"strata/core/config"
	"strata/core/graph"
	"strata/core/metrics"
	"strata/core/tensor"
)

// UploadTargets places what the loss compares the output rows with: for
// a dataset of classes the labels (Int32 [R]), otherwise the float
// targets ([R, NumClasses] in dt), of the nodes listed in nodes (the
// global id of each output row; nil: every node, row i node i).
func UploadTargets(be backend.Backend, ds *graph.Dataset, nodes []int32, dt tensor.DType, tier tensor.Tier) (*tensor.Tensor, error) {
	if !ds.HasTargets() {
		labels := ds.Labels
		if nodes != nil {
			labels = make([]int32, len(nodes))
			for i, v := range nodes {
				labels[i] = ds.Labels[v]
			}
		}
		return UploadInt32s(be, labels, tier)
	}
	c, rows := ds.NumClasses, ds.NumNodes
	if nodes != nil {
		rows = len(nodes)
	}
	t, err := be.Alloc(dt, []int{rows, c}, tier)
	if err != nil {
		return nil, err
	}
	if err := be.Upload(t, gatherTargets(ds, nodes, dt)); err != nil {
		be.Release(t)
		return nil, err
	}
	return t, nil
}

// gatherTargets returns the target rows of nodes (nil: all) as a host
// slice of dt.
func gatherTargets(ds *graph.Dataset, nodes []int32, dt tensor.DType) any {
	c := ds.NumClasses
	f32 := ds.Targets
	if nodes != nil {
		f32 = make([]float32, len(nodes)*c)
		for i, v := range nodes {
			copy(f32[i*c:(i+1)*c], ds.Targets[int(v)*c:int(v+1)*c])
		}
	}
	if dt == tensor.Float32 {
		return f32
	}
	f64 := make([]float64, len(f32))
	for i, v := range f32 {
		f64[i] = float64(v)
	}
	return f64
}

// Loss computes the training loss of the dataset's kind over the output
// rows idx against targets (UploadTargets), its gradient into dout:
// softmax cross-entropy for classes, sigmoid binary cross-entropy for
// multi-label, mean squared error for regression.
func Loss(be backend.Backend, kind graph.TargetKind, out, targets, idx, dout *tensor.Tensor) (float64, error) {
	var (
		loss float64
		err  error
	)
	switch kind {
	case graph.Classes:
		loss, err = be.SoftmaxCrossEntropy(out, targets, idx, dout)
	case graph.MultiLabel:
		loss, err = be.TargetLoss(backend.LossBCE, out, targets, idx, dout)
	default:
		loss, err = be.TargetLoss(backend.LossMSE, out, targets, idx, dout)
	}
	if err != nil {
		return 0, fmt.Errorf("loss: %w", err)
	}
	return loss, nil
}

// newTargetsPlan completes p, the evaluation plan of a dataset with
// float targets: the accuracies come from the model's outputs, so every
// evaluation reads those of the training, validation and test nodes,
// from a stepper that gives them (a Scorer: sc, ok).
func newTargetsPlan(cfg *config.Config, p *evalPlan, sc Scorer, ok bool, ds *graph.Dataset) (*evalPlan, error) {
	if !ok {
		return nil, cfg.KeyError(fmt.Sprintf("train.mode = %q cannot evaluate the %s targets of dataset %q: they are scored from the model's outputs, and its stepper gives none (it is no train.Scorer); use train.mode = \"full\" or another strategy that does (strata list-plugins)", cfg.Train.Mode, ds.Kind, ds.Name), "train", "mode")
	}
	for _, m := range p.metrics {
		if !m.Applies(ds.Kind) {
			return nil, cfg.KeyError(fmt.Sprintf("train.metrics: %q does not apply to the %s targets of dataset %q", m.Name, ds.Kind, ds.Name), "train", "metrics")
		}
	}
	p.scorer, p.nTrain, p.nValid, p.withTest = sc, len(ds.Train), len(ds.Valid), true
	p.rows = slices.Concat(ds.Train, ds.Valid, ds.Test)
	p.logits = make([]float64, len(p.rows)*ds.NumClasses)
	return p, nil
}

// targetAccuracies are the train, valid and test "accuracies" of a
// dataset with float targets, from the outputs p read: element-wise
// accuracy for multi-label labels, R² for regression (0 for a split
// without nodes).
func (p *evalPlan) targetAccuracies(ds *graph.Dataset) (tr, va, te float64) {
	name := "accuracy"
	if ds.Kind == graph.Regression {
		name = "r2"
	}
	m, _ := metrics.Lookup(name)
	c, o := ds.NumClasses, 0
	var acc [3]float64
	for i, idx := range [][]int32{ds.Train, ds.Valid, ds.Test} {
		if len(idx) > 0 {
			acc[i] = m.Compute(metrics.Split{Idx: idx, Logits: p.logits[o*c : (o+len(idx))*c], Classes: c, Task: ds.Kind, Targets: ds.Targets})
		}
		o += len(idx)
	}
	return acc[0], acc[1], acc[2]
}

// regressionTargets is targetsName of a regression dataset.
const regressionTargets = "regression"

// targetsName names ds's float targets for the model and checkpoint
// files: "multi-label", "regression", or "" for classes.
func targetsName(ds *graph.Dataset) string {
	if !ds.HasTargets() {
		return ""
	}
	return ds.Kind.String()
}

// targetPredictionScores scores a model's outputs (nodes × NumClasses)
// against ds's float targets: the count of nodes with targets and the
// task's figure over all of them and over each split ds has, "accuracy"
// (element-wise) for multi-label, "r2" for regression, and train_, valid_
// and test_ of it (nil without a node with targets).
func targetPredictionScores(ds *graph.Dataset, out []float64) (int, map[string]float64) {
	if !ds.HasTargets() {
		return 0, nil
	}
	var all []int32
	for v := range int32(ds.NumNodes) {
		if ds.Labelled(v) {
			all = append(all, v)
		}
	}
	if len(all) == 0 {
		return 0, nil
	}
	name, short := "accuracy", "acc"
	if ds.Kind == graph.Regression {
		name, short = "r2", "r2"
	}
	m, _ := metrics.Lookup(name)
	c := ds.NumClasses
	score := func(nodes []int32) float64 {
		rows := make([]float64, 0, len(nodes)*c)
		for _, v := range nodes {
			rows = append(rows, out[int(v)*c:int(v+1)*c]...)
		}
		return m.Compute(metrics.Split{Idx: nodes, Logits: rows, Classes: c, Task: ds.Kind, Targets: ds.Targets})
	}
	res := map[string]float64{name: score(all)}
	for i, nodes := range [][]int32{ds.Train, ds.Valid, ds.Test} {
		if len(nodes) > 0 {
			res[graph.SplitName(i)+"_"+short] = score(nodes)
		}
	}
	return len(all), res
}

// checkPredictTargets refuses to score a model's predictions against
// targets of another kind: a classifier on multi-label targets, a
// regression model on class labels (a graph without any is fine).
func checkPredictTargets(cfg *config.Config, modelPath string, meta *ModelMeta, ds *graph.Dataset) error {
	have := targetsName(ds)
	labelled := ds.HasTargets() || slices.ContainsFunc(ds.Labels, func(l int32) bool { return l >= 0 })
	if !labelled || meta.Targets == have {
		return nil
	}
	what := func(t string) string {
		if t == "" {
			return "class labels"
		}
		return t + " targets"
	}
	return cfg.KeyError(fmt.Sprintf("%s predicts %s, and dataset %q holds %s: predict on a graph of the model's kind of targets", modelPath, what(meta.Targets), ds.Name, what(have)), "data", "dataset")
}
