package metrics

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// The link-prediction metrics (TaskLink) rank the decoder's scores of a
// split's positive pairs (pos) against those of its negative pairs (neg),
// with the definitions of OGB's link-prediction evaluators. ap is
// AveragePrecision, mrr MRR (per-positive negatives when Split.NegPerPos
// > 0), hits@K HitsAtK against all of Neg (ogbl-collab); roc_auc reads
// LinkAUC (rocauc.go). Every one of them is NaN when pos is empty or
// when any score is NaN (a diverged model never scores well); ±Inf
// scores are ordered as numbers.
func init() {
	Register(Metric{Name: "ap", Doc: "link: average precision of the positive pairs' scores against the negatives' (scikit-learn's average_precision_score)",
		Logits: true, Tasks: []Task{TaskLink}, Compute: func(s Split) float64 { return AveragePrecision(s.Pos, s.Neg) }})
	Register(Metric{Name: "mrr", Doc: "link: mean reciprocal rank of each positive pair among the negatives (its own with negatives per positive; ties: OGB's mean of optimistic and pessimistic rank)",
		Logits: true, Tasks: []Task{TaskLink}, Compute: func(s Split) float64 { return MRR(s.Pos, s.Neg, s.NegPerPos) }})
	for _, k := range []int{10, 50, 100} {
		Register(Metric{Name: fmt.Sprintf("hits@%d", k), Doc: fmt.Sprintf("link: share of positive pairs scoring strictly above the %d-th highest negative (OGB's ogbl-collab Hits@K; 1 with fewer negatives)", k),
			Logits: true, Tasks: []Task{TaskLink}, Compute: func(s Split) float64 { return HitsAtK(s.Pos, s.Neg, k) }})
	}
}

// LinkAUC is the area under the ROC curve of scores pos (positives)
// against neg (negatives): the share of (positive, negative) pairs in
// which the positive scores higher, a tie counting one half, i.e.
// Σ_p (2·#{n < p} + #{n = p}) / (2·|pos|·|neg|) (the Mann-Whitney
// statistic, equal to the average-rank formula of scipy's rankdata in
// the peer). O((P+N) log(P+N)); NaN when pos or neg is empty or a score
// is NaN.
func LinkAUC(pos, neg []float64) float64 {
	if len(pos) == 0 || len(neg) == 0 || anyNaN(pos, neg) {
		return math.NaN()
	}
	sn := sortedCopy(neg)
	var twice int64
	for _, p := range pos {
		lt, le := below(sn, p)
		twice += int64(lt + le)
	}
	return float64(twice) / (2 * float64(len(pos)) * float64(len(neg)))
}

// AveragePrecision is scikit-learn's average_precision_score of pos
// (positives) against neg (negatives): Σ_n (R_n − R_{n−1})·P_n over the
// distinct score thresholds t_n in decreasing order, R_n and P_n being
// the recall and precision of predicting positive every score ≥ t_n, so
// tied scores form one step (computed as Σ_n ΔTP_n·P_n / |pos|). The
// peer (linkpred.py) instead averages over the positives the precision
// at each one's position in a descending order that puts positives ahead
// of tied negatives (optimistic: one positive tied with one negative
// scores 1 there, 1/2 here) and gives tied positives each their own
// precision; the two are equal when no two scores tie. 1 when neg is
// empty; NaN when pos is empty or a score is NaN.
func AveragePrecision(pos, neg []float64) float64 {
	if len(pos) == 0 || anyNaN(pos, neg) {
		return math.NaN()
	}
	sp, sn := sortedCopy(pos), sortedCopy(neg)
	i, j := len(sp), len(sn) // sp[i:] and sn[j:] score at or above the threshold
	var sum float64
	for i > 0 { // thresholds below the lowest positive add no recall
		t := sp[i-1]
		if j > 0 && sn[j-1] > t {
			t = sn[j-1]
		}
		prev := len(sp) - i
		for i > 0 && sp[i-1] == t {
			i--
		}
		for j > 0 && sn[j-1] == t {
			j--
		}
		tp, fp := len(sp)-i, len(sn)-j
		sum += float64(tp-prev) * (float64(tp) / float64(tp+fp))
	}
	return sum / float64(len(sp))
}

// HitsAtK is OGB's Hits@K of ogbl-collab and ogbl-ddi: the share of pos
// scoring strictly above the k-th highest score of neg; 1 when neg has
// fewer than k scores (OGB's convention), NaN when pos is empty or a
// score is NaN. k < 1 panics.
func HitsAtK(pos, neg []float64, k int) float64 {
	if k < 1 {
		panic(fmt.Sprintf("metrics: HitsAtK with k = %d, want k >= 1", k))
	}
	if len(pos) == 0 || anyNaN(pos, neg) {
		return math.NaN()
	}
	if len(neg) < k {
		return 1
	}
	thr := sortedCopy(neg)[len(neg)-k]
	hits := 0
	for _, p := range pos {
		if p > thr {
			hits++
		}
	}
	return float64(hits) / float64(len(pos))
}

// MRR is the mean over pos of 1/rank, a positive's rank among its
// negatives being OGB's 0.5·(#{n > p} + #{n ≥ p}) + 1 (the mean of the
// optimistic and pessimistic rank under ties). With negPerPos = k > 0 neg
// holds k negatives per positive, positive i's at neg[i*k:(i+1)*k], and
// each positive is ranked against its own (ogbl-citation2's evaluator);
// len(neg) ≠ k·len(pos) or k < 0 panics. With negPerPos = 0 each positive
// is ranked against all of neg (1 when neg is empty). NaN when pos is
// empty or a score is NaN.
func MRR(pos, neg []float64, negPerPos int) float64 {
	if k := negPerPos; k < 0 || k > 0 && len(neg) != k*len(pos) {
		panic(fmt.Sprintf("metrics: MRR of %d positives, %d negatives at %d per positive", len(pos), len(neg), k))
	}
	if len(pos) == 0 || anyNaN(pos, neg) {
		return math.NaN()
	}
	var sum float64
	if k := negPerPos; k > 0 {
		for i, p := range pos {
			gt, ge := 0, 0
			for _, n := range neg[i*k : (i+1)*k] {
				if n > p {
					gt++
				}
				if n >= p {
					ge++
				}
			}
			sum += 1 / ogbRank(gt, ge)
		}
	} else {
		sn := sortedCopy(neg)
		for _, p := range pos {
			lt, le := below(sn, p)
			sum += 1 / ogbRank(len(sn)-le, len(sn)-lt)
		}
	}
	return sum / float64(len(pos))
}

// ogbRank is OGB's rank of a positive that gt negatives beat and ge tie
// or beat.
func ogbRank(gt, ge int) float64 { return 0.5*float64(gt+ge) + 1 }

// below returns the counts of sorted's scores below v (lt) and at or
// below v (le).
func below(sorted []float64, v float64) (lt, le int) {
	lt, _ = slices.BinarySearch(sorted, v)
	le = lt + sort.Search(len(sorted)-lt, func(i int) bool { return sorted[lt+i] > v })
	return lt, le
}

// sortedCopy returns x sorted ascending, x itself untouched.
func sortedCopy(x []float64) []float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	return s
}

// anyNaN reports whether a score of any of xs is NaN.
func anyNaN(xs ...[]float64) bool {
	for _, x := range xs {
		if slices.ContainsFunc(x, math.IsNaN) {
			return true
		}
	}
	return false
}
