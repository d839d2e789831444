package metrics

import (
	"cmp"
	"math"
	"slices"
)

// roc_auc: the area under the ROC curve of the softmax probabilities:
// with two classes, of class 1's; with more, the unweighted mean of each
// class's one-vs-rest area (scikit-learn's roc_auc_score with
// multi_class="ovr", average="macro"). Ties count one half (the
// Mann-Whitney statistic). A class without positives or without negatives
// in the split has no area and is left out of the mean; NaN when none has.
// Multi-label: the mean over the labels of each label's area. Link:
// LinkAUC of the positive pairs' scores against the negatives'.
func init() {
	Register(Metric{Name: "roc_auc", Doc: "area under the ROC curve of the softmax probabilities (two classes: of class 1; more: mean one-vs-rest; multi-label: mean over the labels; link: of the positive pairs' scores against the negatives')",
		Logits: true, Tasks: []Task{TaskClasses, TaskMultiLabel, TaskLink}, Compute: rocAUC})
}

func rocAUC(s Split) float64 {
	switch s.Task {
	case TaskMultiLabel:
		return multiLabelAUC(s)
	case TaskLink:
		return LinkAUC(s.Pos, s.Neg)
	}
	n, c := len(s.Idx), s.Classes
	probs := make([]float64, n*c)
	for k := range n {
		softmaxRow(s.Logits[k*c:(k+1)*c], probs[k*c:(k+1)*c])
	}
	score := make([]float64, n)
	pos := make([]bool, n)
	one := func(class int) float64 {
		for k, i := range s.Idx {
			score[k], pos[k] = probs[k*c+class], int(s.Labels[i]) == class
		}
		return binaryAUC(score, pos)
	}
	if c == 2 {
		return one(1)
	}
	return perLabel(c, one)
}

// multiLabelAUC is the mean over the label columns of each column's
// area, scored by the logits (the sigmoid keeps their order), the
// columns without positives or negatives in the split left out (OGB's
// ogbn-proteins evaluator).
func multiLabelAUC(s Split) float64 {
	n, c := len(s.Idx), s.Classes
	score := make([]float64, n)
	pos := make([]bool, n)
	return perLabel(c, func(j int) float64 {
		for k, i := range s.Idx {
			score[k], pos[k] = s.Logits[k*c+j], s.Targets[int(i)*c+j] == 1
		}
		return binaryAUC(score, pos)
	})
}

// binaryAUC is the probability that a positive scores above a negative,
// ties counting one half, from the ranks of the scores (tied scores take
// their mean rank); NaN without positives or without negatives.
func binaryAUC(score []float64, pos []bool) float64 {
	order := make([]int, len(score))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(score[a], score[b]) })
	var rankSum float64
	npos := 0
	for lo := 0; lo < len(order); {
		hi := lo + 1
		for hi < len(order) && score[order[hi]] == score[order[lo]] {
			hi++
		}
		mid := float64(lo+hi+1) / 2 // the mean of ranks lo+1 .. hi
		for _, k := range order[lo:hi] {
			if pos[k] {
				rankSum += mid
				npos++
			}
		}
		lo = hi
	}
	nneg := len(score) - npos
	if npos == 0 || nneg == 0 {
		return math.NaN()
	}
	return (rankSum - float64(npos)*float64(npos+1)/2) / (float64(npos) * float64(nneg))
}
