package metrics

import "math"

// Task is what a split's nodes are scored against.
type Task uint8

const (
	// TaskClasses: one class label per node.
	TaskClasses Task = iota
	// TaskMultiLabel: Classes independent 0/1 targets per node, scored
	// from logits (positive at logit ≥ 0, probability σ(logit)).
	TaskMultiLabel
	// TaskRegression: Classes real-valued targets per node.
	TaskRegression
	// TaskLink: link prediction, the decoder's scores of a split's
	// positive and negative node pairs (Split.Pos, Neg, NegPerPos).
	TaskLink
)

// String names the task as docs and errors do.
func (t Task) String() string {
	return [...]string{"classes", "multi-label", "regression", "link"}[t]
}

// eachTarget calls fn with the logit (output) and the target of every
// element of the split's rows, row by row: column j, row k of Idx.
func (s Split) eachTarget(fn func(j int, out, target float64)) {
	c := s.Classes
	for k, i := range s.Idx {
		for j := range c {
			fn(j, s.Logits[k*c+j], float64(s.Targets[int(i)*c+j]))
		}
	}
}

// perLabel is the unweighted mean over the label columns of fn's value
// for each column that has one (not NaN); NaN when none has.
func perLabel(c int, fn func(j int) float64) float64 {
	var sum float64
	m := 0
	for j := range c {
		if v := fn(j); !math.IsNaN(v) {
			sum += v
			m++
		}
	}
	if m == 0 {
		return math.NaN()
	}
	return sum / float64(m)
}
