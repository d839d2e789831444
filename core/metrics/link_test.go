package metrics

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"strata/internal/floattol"
)

// same reports whether two metric values agree exactly, NaN matching NaN.
func same(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

// TestLinkMetricsHandCases checks each link metric on scores whose
// figures were worked out by hand (the comments show the sums); Hits at
// K = 1, 2, 3, MRR against all negatives.
func TestLinkMetricsHandCases(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		name          string
		pos, neg      []float64
		auc, ap, mrr  float64
		hit1, hit2, h float64
	}{
		{"perfect", []float64{3, 2}, []float64{1, 0}, 1, 1, 1, 1, 1, 1},
		// AP: thresholds 3, 2 recall 0; 1: R ½ P ⅓; 0: R 1 P ½. Ranks 3, 3. Hits@3: 2 negatives < 3.
		{"inverted", []float64{0, 1}, []float64{2, 3}, 0, (1.0/3 + 0.5) / 2, 1.0 / 3, 0, 0, 1},
		// one threshold: R 1, P 2/5; rank ½(0+3)+1 = 2.5; no positive above the tied negatives
		{"all equal", []float64{1, 1}, []float64{1, 1, 1}, 0.5, 0.4, 0.4, 0, 0, 0},
		// AUC (3 + 1+1 + 1)/9; AP ⅓(1 + ½ + ⅗); ranks 1, ½(0+2)+1 = 2, 3; Hits thresholds 0.4, 0.4, 0.1
		{"positives tie negatives", []float64{0.8, 0.4, 0.2}, []float64{0.4, 0.4, 0.1}, 6.0 / 9, (1 + 0.5 + 0.6) / 3, (1 + 0.5 + 1.0/3) / 3, 1.0 / 3, 1.0 / 3, 1},
		// AP: threshold 3 recall 0, threshold 2 R 1 P ⅔ (one step for both); ranks 2, 2
		{"tied positives", []float64{2, 2}, []float64{1, 3}, 0.5, 2.0 / 3, 0.5, 0, 1, 1},
		{"no negatives", []float64{1, 2}, nil, nan, 1, 1, 1, 1, 1},
		{"no positives", nil, []float64{1}, nan, nan, nan, nan, nan, nan},
		{"NaN positive", []float64{1, nan}, []float64{0}, nan, nan, nan, nan, nan, nan},
		// without the NaN check Hits@3 would be 1 (fewer negatives than 3)
		{"NaN negative", []float64{1}, []float64{0, nan}, nan, nan, nan, nan, nan, nan},
		// AUC (2+2 + 2+1)/8; AP ½(1 + ⅔); ranks 1, ½(0+1)+1; Hits thresholds 0, −∞
		{"infinities", []float64{inf, 0}, []float64{-inf, 0}, 7.0 / 8, (1 + 2.0/3) / 2, (1 + 2.0/3) / 2, 0.5, 1, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// both sides: at most 2(P+N)+4 roundings of non-negative terms ≤ 1
			tol := 2 * floattol.Gamma(2*(len(c.pos)+len(c.neg))+4, floattol.UFloat64)
			for _, m := range []struct {
				name      string
				got, want float64
			}{
				{"LinkAUC", LinkAUC(c.pos, c.neg), c.auc}, {"AveragePrecision", AveragePrecision(c.pos, c.neg), c.ap},
				{"MRR", MRR(c.pos, c.neg, 0), c.mrr}, {"HitsAtK 1", HitsAtK(c.pos, c.neg, 1), c.hit1},
				{"HitsAtK 2", HitsAtK(c.pos, c.neg, 2), c.hit2}, {"HitsAtK 3", HitsAtK(c.pos, c.neg, 3), c.h},
			} {
				if !same(m.got, m.want) && !(math.Abs(m.got-m.want) <= tol) {
					t.Errorf("%s = %.17g, want %.17g", m.name, m.got, m.want)
				}
			}
		})
	}
}

// TestMRRPerPositive: positive 1 against its own 0, 3 ranks ½(1+1)+1 = 2,
// positive 2 against 2, 2 ranks ½(0+2)+1 = 2; against all four negatives
// they rank ½(3+3)+1 = 4 and ½(1+3)+1 = 3.
func TestMRRPerPositive(t *testing.T) {
	pos, neg := []float64{1, 2}, []float64{0, 3, 2, 2}
	if got := MRR(pos, neg, 2); got != 0.5 {
		t.Errorf("MRR with 2 negatives per positive = %v, want 0.5", got)
	}
	// the constant is exact; the sum rounds 1/3, the addition and the halving
	if got, want := MRR(pos, neg, 0), (0.25+1.0/3)/2; math.Abs(got-want) > floattol.Gamma(3, floattol.UFloat64) {
		t.Errorf("MRR against all negatives = %v, want %v", got, want)
	}
	for _, c := range []struct {
		name string
		call func()
	}{
		{"MRR 4 negatives at 3 per positive", func() { MRR(pos, neg, 3) }},
		{"MRR negative count per positive", func() { MRR(pos, neg, -1) }},
		{"HitsAtK k = 0", func() { HitsAtK(pos, neg, 0) }},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", c.name)
				}
			}()
			c.call()
		}()
	}
}

