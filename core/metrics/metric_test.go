package metrics

import (
	"math"
	"testing"
)

// logRows returns the logits ln p of probability rows: their softmax is p
// itself (up to rounding), so a table of probabilities is a table of
// scores with known ranks.
func logRows(rows ...[]float64) []float64 {
	var out []float64
	for _, r := range rows {
		for _, p := range r {
			out = append(out, math.Log(p))
		}
	}
	return out
}

func seq(n int) []int32 {
	idx := make([]int32, n)
	for i := range idx {
		idx[i] = int32(i)
	}
	return idx
}

// TestMetricsAgainstHandTables checks every metric on small tables whose
// answers were worked out by hand (the comments show the sums).
func TestMetricsAgainstHandTables(t *testing.T) {
	cases := []struct {
		name, metric string
		split        Split
		want         float64
	}{
		// per class F1: 2/(2+1+1), 4/(4+1+0), 2/(2+0+1)
		{"macro_f1 three classes", "macro_f1", Split{Pred: []int32{0, 1, 1, 1, 2, 0}, Labels: []int32{0, 0, 1, 1, 2, 2}, Idx: seq(6), Classes: 3}, (0.5 + 0.8 + 2.0/3) / 3},
		// class 2 only predicted (F1 0) counts, class 3 appears nowhere and does not
		{"macro_f1 predicted-only class", "macro_f1", Split{Pred: []int32{0, 2, 1}, Labels: []int32{0, 0, 1}, Idx: seq(3), Classes: 4}, (2.0/3 + 1 + 0) / 3},
		{"macro_f1 over a subset", "macro_f1", Split{Pred: []int32{1, 0, 1}, Labels: []int32{0, 0, 1}, Idx: []int32{1, 2}, Classes: 2}, 1},
		{"accuracy", "accuracy", Split{Pred: []int32{0, 1, 1, 2}, Labels: []int32{0, 0, 1, 2}, Idx: []int32{0, 1, 3}, Classes: 3}, 2.0 / 3},
		// -ln(3/4) and ln 2
		{"loss", "loss", Split{Labels: []int32{1, 0}, Idx: seq(2), Logits: []float64{0, math.Log(3), 2, 2}, Classes: 2}, (-math.Log(0.75) + math.Log(2)) / 2},
		// positives 0.8, 0.4, 0.4 against negatives 0.4, 0.1: (1+1 + .5+1 + .5+1)/6
		{"roc_auc binary with ties", "roc_auc", Split{Labels: []int32{1, 1, 1, 0, 0}, Idx: seq(5), Classes: 2,
			Logits: logRows([]float64{0.2, 0.8}, []float64{0.6, 0.4}, []float64{0.6, 0.4}, []float64{0.6, 0.4}, []float64{0.9, 0.1})}, 5.0 / 6},
		// class 0: n0 beats 3, n3 ties n1 and beats n2: 4.5/6; class 1: 3.5/4; class 2: 6/6
		{"roc_auc one-vs-rest", "roc_auc", Split{Labels: []int32{0, 1, 2, 0, 2}, Idx: seq(5), Classes: 3,
			Logits: logRows([]float64{0.6, 0.3, 0.1}, []float64{0.2, 0.5, 0.3}, []float64{0.1, 0.3, 0.6}, []float64{0.2, 0.5, 0.3}, []float64{0.3, 0.3, 0.4})}, (0.75 + 0.875 + 1) / 3},
		// class 2 has no positives and is left out: class 0 2/2, class 1 1.5/2
		{"roc_auc class without positives", "roc_auc", Split{Labels: []int32{0, 1, 1}, Idx: seq(3), Classes: 3,
			Logits: logRows([]float64{0.5, 0.3, 0.2}, []float64{0.2, 0.5, 0.3}, []float64{0.3, 0.4, 0.3})}, (1 + 1) / 2.0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, ok := Lookup(c.metric)
			if !ok {
				t.Fatalf("metric %q not registered (have %v)", c.metric, Names())
			}
			got := m.Compute(c.split)
			// a few roundings of values of order 1 (ln, exp, a sum of n terms)
			if tol := 64 * 0x1p-52; math.Abs(got-c.want) > tol {
				t.Errorf("%s = %.17g, want %.17g", c.metric, got, c.want)
			}
		})
	}
}

func TestROCAUCWithoutBothKindsIsNaN(t *testing.T) {
	m, _ := Lookup("roc_auc")
	s := Split{Labels: []int32{1, 1}, Idx: seq(2), Classes: 2, Logits: []float64{0, 1, 0, 2}}
	if got := m.Compute(s); !math.IsNaN(got) {
		t.Errorf("roc_auc of positives only = %v, want NaN", got)
	}
}

func TestRegisterRefusesDuplicates(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a second metric named accuracy was registered")
		}
	}()
	Register(Metric{Name: "accuracy", Compute: func(Split) float64 { return 0 }})
}
