package metrics

import "math"

// loss: the training loss's formula on another split (valid_loss): the
// mean softmax cross-entropy of the split's nodes; for multi-label
// targets the mean sigmoid binary cross-entropy, for regression the mean
// squared error, over every (node, target) pair.
func init() {
	Register(Metric{Name: "loss", Doc: "the training loss on the split: mean softmax cross-entropy of the logits against the labels (multi-label: sigmoid binary cross-entropy; regression: squared error)",
		Logits: true, Lower: true, Tasks: []Task{TaskClasses, TaskMultiLabel, TaskRegression}, Compute: func(s Split) float64 {
			switch s.Task {
			case TaskMultiLabel:
				return meanElementLoss(s, func(x, y float64) float64 { return max(x, 0) - x*y + math.Log1p(math.Exp(-math.Abs(x))) })
			case TaskRegression:
				return meanSquaredError(s)
			}
			return crossEntropy(s)
		}})
}

// crossEntropy is the mean over the split of log Σ_j exp(z_j) - z_label.
func crossEntropy(s Split) float64 {
	p := make([]float64, s.Classes)
	var total float64
	for k, i := range s.Idx {
		row := s.Logits[k*s.Classes : (k+1)*s.Classes]
		logSum, maxv := softmaxRow(row, p)
		total += logSum + maxv - row[s.Labels[i]]
	}
	return total / float64(len(s.Idx))
}

// meanElementLoss is the mean of f(output, target) over the split's
// (node, target) pairs.
func meanElementLoss(s Split, f func(x, y float64) float64) float64 {
	var total float64
	s.eachTarget(func(_ int, x, y float64) { total += f(x, y) })
	return total / float64(len(s.Idx)*s.Classes)
}

func meanSquaredError(s Split) float64 {
	return meanElementLoss(s, func(x, y float64) float64 { return (x - y) * (x - y) })
}
