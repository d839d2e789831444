package metrics

// accuracy: the share of the split's nodes whose predicted class is their
// label (the valid_acc and test_acc every run reports).
func init() {
	Register(Metric{Name: "accuracy", Doc: "share of nodes whose predicted class is their label", Compute: func(s Split) float64 {
		hit := 0
		for _, i := range s.Idx {
			if s.Pred[i] == s.Labels[i] {
				hit++
			}
		}
		return float64(hit) / float64(len(s.Idx))
	}})
}
