package graphtest

import (
	"math"

	"strata/core/graph"
)

// ToTargets turns a dataset of classes (every split node labelled) into
// one of float targets of kind, derived from the classes so that a model
// that learns the classes learns them: multi-label, 4 labels, labels 0-2
// the bits of class+1 and label 3 on for class ≥ 4; regression, 2
// targets, class/2 and class mod 3 − 1. Unlabelled nodes get NaN.
func ToTargets(ds *graph.Dataset, kind graph.TargetKind) {
	cols := map[graph.TargetKind]int{graph.MultiLabel: 4, graph.Regression: 2}[kind]
	y := make([]float32, ds.NumNodes*cols)
	for v, l := range ds.Labels {
		row := y[v*cols : (v+1)*cols]
		c := int(l)
		switch {
		case c < 0:
			for j := range row {
				row[j] = float32(math.NaN())
			}
		case kind == graph.MultiLabel:
			for j := range 3 {
				row[j] = float32((c + 1) >> j & 1)
			}
			row[3] = float32(min(c/4, 1))
		default:
			row[0], row[1] = float32(c)/2, float32(c%3-1)
		}
	}
	ds.Labels, ds.Kind, ds.Targets, ds.NumClasses = nil, kind, y, cols
}