// refAUC counts every (positive, negative) pair: 2 when the positive
// scores higher, 1 on a tie.
func refAUC(pos, neg []float64) float64 {
	if len(pos) == 0 || len(neg) == 0 || anyNaN(pos, neg) {
		return math.NaN()
	}
	var twice int64
	for _, p := range pos {
		for _, n := range neg {
			switch {
			case p > n:
				twice += 2
			case p == n:
				twice++
			}
		}
	}
	return float64(twice) / (2 * float64(len(pos)) * float64(len(neg)))
}

// refAP enumerates every distinct score as a threshold, highest first,
// and counts the positives and negatives at or above it.
func refAP(pos, neg []float64) float64 {
	if len(pos) == 0 || anyNaN(pos, neg) {
		return math.NaN()
	}
	all := slices.Concat(pos, neg)
	slices.SortFunc(all, func(a, b float64) int { return cmp.Compare(b, a) })
	var sum float64
	prev := 0
	for _, t := range slices.Compact(all) {
		tp, fp := 0, 0
		for _, p := range pos {
			if p >= t {
				tp++
			}
		}
		for _, n := range neg {
			if n >= t {
				fp++
			}
		}
		sum += float64(tp-prev) * (float64(tp) / float64(tp+fp))
		prev = tp
	}
	return sum / float64(len(pos))
}

// refHits sorts the negatives highest first and takes the k-th.
func refHits(pos, neg []float64, k int) float64 {
	if len(pos) == 0 || anyNaN(pos, neg) {
		return math.NaN()
	}
	if len(neg) < k {
		return 1
	}
	desc := slices.SortedFunc(slices.Values(neg), func(a, b float64) int { return cmp.Compare(b, a) })
	hits := 0
	for _, p := range pos {
		if p > desc[k-1] {
			hits++
		}
	}
	return float64(hits) / float64(len(pos))
}

// refMRR counts, for each positive, the negatives above it and at or
// above it.
func refMRR(pos, neg []float64, k int) float64 {
	if len(pos) == 0 || anyNaN(pos, neg) {
		return math.NaN()
	}
	var sum float64
	for i, p := range pos {
		own := neg
		if k > 0 {
			own = neg[i*k : (i+1)*k]
		}
		gt, ge := 0, 0
		for _, n := range own {
			if n > p {
				gt++
			}
			if n >= p {
				ge++
			}
		}
		sum += 1 / (0.5*(float64(gt)+float64(ge)) + 1)
	}
	return sum / float64(len(pos))
}

// TestLinkMetricsAgainstBruteForce: the fast metrics equal the
// brute-force references exactly (the same float operations on the same
// counts, in the same order) on random scores drawn mostly from a few
// values, so ties abound, and some from many.
func TestLinkMetricsAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 7))
	for trial := range 600 {
		levels := 1 + rng.IntN(6)
		if trial%6 == 0 {
			levels = 1 << 20
		}
		draw := func(n int) []float64 {
			x := make([]float64, n)
			for i := range x {
				x[i] = float64(rng.IntN(levels))/4 - 0.5
			}
			return x
		}
		np, k := rng.IntN(40), rng.IntN(4)
		nn := k * np
		if k == 0 {
			nn = rng.IntN(120)
		}
		pos, neg := draw(np), draw(nn)
		checks := []struct {
			name      string
			got, want float64
		}{
			{"LinkAUC", LinkAUC(pos, neg), refAUC(pos, neg)},
			{"AveragePrecision", AveragePrecision(pos, neg), refAP(pos, neg)},
			{"MRR", MRR(pos, neg, k), refMRR(pos, neg, k)},
		}
		for _, K := range []int{1, 2, 3, 5, 10, 50, 100} {
			checks = append(checks, struct {
				name      string
				got, want float64
			}{fmt.Sprintf("HitsAtK %d", K), HitsAtK(pos, neg, K), refHits(pos, neg, K)})
		}
		for _, c := range checks {
			if !same(c.got, c.want) {
				t.Fatalf("trial %d (%d levels, pos %v, neg %v, %d per positive): %s = %.17g, reference %.17g", trial, levels, pos, neg, k, c.name, c.got, c.want)
			}
		}
	}
}

