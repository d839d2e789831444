package sampling

// SetDenseMapLimit sets the node count above which the base relabels
// through its hash map, and returns the function that restores it.
func SetDenseMapLimit(n int) (restore func()) {
	old := denseMapLimit
	denseMapLimit = n
	return func() { denseMapLimit = old }
}
