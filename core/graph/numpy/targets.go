package numpy

import (
	"math"

	"strata/core/graph"
)

// npyY is what a label file holds: class labels, or float targets of a
// kind (multi-label, regression) in cols columns.
type npyY struct {
	labels  []int32
	targets []float32
	kind    graph.TargetKind
	cols    int // classes, or target columns
}

// nodes is the node count the file fixes.
func (y npyY) nodes() int {
	if y.kind == graph.Classes {
		return len(y.labels)
	}
	return len(y.targets) / max(y.cols, 1)
}

// readNPYY reads the label file lp: with regression, float targets of
// shape (N,) (one target) or (N, T); otherwise a 2-D array (N, C) with C
// > 1 holds multi-label 0/1 targets, and any other shape class labels
// (readNPYLabels).
func readNPYY(lp string, regression bool, spend *graph.Spend) (npyY, error) {
	shape, data, err := readNPYFile(lp, spend)
	if err != nil {
		return npyY{}, err
	}
	multi := len(shape) == 2 && shape[1] > 1
	if !regression && !multi {
		labels, classes, err := readNPYLabels(lp, shape, data, spend)
		return npyY{labels: labels, cols: classes}, err
	}
	y := npyY{kind: graph.MultiLabel}
	if regression {
		y.kind = graph.Regression
	}
	if len(shape) != 1 && len(shape) != 2 {
		return npyY{}, graph.FileErrorf(graph.ErrFormat, lp, 0, 0, "header field 'shape': %v, want (N,) or (N, T) regression targets", shape)
	}
	y.cols = 1
	if len(shape) == 2 {
		y.cols = shape[1]
	}
	switch {
	case shape[0] > math.MaxInt32:
		return npyY{}, graph.FileErrorf(graph.ErrRange, lp, 0, 0, "header field 'shape': %d nodes is more than supported (%d)", shape[0], math.MaxInt32)
	case y.cols < 1 || y.cols > graph.MaxClasses:
		return npyY{}, graph.FileErrorf(graph.ErrRange, lp, 0, 0, "header field 'shape': %d target columns, outside [1,%d]", y.cols, graph.MaxClasses)
	}
	if _, ok := data.([]float32); !ok {
		if err := spend.Charge(lp, "the targets as float32", int64(shape[0])*int64(y.cols)*4); err != nil {
			return npyY{}, err
		}
	}
	if y.targets, err = npyFloats(data, lp); err != nil {
		return npyY{}, err
	}
	hint := "" // how the shape was read
	if y.kind == graph.MultiLabel {
		hint = " (a 2-D y of shape (N, C) holds multi-label 0/1 targets; class labels are (N,) or (N, 1))"
	}
	for i, t := range y.targets {
		if err := graph.CheckTarget(y.kind, t); err != nil {
			return npyY{}, graph.FileErrorf(graph.ErrRange, lp, 0, 0, "element [%d, %d]: %s target %v%s; fix the data (NaN marks a missing target, of a node outside the splits)", i/y.cols, i%y.cols, y.kind, err, hint)
		}
	}
	return y, nil
}