// peerMetrics are ../shared/peers/linkpred.py's metrics(): AUC from
// scipy's average ranks, AP as the mean precision at each positive in a
// stable descending order of pos then neg, Hits@K against the K-th
// highest negative (−∞ with fewer).
func peerMetrics(pos, neg []float64, k int) (auc, ap, hits float64) {
	s := slices.Concat(pos, neg)
	order := make([]int, len(s))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(s[a], s[b]) })
	rank := make([]float64, len(s))
	for lo := 0; lo < len(order); {
		hi := lo + 1
		for hi < len(order) && s[order[hi]] == s[order[lo]] {
			hi++
		}
		for _, i := range order[lo:hi] {
			rank[i] = float64(lo+hi+1) / 2
		}
		lo = hi
	}
	np, nn := float64(len(pos)), float64(len(neg))
	var rsum float64
	for _, r := range rank[:len(pos)] {
		rsum += r
	}
	auc = (rsum - np*(np+1)/2) / (np * nn)
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(s[b], s[a]) })
	tp := 0
	for at, i := range order {
		if i < len(pos) {
			tp++
			ap += float64(tp) / float64(at+1)
		}
	}
	ap /= np
	thr := math.Inf(-1)
	if len(neg) >= k {
		thr = slices.SortedFunc(slices.Values(neg), func(a, b float64) int { return cmp.Compare(b, a) })[k-1]
	}
	for _, p := range pos {
		if p > thr {
			hits++
		}
	}
	return auc, ap, hits / np
}

// TestLinkMetricsMatchPeer: without ties the peer's formulas give the
// same figures exactly (its AP sums the same precisions in the same
// order); with a positive tied to negatives its AP is higher (13/15
// against 7/10 on the hand case "positives tie negatives").
func TestLinkMetricsMatchPeer(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 8))
	for trial := range 200 {
		np, nn := 1+rng.IntN(30), 1+rng.IntN(80)
		s := rng.Perm(np + nn)
		pos, neg := make([]float64, np), make([]float64, nn)
		for i, v := range s {
			if x := float64(v)*0.37 - 3; i < np {
				pos[i] = x
			} else {
				neg[i-np] = x
			}
		}
		k := []int{1, 10, 50, 100}[trial%4]
		auc, ap, hits := peerMetrics(pos, neg, k)
		if LinkAUC(pos, neg) != auc || AveragePrecision(pos, neg) != ap || HitsAtK(pos, neg, k) != hits {
			t.Fatalf("trial %d: AUC %v, AP %v, Hits@%d %v; peer %v, %v, %v", trial,
				LinkAUC(pos, neg), AveragePrecision(pos, neg), k, HitsAtK(pos, neg, k), auc, ap, hits)
		}
	}
	pos, neg := []float64{0.8, 0.4, 0.2}, []float64{0.4, 0.4, 0.1}
	if _, ap, _ := peerMetrics(pos, neg, 1); math.Abs(ap-13.0/15) > floattol.Gamma(7, floattol.UFloat64) || AveragePrecision(pos, neg) >= ap {
		t.Errorf("peer AP with ties = %v (want 13/15), ours %v (want below it)", ap, AveragePrecision(pos, neg))
	}
}

// TestLinkRegisteredMetrics: the registered link metrics read Split.Pos,
// Neg and NegPerPos and give the plain functions' figures.
func TestLinkRegisteredMetrics(t *testing.T) {
	pos, neg := []float64{1, 2, 0.5}, []float64{0, 3, 2, 2, 1, -1}
	s := Split{Task: TaskLink, Pos: pos, Neg: neg, NegPerPos: 2}
	want := map[string]float64{"roc_auc": LinkAUC(pos, neg), "ap": AveragePrecision(pos, neg), "mrr": MRR(pos, neg, 2),
		"hits@10": HitsAtK(pos, neg, 10), "hits@50": HitsAtK(pos, neg, 50), "hits@100": HitsAtK(pos, neg, 100)}
	if MRR(pos, neg, 2) == MRR(pos, neg, 0) {
		t.Fatal("the case does not tell per-positive MRR from MRR against all negatives")
	}
	for name, w := range want {
		m, ok := Lookup(name)
		if !ok || !m.Applies(TaskLink) || !m.Logits {
			t.Fatalf("%s: registered %v, applies to link, reads scores: %v %v", name, ok, m.Applies(TaskLink), m.Logits)
		}
		if got := m.Compute(s); got != w {
			t.Errorf("%s = %v, want %v", name, got, w)
		}
	}
}
