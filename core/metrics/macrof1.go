package metrics

import "math"

// macro_f1: the unweighted mean over classes of F1 = 2·TP / (2·TP + FP +
// FN), over the classes that occur among the split's labels or
// predictions (scikit-learn's f1_score(average="macro")); multi-label:
// over the labels, a label predicted positive at logit ≥ 0.
func init() {
	Register(Metric{Name: "macro_f1", Doc: "mean over classes of the per-class F1 score (classes in the labels or predictions; multi-label: over the labels, positive at logit >= 0)",
		Tasks: []Task{TaskClasses, TaskMultiLabel}, Compute: macroF1})
}

// multiLabelF1 is macro_f1 over the label columns.
func multiLabelF1(s Split) float64 {
	c := s.Classes
	tp, fp, fn := make([]int, c), make([]int, c), make([]int, c)
	s.eachTarget(func(j int, x, y float64) {
		switch p := x >= 0; {
		case p && y == 1:
			tp[j]++
		case p:
			fp[j]++
		case y == 1:
			fn[j]++
		}
	})
	return meanF1(tp, fp, fn)
}

func macroF1(s Split) float64 {
	if s.Task == TaskMultiLabel {
		return multiLabelF1(s)
	}
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
	return meanF1(tp, fp, fn)
}

// meanF1 is the mean F1 of the classes with 2·TP + FP + FN > 0.
func meanF1(tp, fp, fn []int) float64 {
	return perLabel(len(tp), func(c int) float64 {
		if d := 2*tp[c] + fp[c] + fn[c]; d > 0 {
			return float64(2*tp[c]) / float64(d)
		}
		return math.NaN()
	})
}
