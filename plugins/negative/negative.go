// Package negative holds negative samplers for link prediction: modules
// of the "negative" registry namespace (core/negative), one file each.
// Every module is a one-pair draw (negative.Drawer) on the base
// (negative.Base), which checks the graph and the positives, gives each
// positive its own random stream (so the pairs depend only on the seed,
// the positive's index and its endpoints) and, with exclude_positives,
// redraws negatives that are edges of the training graph or self loops.
// Every module declares the law of its draws (negative.Describer), which
// the conformance suite core/negative/negativetest checks by a chi-square
// test.
package negative

// uniformP returns the uniform distribution over n nodes.
func uniformP(n int) []float64 {
	p := make([]float64, n)
	for v := range p {
		p[v] = 1 / float64(n)
	}
	return p
}
