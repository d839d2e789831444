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
	cases = append(cases, targetTables()...)
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

// targetTables are the hand tables of multi-label and regression
// targets. Multi-label: nodes 0..2, targets [1 0] [0 1] [1 1], logits [2
// −1] [−0.5 0.5] [0.3 −2] (predicted [1 0] [0 1] [1 0]).
func targetTables() []struct {
	name, metric string
	split        Split
	want         float64
} {
	ml := Split{Idx: seq(3), Classes: 2, Task: TaskMultiLabel, Targets: []float32{1, 0, 0, 1, 1, 1}, Logits: []float64{2, -1, -0.5, 0.5, 0.3, -2}}
	sp := func(x float64) float64 { return math.Log1p(math.Exp(x)) } // BCE is softplus(−x) at y = 1, softplus(x) at y = 0
	// one column, targets 1 2 3 4, outputs 1.5 2 2.5 5: ȳ = 2.5, SS_tot = 5, SS_res = 1.5
	reg := Split{Idx: seq(4), Classes: 1, Task: TaskRegression, Targets: []float32{1, 2, 3, 4}, Logits: []float64{1.5, 2, 2.5, 5}}
	// node 1 only, of targets [0 1] [1 0]: a subset in Idx order
	sub := Split{Idx: []int32{1}, Classes: 2, Task: TaskMultiLabel, Targets: []float32{0, 1, 1, 0}, Logits: []float64{0.5, 0.5}}
	return []struct {
		name, metric string
		split        Split
		want         float64
	}{
		// 2 + 2 + 1 of 6 node-label pairs right
		{"multi-label accuracy", "accuracy", ml, 5.0 / 6},
		{"multi-label accuracy of a subset", "accuracy", sub, 0.5},
		// label 0: TP 2, F1 1; label 1: TP 1, FN 1, F1 2/3
		{"multi-label macro_f1", "macro_f1", ml, (1 + 2.0/3) / 2},
		// label 0: positives 2, 0.3 above the negative −0.5: 1; label 1: of 0.5, −2 one above −1: 1/2
		{"multi-label roc_auc", "roc_auc", ml, 0.75},
		// label 1 is positive on every node: no area, left out; label 0: positives 2, 0.3 above −0.5
		{"multi-label roc_auc without a label's negatives", "roc_auc", Split{Idx: seq(3), Classes: 2, Task: TaskMultiLabel,
			Targets: []float32{1, 1, 0, 1, 1, 1}, Logits: []float64{2, -1, -0.5, 0.5, 0.3, -2}}, 1},
		{"multi-label loss", "loss", ml, (sp(-2) + sp(-1) + sp(-0.5) + sp(-0.5) + sp(-0.3) + sp(2)) / 6},
		{"r2", "r2", reg, 1 - 1.5/5},
		{"mse", "mse", reg, 1.5 / 4},
		{"regression loss", "loss", reg, 1.5 / 4},
		// column 0: targets 0 2, outputs 0 1: 1 − 1/2; column 1 constant 3, predicted exactly: 1
		{"r2 mean over columns, constant column exact", "r2", Split{Idx: seq(2), Classes: 2, Task: TaskRegression, Targets: []float32{0, 3, 2, 3}, Logits: []float64{0, 3, 1, 3}}, 0.75},
		// column 1 constant 3, predicted 4 and 3: 0 (scikit-learn's force_finite)
		{"r2 constant column missed", "r2", Split{Idx: seq(2), Classes: 2, Task: TaskRegression, Targets: []float32{0, 3, 2, 3}, Logits: []float64{0, 4, 1, 3}}, 0.25},
	}
}

func TestROCAUCWithoutBothKindsIsNaN(t *testing.T) {
	m, _ := Lookup("roc_auc")
	s := Split{Labels: []int32{1, 1}, Idx: seq(2), Classes: 2, Logits: []float64{0, 1, 0, 2}}
	if got := m.Compute(s); !math.IsNaN(got) {
		t.Errorf("roc_auc of positives only = %v, want NaN", got)
	}
}

// TestMetricTasks: each metric applies to the tasks whose splits it
// reads.
func TestMetricTasks(t *testing.T) {
	want := map[string][]bool{ // classes, multi-label, regression, link
		"accuracy": {true, true, false, false}, "loss": {true, true, true, false}, "macro_f1": {true, true, false, false},
		"roc_auc": {true, true, false, true}, "r2": {false, false, true, false}, "mse": {false, false, true, false},
		"ap": {false, false, false, true}, "mrr": {false, false, false, true}, "hits@10": {false, false, false, true},
		"hits@50": {false, false, false, true}, "hits@100": {false, false, false, true},
	}
	for name, w := range want {
		m, _ := Lookup(name)
		for task, applies := range w {
			if m.Applies(Task(task)) != applies {
				t.Errorf("%s applies to %v: %v, want %v", name, Task(task), !applies, applies)
			}
		}
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
