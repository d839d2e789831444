package graph

import (
	"context"
	"fmt"
	"math"

	"strata/core/metrics"
)

// TargetKind is what a dataset's nodes are trained to predict: the task
// its metrics score (metrics.Task).
type TargetKind = metrics.Task

const (
	// Classes: one class per node (Labels, softmax cross-entropy).
	Classes = metrics.TaskClasses
	// MultiLabel: NumClasses independent 0/1 labels per node (Targets,
	// sigmoid binary cross-entropy).
	MultiLabel = metrics.TaskMultiLabel
	// Regression: NumClasses real values per node (Targets, mean squared
	// error).
	Regression = metrics.TaskRegression
)

// HasTargets reports whether the dataset's nodes carry float targets
// (Targets) instead of class labels.
func (d *Dataset) HasTargets() bool { return d.Kind != Classes }

// Labelled reports whether node v has a label or, for float targets, a
// target in every column (NaN marks a missing one).
func (d *Dataset) Labelled(v int32) bool {
	if !d.HasTargets() {
		return d.Labels != nil && d.Labels[v] >= 0
	}
	c := d.NumClasses
	for _, t := range d.Targets[int(v)*c : int(v+1)*c] {
		if t != t {
			return false
		}
	}
	return true
}

// validateTargets checks Targets against Kind: NumNodes × NumClasses
// values, no labels beside them, each finite or NaN (no target) and, for
// multi-label, 0 or 1.
func (d *Dataset) validateTargets(name string) error {
	if !d.HasTargets() {
		if d.Targets != nil {
			return fmt.Errorf("%s: float targets on a %s dataset: %w", name, d.Kind, ErrFormat)
		}
		return nil
	}
	if d.Labels != nil {
		return fmt.Errorf("%s: both class labels and %s targets: %w", name, d.Kind, ErrFormat)
	}
	if d.NumClasses < 1 || int64(len(d.Targets)) != int64(d.NumNodes)*int64(d.NumClasses) {
		return fmt.Errorf("%s: %d %s targets for %d nodes x %d columns: %w", name, len(d.Targets), d.Kind, d.NumNodes, d.NumClasses, ErrFormat)
	}
	c := d.NumClasses
	for i, t := range d.Targets {
		if err := CheckTarget(d.Kind, t); err != nil {
			return fmt.Errorf("%s: node %d, target %d: %v: %w", name, i/c, i%c, err, ErrRange)
		}
	}
	return nil
}

// CheckTarget checks one target value of kind k: NaN (no target), and
// otherwise finite, and 0 or 1 for multi-label.
func CheckTarget(k TargetKind, t float32) error {
	switch {
	case t != t:
		return nil
	case math.IsInf(float64(t), 0):
		return fmt.Errorf("%v is not finite (NaN marks a missing target)", t)
	case k == MultiLabel && t != 0 && t != 1:
		return fmt.Errorf("%v is not 0 or 1 (multi-label targets are 0/1 per label)", t)
	}
	return nil
}

// relabelTargets moves d.Targets to new node ids: perm[new] = old.
func relabelTargets(d *Dataset, perm []int32) {
	c := d.NumClasses
	if !d.HasTargets() || len(d.Targets) != len(perm)*c {
		return
	}
	t := make([]float32, len(d.Targets))
	for r, o := range perm {
		copy(t[r*c:(r+1)*c], d.Targets[int(o)*c:int(o+1)*c])
	}
	d.Targets = t
}

type regressionKey struct{}

// WithRegression asks the loads of ctx (OpenContext) to read a dataset's
// labels as regression targets (train.task = "regression"): a float
// array is read as values, not as class indices.
func WithRegression(ctx context.Context) context.Context {
	return context.WithValue(ctx, regressionKey{}, true)
}

// RegressionFrom reports whether ctx asks for regression targets.
func RegressionFrom(ctx context.Context) bool {
	r, _ := ctx.Value(regressionKey{}).(bool)
	return r
}
