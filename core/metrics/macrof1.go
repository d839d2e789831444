package metrics

// macro_f1: the unweighted mean over classes of F1 = 2·TP / (2·TP + FP +
// FN), over the classes that occur among the split's labels or
// predictions (scikit-learn's f1_score(average="macro")).
func init() {
	Register(Metric{Name: "macro_f1", Doc: "mean over classes of the per-class F1 score (classes in the labels or predictions)", Compute: macroF1})
}

func macroF1(s Split) float64 {
	tp, fp, fn := make([]int, s.Classes), make([]int, s.Classes), make([]int, s.Classes)
	for _, i := range s.Idx {
		p, y := s.Pred[i], s.Labels[i]
		if p == y {
			tp[y]++
		} else {
			fp[p]++
			fn[y]++
		}
	}
	var sum float64
	n := 0
	for c := range s.Classes {
		if d := 2*tp[c] + fp[c] + fn[c]; d > 0 {
			sum += float64(2*tp[c]) / float64(d)
			n++
		}
	}
	return sum / float64(n)
}
