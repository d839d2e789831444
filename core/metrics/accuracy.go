package metrics

// accuracy: the share of the split's nodes whose predicted class is their
// label (the valid_acc and test_acc every run reports); for multi-label
// targets the share of (node, label) pairs predicted right, a label
// predicted positive at logit ≥ 0 (element-wise, OGB's and scikit-learn's
// hamming-score convention, not the exact-match subset accuracy).
func init() {
	Register(Metric{Name: "accuracy", Doc: "share of nodes whose predicted class is their label (multi-label: of node-label pairs, positive at logit >= 0)",
		Tasks: []Task{TaskClasses, TaskMultiLabel}, Compute: func(s Split) float64 {
			if s.Task == TaskMultiLabel {
				return multiLabelAccuracy(s)
			}
			hit := 0
			for _, i := range s.Idx {
				if s.Pred[i] == s.Labels[i] {
					hit++
				}
			}
			return float64(hit) / float64(len(s.Idx))
		}})
}

func multiLabelAccuracy(s Split) float64 {
	hit := 0
	s.eachTarget(func(_ int, out, y float64) {
		if (out >= 0) == (y == 1) {
			hit++
		}
	})
	return float64(hit) / float64(len(s.Idx)*s.Classes)
}
