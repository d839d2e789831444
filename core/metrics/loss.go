package metrics

// loss: the mean softmax cross-entropy of the split's nodes, the training
// loss's formula on another split (valid_loss).
func init() {
	Register(Metric{Name: "loss", Doc: "mean softmax cross-entropy of the logits against the labels", Logits: true, Lower: true, Compute: crossEntropy})
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
