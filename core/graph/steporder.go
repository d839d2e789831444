package graph

// StepOrder orders the rows of a CSR for stepping through every row's
// entries in lock step, as an LSTM over each node's neighbours does: order
// lists the rows by degree, descending (ties by row id), and rank is its
// inverse. The rows with more than t entries are then a prefix of order,
// of off[t+1]-off[t] rows; off (max degree + 1 entries) is its prefix sum,
// the position of step t in step-major storage.
func StepOrder(indptr []int64) (order, rank, off []int64) {
	rows := len(indptr) - 1
	maxDeg := int64(0)
	for i := range rows {
		maxDeg = max(maxDeg, indptr[i+1]-indptr[i])
	}
	// Counting sort by degree, descending and stable.
	start := make([]int64, maxDeg+2)
	for i := range rows {
		start[maxDeg-(indptr[i+1]-indptr[i])+1]++
	}
	for d := int64(1); d < int64(len(start)); d++ {
		start[d] += start[d-1]
	}
	order, rank = make([]int64, rows), make([]int64, rows)
	for i := range int64(rows) {
		k := maxDeg - (indptr[i+1] - indptr[i])
		order[start[k]], rank[i] = i, start[k]
		start[k]++
	}
	// n_t = rows of degree > t, a prefix of order; off is its prefix sum.
	off = make([]int64, maxDeg+1)
	n := int64(rows)
	for t := int64(0); t < maxDeg; t++ {
		for n > 0 && indptr[order[n-1]+1]-indptr[order[n-1]] <= t {
			n--
		}
		off[t+1] = off[t] + n
	}
	return order, rank, off
}

// Steps is the off of StepOrder: step t covers positions
// [Steps[t], Steps[t+1]) of step-major storage.
type Steps []int64

// Len returns the number of steps (the maximum degree).
func (s Steps) Len() int { return len(s) - 1 }

// Rows returns the number of rows still running at step t (0 past the
// end).
func (s Steps) Rows(t int) int {
	if t < 0 || t+1 >= len(s) {
		return 0
	}
	return int(s[t+1] - s[t])
}
