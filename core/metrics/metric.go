package metrics

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// Split is what an evaluation metric reads for one split (valid, test):
// the predicted class and the label of every node (indexed by node id),
// the split's nodes, and, where the stepper gives them, the logits of the
// split's nodes (len(Idx) × Classes, row-major, in Idx order; nil
// otherwise). For a multi-label or regression Task, Targets replace
// Pred and Labels (NumNodes × Classes, row-major, indexed by node id)
// and Logits are always given (the model's outputs). For TaskLink the
// split is its node pairs instead: Pos and Neg hold the decoder's scores
// (logits) of the split's positive and of its negative pairs. NegPerPos
// > 0 says Neg holds NegPerPos negatives per positive, positive i's at
// Neg[i*k:(i+1)*k] (k = NegPerPos), and mrr ranks each positive against
// its own negatives (OGB's ogbl-citation2 evaluator); with 0 every
// positive is ranked against all of Neg.
type Split struct {
	Pred, Labels []int32
	Idx          []int32
	Logits       []float64
	Classes      int
	Task         Task
	Targets      []float32
	Pos, Neg     []float64
	NegPerPos    int
}

// Metric is one evaluation metric, registered by name from its own file
// (Register); train.metrics names them.
type Metric struct {
	Name string
	Doc  string // what it measures, for docs and errors
	// Logits: the metric reads Split.Logits, or for TaskLink the pair
	// scores Pos and Neg (steppers without them cannot report it).
	Logits bool
	// Lower: smaller is better (a loss); early stopping then watches for
	// a decrease.
	Lower bool
	// Compute returns the metric of a non-empty split.
	Compute func(s Split) float64
	// Tasks are the tasks the metric applies to (nil: TaskClasses only).
	Tasks []Task
}

// Applies reports whether m applies to task t.
func (m Metric) Applies(t Task) bool {
	if m.Tasks == nil {
		return t == TaskClasses
	}
	return slices.Contains(m.Tasks, t)
}

var registered = map[string]Metric{}

// Register adds a metric; a second metric of the same name panics.
func Register(m Metric) {
	if _, dup := registered[m.Name]; dup || m.Name == "" || m.Compute == nil {
		panic(fmt.Sprintf("metrics: metric %q registered twice, unnamed or without Compute", m.Name))
	}
	registered[m.Name] = m
}

// Lookup returns the metric registered under name.
func Lookup(name string) (Metric, bool) {
	m, ok := registered[name]
	return m, ok
}

// Names returns the registered metrics' names, sorted.
func Names() []string { return slices.Sorted(maps.Keys(registered)) }

// softmaxRow writes the softmax of logits into p (same length), computed
// stably (the row's maximum subtracted first), and returns log Σ exp
// of the shifted logits and the maximum.
func softmaxRow(logits, p []float64) (logSum, maxv float64) {
	maxv = logits[0]
	for _, v := range logits[1:] {
		maxv = max(maxv, v)
	}
	var sum float64
	for j, v := range logits {
		p[j] = math.Exp(v - maxv)
		sum += p[j]
	}
	for j := range p {
		p[j] /= sum
	}
	return math.Log(sum), maxv
}
